"""Word timestamps, the alignment part: written words ↔ the units a voice speaks them with."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import pairwise

import pytest

from emostream.text.phonemes import G2P
from emostream.voices.piper_voice import PiperVoice
from emostream.voices.words import (
    WordUnits,
    align_words,
    is_spoken,
    proportional_words,
    safe_align,
    written_words,
)


@pytest.fixture(scope="module")
def g2p() -> G2P:
    return G2P()


def aligned(g2p: G2P, text: str) -> tuple[list[str], list[WordUnits]]:
    @cache
    def alone(word: str) -> tuple[str, ...]:
        return tuple(g2p(word).symbols[1:-1])

    units = g2p(text).symbols
    return units, align_words(text, units, alone)


def said(units: Sequence[str], w: WordUnits) -> str:
    return "".join(u.removeprefix("zh:") for u in units[w.lo : w.hi] if is_spoken(u))


def check_partition(units: Sequence[str], words: list[WordUnits]) -> None:
    """In order, not overlapping, every spoken unit inside some word's range."""
    for a, b in pairwise(words):
        assert a.hi <= b.lo, (a, b)
    for w in words:
        assert w.lo <= w.hi
    covered = {i for w in words for i in range(w.lo, w.hi)}
    assert {i for i, u in enumerate(units) if is_spoken(u)} <= covered


def test_written_words_keep_offsets_and_the_words_as_written() -> None:
    text = "\"Don't\" pay $3.50 at 9:05, it's 10% off — well-known 我用iPhone拍照，2026年!"
    words = written_words(text)
    assert [w.text for w in words] == [
        "Don't", "pay", "$3.50", "at", "9:05", "it's", "10%", "off", "well-known",
        "我", "用", "iPhone", "拍", "照", "2026", "年",
    ]  # fmt: skip
    assert all(text[w.start : w.end] == w.text for w in words)
    assert written_words("— … ，。") == []


def test_english_words_get_their_own_phonemes(g2p: G2P) -> None:
    text = "Hello there, this is EmoStream."
    units, words = aligned(g2p, text)
    assert [w.word.text for w in words] == ["Hello", "there", "this", "is", "EmoStream"]
    assert [said(units, w) for w in words] == ["həlˈoʊ", "ðˈɛɹ", "ðɪs", "ɪz", "ɪmˈoʊstɹˈiːm"]
    check_partition(units, words)


def test_words_espeak_joins_are_split_and_numbers_keep_their_reading(g2p: G2P) -> None:
    # espeak says "out of" as one word (ˌaʊɾəv); the year after "in" is read "twenty twenty-six"
    # in the sentence but "two thousand twenty-six" alone: each still gets its own stretch.
    units, words = aligned(g2p, "Out of the way, I'm going at 9:05 in 2026.")
    got = {w.word.text: said(units, w) for w in words}
    assert got["Out"].startswith("ˌaʊ") and got["of"].endswith("v")
    assert got["9:05"] == "nˈaɪnˈoʊfˈaɪv"
    assert got["2026"] == "twˈɛntitwˈɛntisˈɪks"
    assert got["in"] == "ɪn"
    check_partition(units, words)


def test_mandarin_one_word_per_character_in_order(g2p: G2P) -> None:
    text = "我们一起去玩儿吧！女儿在家里。"
    units, words = aligned(g2p, text)
    assert "".join(w.word.text for w in words) == "我们一起去玩儿吧女儿在家里"
    got = [said(units, w) for w in words]
    # Erhua: the 儿 of 玩儿 is the rhotic of the syllable before it; 女儿's 儿 is a syllable.
    assert got[5:7] == ["uan", "_r"]
    assert got[8:10] == ["nv", "er"]
    assert all(got), got
    check_partition(units, words)


def test_mixed_script_and_mandarin_numbers(g2p: G2P) -> None:
    units, words = aligned(g2p, "我用iPhone拍照，2026年8点见。")
    got = {w.word.text: said(units, w) for w in words}
    assert got["iPhone"] == "ˈaɪfˈoʊn"
    assert got["2026"] == "erlingerliou"  # 二零二六, read in context
    assert got["年"] == "nian" and got["8"] == "ba" and got["点"] == "dian"
    check_partition(units, words)


def test_words_without_units_and_fallbacks() -> None:
    units = ["^", "a", "b", " ", "c", "d", "$"]
    # Nothing spoken alone: the units are shared by written length.
    words = align_words("xx yy", units, lambda w: ())
    assert [(w.lo, w.hi) for w in words] == [(1, 3), (4, 6)]
    assert proportional_words("xx yy", units) == words
    # A word the front end cannot say gets an empty range where it falls.
    words = align_words("ab zz cd", units, lambda w: tuple(w) if w != "zz" else ())
    assert [(w.lo, w.hi) for w in words] == [(1, 3), (3, 3), (4, 6)]
    # No spoken unit at all.
    assert [(w.lo, w.hi) for w in align_words("ab", ["^", "$"], tuple)] == [(0, 0)]

    def broken(word: str) -> tuple[str, ...]:
        raise RuntimeError("front end failed")

    assert safe_align("xx yy", units, broken) == proportional_words("xx yy", units)


def test_piper_voice_times_words_from_its_phoneme_ids(joe: PiperVoice) -> None:
    from emostream.voices.base import Controls, WordTimedVoice

    assert isinstance(joe, WordTimedVoice) and joe.info.word_timestamps
    text = "Out of the way, it's nine o'clock."
    latent = joe.acoustic(text, Controls())
    words = joe.word_units(text, latent)
    assert [w.word.text for w in words] == ["Out", "of", "the", "way", "it's", "nine", "o'clock"]
    check_partition(latent.units, words)
    assert all(w.hi > w.lo for w in words)
    assert said(latent.units, words[3]) == "wˈeɪ"
