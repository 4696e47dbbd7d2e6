"""Overrides reach the model as its own units: a pinyin pin flips a polyphone's reading (the
units of the syllable given, by the Mandarin front end's path), an IPA pin is its units, a
respelling reads as that spelling; the words around keep their readings."""

from __future__ import annotations

from functools import cache

import pytest

from emostream.text.phonemes import G2P, PhonemeSequence
from emostream.text.pron.spec import read_inline
from emostream.text.pron.wire import Pin
from emostream.voices.words import safe_align


@cache
def g2p() -> G2P:
    return G2P()


def pin(word: str, text: str) -> str:
    return Pin(word, read_inline(word, text)).wire()


def said(seq: PhonemeSequence) -> list[tuple[str, int]]:
    """(unit, tone) of the spoken units (boundaries and word spaces left out)."""
    return [(u.symbol, u.tone) for u in seq.units if u.symbol not in ("^", "$", " ")]


def syllable(pinyin: str) -> list[tuple[str, int]]:
    """The units the Mandarin path gives one toned syllable."""
    return [(u.symbol, u.tone) for u in g2p()._syllable(pinyin)]


@pytest.mark.parametrize(
    ("before", "char", "after", "default", "flipped"),
    [
        ("我在银", "行", "工作", "hang2", "xing2"),  # 银行: yín háng
        ("他是", "行", "长", "hang2", "xing2"),  # 行长: háng zhǎng
        ("我们", "行", "动", "xing2", "hang2"),
        ("他", "长", "大了", "zhang3", "chang2"),  # 长大: zhǎng dà
        ("头发很", "长", "", "chang2", "zhang3"),
        ("", "重", "新开始", "chong2", "zhong4"),  # 重新: chóng xīn
        ("这个很", "重", "要", "zhong4", "chong2"),  # 重要: zhòng yào
    ],
)
def test_pinyin_flips_a_polyphone(before: str, char: str, after: str, default: str,
                                  flipped: str) -> None:  # fmt: skip
    plain = said(g2p()(before + char + after))
    pinned = said(g2p()(before + pin(char, flipped) + after))
    k = len(said(g2p()(before))) if before else 0
    assert plain[k : k + len(syllable(default))] == syllable(default)  # the front end's reading
    assert pinned[k : k + len(syllable(flipped))] == syllable(flipped)  # the pin's
    # the words around keep their readings (their tones may follow the pinned one: 很 before
    # a third tone is hén)
    assert [u for u, _ in plain[:k]] == [u for u, _ in pinned[:k]]
    tail = len(said(g2p()(after))) if after else 0
    assert [u for u, _ in plain[len(plain) - tail :]] == [u for u, _ in pinned[len(pinned) - tail :]]


def test_a_pinned_word_and_the_rules() -> None:
    # the written tone is said: no third-tone sandhi on a pinned syllable ...
    assert said(g2p()(pin("你好", "ni3 hao3")))[:2] == syllable("ni3")
    assert said(g2p()("你好"))[:2] == syllable("ni2")
    # ... nor a neutral tone; the syllable after still sees the pinned tone
    assert said(g2p()("桌" + pin("子", "zi3")))[2:] == syllable("zi3")
    assert said(g2p()("桌子"))[2:] == syllable("zi5")


def test_ipa_is_its_units() -> None:
    seq = g2p()("Hello " + pin("Nguyen", "/wɪn/") + "!")
    assert [u.symbol for u in seq.units] == list("^həlˈoʊ wˈɪn!$")
    assert g2p()("Hello Nguyen!").symbols != seq.symbols


def test_a_respelling_reads_as_that_spelling() -> None:
    assert g2p()("Call " + pin("Siobhan", "shiv awn") + ".").symbols == g2p()("Call shiv awn.").symbols


def test_english_in_mandarin() -> None:
    seq = g2p()("我叫" + pin("Nguyen", "/wɪn/") + "。")
    english = [u.symbol for u in seq.units if not u.symbol.startswith("zh:")]
    assert [u for u in english if u not in ("^", "$", " ", ".")] == list("wˈɪn")


def test_word_timestamps_name_the_word_as_written() -> None:
    wired = "Hello " + pin("Nguyen", "/wɪn/") + " and " + pin("银行", "yin2 xing2")
    seq = g2p()(wired)
    words = safe_align(wired, seq.symbols, lambda w: g2p()(w).symbols[1:-1])
    assert [w.word.text for w in words] == ["Hello", "Nguyen", "and", "银", "行"]
    nguyen = words[1]
    assert seq.symbols[nguyen.lo : nguyen.hi] == list("wˈɪn")
    xing = words[4]
    assert seq.symbols[xing.lo : xing.hi] == ["zh:x", "zh:ing"]
