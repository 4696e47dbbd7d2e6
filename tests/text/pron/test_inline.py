"""The inline syntax, whole or split across tokens anywhere: the same overrides, never half
read; escapes; braces that open no override are text; problems placed in the text as sent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.text.pron.inline import InlineParser, Override, Piece, Plain, Problem
from emostream.text.pron.spec import IPA, PINYIN, RESPELLING, Pron
from emostream.text.pron.wire import Pin


def read(*pieces: str, final: bool = True) -> list[Piece]:
    parser = InlineParser()
    out: list[Piece] = []
    for piece in pieces:
        out += parser.feed(piece)
    return out + parser.flush(final=final)


def merged(pieces: list[Piece]) -> list[Piece]:
    """Consecutive plain stretches joined (how a text was split into tokens aside)."""
    out: list[Piece] = []
    for p in pieces:
        if out and isinstance(p, Plain) and isinstance(out[-1], Plain):
            last = out.pop()
            assert isinstance(last, Plain)
            p = Plain(last.raw + p.raw, last.text + p.text)
        out.append(p)
    return out


TEXT = "我在银{行|xing2}工作, {Nguyen|/wɪn/} and {Siobhan|shiv awn}; \\{a|b} {x}"
WANT: list[Piece] = [
    Plain("我在银", "我在银"),
    Override("{行|xing2}", Pin("行", Pron(PINYIN, "xing2"))),
    Plain("工作, ", "工作, "),
    Override("{Nguyen|/wɪn/}", Pin("Nguyen", Pron(IPA, "wˈɪn"))),
    Plain(" and ", " and "),
    Override("{Siobhan|shiv awn}", Pin("Siobhan", Pron(RESPELLING, "shiv awn"))),
    Plain("; ", "; "),
    Plain("\\{", "{"),
    Plain("a|b} {x}", "a|b} {x}"),
]


def test_whole() -> None:
    assert read(TEXT) == WANT


@pytest.mark.parametrize("cut", range(1, len(TEXT)))
def test_split_anywhere_reads_the_same(cut: int) -> None:
    assert merged(read(TEXT[:cut], TEXT[cut:])) == merged(WANT)


def test_one_token_per_character() -> None:
    assert merged(read(*TEXT)) == merged(WANT)


def test_an_open_override_is_held_not_spoken() -> None:
    parser = InlineParser()
    assert parser.feed("银{行|ha") == [Plain("银", "银")]
    assert parser.holding
    assert parser.flush(final=False) == []  # a flush: still held, it may close
    assert parser.feed("ng2}长") == [Override("{行|hang2}", Pin("行", Pron(PINYIN, "hang2"))),
                                     Plain("长", "长")]  # fmt: skip
    assert not parser.holding


def test_braces_without_a_bar_are_text() -> None:
    text = 'say {"a": 1} and {hello} {'
    assert merged(read(text)) == [Plain(text, text)]
    parser = InlineParser()
    assert parser.feed("{hello") == []  # undecided yet
    assert parser.feed("\n") == [Plain("{hello\n", "{hello\n")]  # a line break: no override


def test_a_long_brace_is_released() -> None:
    text = "{" + "x" * 80
    assert InlineParser().feed(text) == [Plain(text, text)]  # longer than a word may be


def test_escapes() -> None:
    assert read("a\\\\b \\x") == [Plain("a", "a"), Plain("\\\\", "\\"), Plain("b \\x", "b \\x")]
    assert read("\\", "{行|hang2}") == [Plain("\\{", "{"), Plain("行|hang2}", "行|hang2}")]


def test_a_bad_override_is_read_as_its_word_and_named() -> None:
    out = read("ok {行|hang7} go")
    assert out[1] == Problem("bad_pronunciation",
                             "pronunciation '{行|hang7}': tone 7 of 'hang7' is not 1-5 "
                             "(5: neutral)", "{行|hang7}", 3, 12)  # fmt: skip
    assert out[2] == Plain("{行|hang7}", "行")
    assert "".join(p.raw for p in out if not isinstance(p, Problem)) == "ok {行|hang7} go"


def test_unterminated_at_the_end() -> None:
    out = read("a {行|hang2")
    assert isinstance(out[1], Problem) and "no closing }" in out[1].message
    assert out[1].start == 2 and out[2] == Plain("{行|hang2", "{行|hang2")
    assert merged(read("a {b")) == [Plain("a {b", "a {b")]  # no bar: a brace, no problem


def test_two_bars() -> None:
    out = read("{a|b|c}")
    assert isinstance(out[0], Problem) and "one | per override" in out[0].message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}|\\/行银a2 ɪ\nxn", max_size=60), st.lists(st.integers(1, 8), max_size=20))
def test_any_text_any_split(text: str, steps: list[int]) -> None:
    """Whatever the text and however it is split: nothing lost (the pieces' raw text is the
    text), nothing crashes, and the reading is the whole text's."""
    whole = read(text)
    assert "".join(p.raw for p in whole if not isinstance(p, Problem)) == text
    pieces, i = [], 0
    for step in steps:
        pieces.append(text[i : i + step])
        i += step
    pieces.append(text[i:])
    split = read(*pieces)
    assert merged([p for p in split if not isinstance(p, Problem)]) == merged(
        [p for p in whole if not isinstance(p, Problem)]
    )
    assert [p.span for p in split if isinstance(p, Problem)] == [
        p.span for p in whole if isinstance(p, Problem)
    ]
