"""The text front end's one entry (normalise, segment, locate) gives what its parts give."""

from __future__ import annotations

import random

import pytest

from emostream.text import handles
from emostream.text.frontend import TextFrontEnd, TextMap
from emostream.text.normalize import normalize
from emostream.text.splitter import Segmenter

TEXTS = [
    "",
    "   ",
    "\n\n",
    "Hello there, how are you today? I'm fine.",
    "thanks @nightowl99 for the sub!! xXSniperXx just raided 😂😂 #TeamBlue",
    "Tom & Jerry... went to the U.S. on 3.14 at 5pm; ~20 minutes later: done",
    "感谢@nightowl99的关注！今天我们来聊聊天。好吗？",
    "ＡＢＣ１２３ I <3 you\u200b\tand\u3000more",
    "word " * 200,
]


def _old_split(text: str) -> list[str]:
    """What the HTTP route and one-shot synthesis did before (``split_text``)."""
    seg = Segmenter()
    return seg.feed(normalize(text)) + seg.flush()


def _pieces(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        step = rng.randint(1, 9)
        out.append(text[i : i + step])
        i += step
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_split_is_normalise_then_segment(text: str) -> None:
    assert TextFrontEnd.split(text) == _old_split(text)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_feed_piece_by_piece_as_the_protocol_did(text: str, seed: int) -> None:
    """The WebSocket protocol's former steps: normalise a piece unless it is whitespace
    alone, count its characters, segment; flush at the end."""
    seg, chars, want = Segmenter(), 0, []
    front, got = TextFrontEnd(), []
    for piece in _pieces(text, seed):
        norm = normalize(piece) if piece.strip() else piece
        chars += len(norm)
        want += seg.feed(norm)
        assert front.normalize(piece) == norm
        got += front.feed(piece)
        assert front.chars == chars
    want += seg.flush()
    got += front.flush()
    assert got == want
    assert front.emitted == seg.emitted == len(want)


def test_feed_takes_the_normalised_text_given() -> None:
    front = TextFrontEnd()
    assert front.feed("Tom & Jerry. ", "Tom and Jerry. ") + front.flush() == ["Tom and Jerry."]
    assert front.chars == len("Tom and Jerry. ")


@pytest.mark.parametrize("text", TEXTS[3:])
def test_locate_is_the_text_map_of_what_was_fed(text: str) -> None:
    front, text_map = TextFrontEnd(locate=True), TextMap()
    assert front.locating
    segments = []
    for piece in _pieces(text, 3):
        norm = normalize(piece) if piece.strip() else piece
        text_map.add(piece, norm)
        segments += front.feed(piece)
    segments += front.flush()
    assert segments
    assert [front.locate(s) for s in segments] == [text_map.locate(s) for s in segments]


def test_locate_names_the_words_as_sent() -> None:
    front = TextFrontEnd(locate=True)
    (segment,) = front.feed("Ｈｉ Tom & Jerry") + front.flush()
    assert segment == "Hi Tom and Jerry"
    source = front.locate(segment)
    assert source.span(0, 2) == (0, 2, "Ｈｉ")
    start = segment.index("and")
    assert source.span(start, start + 3)[2] == "&"


def test_locate_needs_locate() -> None:
    front = TextFrontEnd()
    assert not front.locating
    with pytest.raises(RuntimeError):
        front.locate("hello")


def test_the_segmenter_given_cuts() -> None:
    front = TextFrontEnd(segmenter=Segmenter(max_chars=20))
    got = front.feed("one two three four five six seven eight nine ten") + front.flush()
    want = Segmenter(max_chars=20)
    assert got == want.feed("one two three four five six seven eight nine ten") + want.flush()
    assert len(got) > 1


def test_warm_loads_the_handle_word_list() -> None:
    handles._lexicon.cache_clear()
    TextFrontEnd.warm()
    assert handles._lexicon.cache_info().currsize == 1
