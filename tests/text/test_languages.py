"""A segment cut where its language changes, and the language each piece is read in."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.text.context import Segment, spoken_text
from emostream.text.frontend import TextFrontEnd
from emostream.text.languages import (
    language_runs,
    right_context,
    segment_language,
    split_languages,
)


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("Hello there.", [("en", "Hello there.")]),
        ("你好，今天怎么样？", [("zh", "你好，今天怎么样？")]),
        ("666", [("en", "666")]),  # digits alone: as the front end reads them
        ("今天是2026年", [("zh", "今天是2026年")]),
        # clause-level switches
        ("主播你好, can you play that song again?",
         [("zh", "主播你好, "), ("en", "can you play that song again?")]),
        ("I just got home, 今天真的好累啊。", [("en", "I just got home, "), ("zh", "今天真的好累啊。")]),
        # a few English words inside Mandarin stay Mandarin
        ("这个 bug 太离谱了", [("zh", "这个 bug 太离谱了")]),
        ("用 ChatGPT API 写代码", [("zh", "用 ChatGPT API 写代码")]),
        ("OK 我知道了", [("zh", "OK 我知道了")]),
        ("我知道了 OK", [("zh", "我知道了 OK")]),
        # ... but not three words, nor a word beside too little Mandarin, nor across a mark
        ("我觉得 this is cool 哈哈", [("zh", "我觉得 "), ("en", "this is cool "), ("zh", "哈哈")]),
        ("I love 火锅", [("en", "I love "), ("zh", "火锅")]),
        ("I think 这个主播 is funny", [("en", "I think "), ("zh", "这个主播 "), ("en", "is funny")]),
        ("I think 这个主播, is funny", [("zh", "I think 这个主播, "), ("en", "is funny")]),
        ("好的, OK 我知道了", [("zh", "好的, OK 我知道了")]),  # OK still touches 我知道了
        ("我知道了。OK", [("zh", "我知道了。"), ("en", "OK")]),
        # Chinese characters inside English are cut out, however few
        ("I love 你 so much", [("en", "I love "), ("zh", "你 "), ("en", "so much")]),
        # digits against a Chinese character, and an opening quote, go with the run after
        ("I bought 3个苹果", [("en", "I bought "), ("zh", "3个苹果")]),
        ("He said “你好” to me.", [("en", "He said "), ("zh", "“你好” "), ("en", "to me.")]),
    ],
)  # fmt: skip
def test_runs(text: str, runs: list[tuple[str, str]]) -> None:
    assert language_runs(text) == runs


def test_a_segment_of_one_language_is_left_as_it_is() -> None:
    for wired in ("Hello there.", "这个 bug 太离谱了", Segment("so", "and ", " we").wire()):
        assert split_languages(wired) == [wired]


def test_a_cut_at_a_mark_has_no_context() -> None:
    pieces = [Segment.parse(p) for p in split_languages("Hello everyone, 大家好！")]
    assert pieces == [Segment("Hello everyone,"), Segment("大家好！")]


def test_a_cut_without_a_mark_gives_each_side_the_words_across_it() -> None:
    pieces = [Segment.parse(p) for p in split_languages("我觉得 this is so cool 哈哈")]
    assert [p.text for p in pieces] == ["我觉得", "this is so cool", "哈哈"]
    assert pieces[0] == Segment("我觉得", "", " this is so")  # three words at most
    assert pieces[1] == Segment("this is so cool", "我觉得 ", " 哈哈")
    assert pieces[2] == Segment("哈哈", "so cool ", "")  # two words before
    for p in pieces:  # what is rendered is the sentence's text there
        assert p.rendered in "我觉得 this is so cool 哈哈"


def test_the_segments_own_context_goes_to_its_first_and_last_pieces() -> None:
    wired = Segment("I love 火锅", "and ", " every").wire()
    first, last = (Segment.parse(p) for p in split_languages(wired))
    assert first.before == "and " and last.after == " every"
    assert first.after == " 火锅" and last.before == "I love "


def test_right_context_stops_at_a_mark() -> None:
    assert right_context("one two, three four") == "one two,"
    assert right_context("one two three four") == "one two three"


@pytest.mark.parametrize(
    "text",
    ["Hello everyone, 大家好！I just got home from work, 今天真的好累啊。这个 bug 太离谱了。",
     "I love 火锅 and 饺子, 你呢? me too 哈哈哈 lol"],
)  # fmt: skip
def test_the_front_end_cuts_only_when_asked(text: str) -> None:
    plain = TextFrontEnd.split(text)
    cut = TextFrontEnd.split(text, languages=True)
    assert len(cut) > len(plain)
    assert {segment_language(s) for s in cut} == {"en", "zh"}
    assert "".join(spoken_text(s) for s in cut).replace(" ", "") == "".join(
        spoken_text(s) for s in plain
    ).replace(" ", "")


_MIXED = st.text(
    alphabet=st.sampled_from(list("ab Z9,.!?“”") + list("你好世界，。") + [" "]), max_size=60
)


@settings(max_examples=300, deadline=None, database=None)
@given(_MIXED)
def test_runs_cover_the_text_and_agree_with_segment_language(text: str) -> None:
    runs = language_runs(text)
    assert "".join(piece for _, piece in runs) == text
    assert all(a != b for (a, _), (b, _) in pairwise(runs))  # merged
    for language, piece in runs:
        assert segment_language(piece) == language
    pieces = split_languages(text.strip()) if text.strip() else []
    assert len(pieces) == len([p for _, p in runs if p.strip()]) or pieces == [text.strip()]
    for wired in pieces:  # each stripped, not empty, of one language
        assert spoken_text(wired) and spoken_text(wired).strip() == spoken_text(wired)
    if len(pieces) > 1:
        assert [segment_language(p) for p in pieces] == [lang for lang, p in runs if p.strip()]
