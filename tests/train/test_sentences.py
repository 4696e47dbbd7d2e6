"""The training-text grammars: size, determinism, variety, held-out sets, G2P coverage."""

from __future__ import annotations

import random
import re
import warnings
from functools import cache

import pytest

from train import sentences

N = 12_000
HANZI = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")


@cache
def corpus(lang: str) -> tuple[str, ...]:
    return tuple(sentences.generate(lang, N))


@pytest.mark.parametrize("lang", sentences.LANGS)
def test_large_distinct_and_deterministic(lang: str) -> None:
    xs = corpus(lang)
    assert len(xs) == N and len(set(xs)) == N
    assert all(x == x.strip() and x for x in xs)
    assert list(xs[:500]) == sentences.generate(lang, 500)  # a prefix of the same stream
    assert sentences.generate(lang, 300, seed=7) == sentences.generate(lang, 300, seed=7)
    assert sentences.generate(lang, 300, seed=7) != sentences.generate(lang, 300, seed=8)


@pytest.mark.parametrize("lang", sentences.LANGS)
def test_templates_are_many_and_all_fill(lang: str) -> None:
    templates, slots, post = sentences.GRAMMARS[lang]
    assert len(set(templates)) >= 150
    r = random.Random(0)
    for t in templates:
        assert sentences.template_slots(t) <= slots.keys(), t
        for _ in range(3):
            s = post(sentences.expand(t, slots, r))
            assert "{" not in s and "[" not in s and "|" not in s, (t, s)


def test_english_variety_and_categories() -> None:
    xs = corpus("en")
    words = {w.lower() for w in re.findall(r"[A-Za-z]+(?:'[A-Za-z]+)?", " ".join(xs))}
    assert len(words) >= 2500
    n_words = [len(x.split()) for x in xs]
    assert sum(n <= 3 for n in n_words) >= 300  # "Yes!", "Wait, what?"
    assert sum(n >= 20 for n in n_words) >= 200 and max(n_words) <= 40
    assert sum("?" in x for x in xs) >= 1500
    assert sum("!" in x for x in xs) >= 1500
    assert sum(bool(re.search(r"\d", x)) for x in xs) >= 1500
    for pattern in (
        r"\$\d",
        r"\d%",
        r"\d:\d\d",
        r"\b\d+(st|nd|rd|th)\b",
        r"\d\.\d",
        r"\b1[0-9]{3}\b",
    ):
        assert any(re.search(pattern, x) for x in xs), pattern
    for word in ("lol", "gg", "haha", "live", "read", "record", "lead", "can't", "I'm"):
        assert any(
            re.search(rf"(?<![\w']){re.escape(word)}(?![\w'])", x, re.IGNORECASE) for x in xs
        ), word


def test_mandarin_variety_and_categories() -> None:
    xs = corpus("zh")
    assert len({c for x in xs for c in HANZI.findall(x)}) >= 1800
    assert all(HANZI.search(x) for x in xs)
    n_hanzi = [len(HANZI.findall(x)) for x in xs]
    assert sum(n <= 3 for n in n_hanzi) >= 300  # "好的。", "真的吗？"
    assert sum(n >= 35 for n in n_hanzi) >= 200 and max(n_hanzi) <= 65
    assert sum(("？" in x) for x in xs) >= 1500
    assert sum(bool(LATIN.search(x)) for x in xs) >= 300  # English inside Mandarin
    assert sum(bool(re.search(r"\d", x)) for x in xs) >= 800
    text = "\n".join(xs)
    for needle in ("吗？", "呢？", "吧？", "是不是", "好不好", "哈哈哈哈", "666", "儿", "一点儿",
                   "百分之", "比", "块", "点半", "年", "月", "第", "App", "B站", "up主", "PPT",
                   "Wi-Fi", "AI", "OK", "银行", "睡觉", "觉得", "还书", "长大", "重要"):  # fmt: skip
        assert needle in text, needle


@pytest.mark.parametrize("lang", sentences.LANGS)
def test_heldout_sets_are_large_and_never_generated(lang: str) -> None:
    held = sentences.heldout(lang)
    assert len(held) >= 60 and len(set(held)) == len(held)
    assert not set(held) & set(corpus(lang))
    assert not set(held) & set(sentences.generate(lang, 2000, seed=99))  # corpus_cli's seed


def test_generate_filters_heldout_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    first = sentences.generate("en", 5)
    monkeypatch.setattr(sentences, "heldout", lambda lang: [first[0], first[3]])
    filtered = sentences.generate("en", 5)
    assert first[0] not in filtered and first[3] not in filtered
    assert filtered[:2] == [first[1], first[2]]


def test_zh_int() -> None:
    cases = {
        0: "零", 2: "二", 10: "十", 12: "十二", 20: "二十", 105: "一百零五", 110: "一百一十",
        1005: "一千零五", 1050: "一千零五十", 2000: "两千", 10500: "一万零五百",
        12000: "一万两千", 20000: "两万",
    }  # fmt: skip
    for n, s in cases.items():
        assert sentences.zh_int(n) == s
    assert sentences.zh_int(2, liang=True) == "两"
    assert sentences.zh_int(200, liang=True) == "两百"


@pytest.mark.parametrize("lang", sentences.LANGS)
def test_g2p_reads_a_sample(lang: str) -> None:
    """Every sampled sentence gives units; Mandarin without Latin letters stays Mandarin."""
    pytest.importorskip("piper")
    pytest.importorskip("pypinyin")
    pytest.importorskip("jieba")
    from emostream.text.phonemes import G2P, LANG_EN

    g2p = G2P()
    sample = random.Random(1).sample(corpus(lang), 300) + sentences.heldout(lang)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for text in sample:
            seq = g2p(text)
            assert len(seq.units) >= 3, text
            if lang == "zh" and not LATIN.search(text):
                assert all(u.lang != LANG_EN for u in seq.units), text
