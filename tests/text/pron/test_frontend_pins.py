"""Overrides through the text front end: a pin per override in its segment, never cut (text
whole or token by token, word-paced first segment or not), located and shown as the word; a
dictionary's words pinned in every stream that names it; problems reported, the rest spoken."""

from __future__ import annotations

import random
import re

import pytest

from emostream.text.context import spoken_text
from emostream.text.frontend import OverrideRefused, TextFrontEnd
from emostream.text.normalize import normalize
from emostream.text.pieces import best_cut, fit_pieces
from emostream.text.pron.lexicon import Lexicon, parse_entries
from emostream.text.pron.reader import PronunciationSetup
from emostream.text.pron.spec import KINDS, RESPELLING
from emostream.text.pron.wire import CLOSE, OPEN, PIN_RE, display_text, wired_slice
from emostream.text.splitter import Segmenter

SETUP = PronunciationSetup()
TEXT = ("我在银{行|xing2}工作，他是{行长|hang2 zhang3}。Then {Nguyen|/wɪn/} said hello to "
        "{Siobhan|shiv awn} and everyone in the room laughed, {长|chang2}大了。")  # fmt: skip


def tokens(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        step = rng.randint(1, 4)
        out.append(text[i : i + step])
        i += step
    return out


def run(pieces: list[str], *, words: bool = True, setup: PronunciationSetup = SETUP,
        locate: bool = False) -> tuple[TextFrontEnd, list[str]]:  # fmt: skip
    front = TextFrontEnd(segmenter=Segmenter(words=words), pronunciation=setup, locate=locate)
    out: list[str] = []
    for piece in pieces:
        out += front.feed(piece)
    return front, out + front.flush()


def whole_pins(segment: str) -> list[str]:
    """The pins of a segment, each checked whole (as many opens as closes as pins)."""
    found = PIN_RE.findall(segment)
    assert segment.count(OPEN) == segment.count(CLOSE) == len(found), segment
    return [m[0] for m in found]


def test_whole_text() -> None:
    front, segments = run([TEXT])
    assert not front.problems
    shown = [display_text(spoken_text(s)) for s in segments]
    written = normalize(re.sub(r"\{([^|]*)\|[^}]*\}", r"\1", TEXT))
    assert "".join(shown).replace(" ", "") == written.replace(" ", "")  # as written, no markup
    pins = [p for s in segments for p in whole_pins(spoken_text(s))]
    assert pins == ["行", "行长", "Nguyen", "Siobhan", "长"]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("words", [True, False])
def test_token_streams_never_cut_a_pin(seed: int, words: bool) -> None:
    front, segments = run(tokens(TEXT, seed), words=words)
    assert not front.problems
    spoken = [spoken_text(s) for s in segments]
    assert [p for s in spoken for p in whole_pins(s)] == ["行", "行长", "Nguyen", "Siobhan", "长"]
    # a segment's context (the words around a cut) is never half a pin either
    for s in segments:
        for part in s.split("\ufdd0") + s.split("\ufdd1"):
            whole_pins(part)


def test_located_as_written() -> None:
    text = "Hello {Nguyen|/wɪn/}, nice to meet you."
    front, segments = run([text], words=False, locate=True)
    source = front.locate(segments[0])
    shown = display_text(spoken_text(segments[0]))
    start = shown.index("Nguyen")
    at, end, written = source.span(start, start + len("Nguyen"))
    assert written == "Nguyen" and text[at:end] == "Nguyen"


def test_a_bad_override_is_reported_and_its_word_spoken() -> None:
    front, segments = run(["Tell {Nguyen|/ʀ/} hi. ", "Bye."], words=False)
    (problem,) = front.take_problems()
    assert problem.code == "bad_pronunciation" and problem.span == "{Nguyen|/ʀ/}"
    assert problem.start == 5 and "'ʀ'" in problem.message
    assert [display_text(s) for s in segments] == ["Tell Nguyen hi.", "Bye."]
    assert not front.take_problems()  # each reported once
    with pytest.raises(OverrideRefused, match="ʀ"):
        TextFrontEnd.split("Tell {Nguyen|/ʀ/} hi.", pronunciation=SETUP)


def test_a_kind_the_voice_lacks() -> None:
    setup, dropped = PronunciationSetup(
        lexicon=Lexicon(parse_entries([{"word": "行", "pinyin": "xing2"},
                                       {"word": "Siobhan", "respelling": "shiv awn"}])),
    ).for_voice("joe", (RESPELLING,))  # fmt: skip
    assert dropped == ["pinyin"]
    front, segments = run(["{行|hang2} and {Nguyen|win} and 行 and Siobhan."], setup=setup)
    (problem,) = front.problems
    assert problem.code == "unsupported_control" and problem.span == "{行|hang2}"
    assert "voice 'joe' does not take pinyin" in problem.message and problem.start == 0
    pins = [p for s in segments for p in whole_pins(spoken_text(s))]
    assert pins == ["Nguyen", "Siobhan"]  # the respellings only


def test_off_reads_braces_as_text() -> None:
    front, segments = run(["{行|hang2} ok."], setup=PronunciationSetup(inline=False))
    assert segments == ["{行|hang2} ok."] and not front.problems
    _, plain = run(["{行|hang2} ok."], setup=PronunciationSetup(inline=False))
    assert TextFrontEnd.split("{行|hang2} ok.") == plain  # no setup: as before


def test_a_dictionary_pins_every_stream_that_names_it() -> None:
    lexicon = Lexicon(parse_entries([{"word": "Nguyen", "ipa": "/wɪn/"}]))
    setup = PronunciationSetup(lexicon=lexicon, kinds=frozenset(KINDS))
    one = run(["Ask Nguyen."], setup=setup)[1]
    two = run(list("Is NGUYEN here?"), setup=setup)[1]  # another stream, token by token
    assert whole_pins(one[0]) == ["Nguyen"] and whole_pins(spoken_text(two[0])) == ["NGUYEN"]
    assert PIN_RE.search(one[0]).group(3) == PIN_RE.search(two[0]).group(3) == "wˈɪn"  # type: ignore[union-attr]
    assert run(["Ask Nguyen."])[1] == ["Ask Nguyen."]  # a stream that names none


def test_pieces_never_cut_a_pin() -> None:
    text = run(["{银行|yin2 hang2}" * 30 + "。"], words=False)[1][0]
    for k in range(1, 31):  # no space, no hanzi outside the pins: a cut between two pins
        some = text[: k * len(text) // 30]
        some = some[: some.rfind(CLOSE) + 1]
        cut = best_cut(some)
        if cut is not None:
            whole_pins(some[:cut])
            whole_pins(some[cut:])
    assert best_cut(run(["{New York|noo york}."], words=False)[1][0]) not in range(1, 20)
    pieces = fit_pieces(text, lambda p: len(display_text(p)), 7)
    assert len(pieces) > 5 and "".join(pieces) == text
    for piece in pieces:
        assert whole_pins(piece)


def test_wired_slice() -> None:
    wired = run(["我在{银行|yin2 hang2}。"], words=False)[1][0]
    assert display_text(wired) == "我在银行。"
    assert display_text(wired_slice(wired, 3, 4)) == "行"
    assert whole_pins(wired_slice(wired, 3, 4)) == ["行"]
    assert PIN_RE.search(wired_slice(wired, 3, 4)).group(3) == "hang2"  # type: ignore[union-attr]
