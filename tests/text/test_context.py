"""A segment with the words around it (emostream.text.context)."""

from emostream.text.context import CLOSE, OPEN, Segment, spoken_text
from emostream.text.normalize import normalize


def test_a_segment_without_context_is_its_text() -> None:
    assert Segment("Hello there.").wire() == "Hello there."
    assert Segment("Hi", " ", "  ").wire() == "Hi"  # whitespace is no context
    assert Segment.parse("Hello there.") == Segment("Hello there.")


def test_wire_and_parse_round_trip() -> None:
    seg = Segment("to fix this", "easiest way ", " is")
    wired = seg.wire()
    assert wired == f"easiest way {OPEN}to fix this{CLOSE} is"
    assert Segment.parse(wired) == seg and seg.has_context
    assert seg.rendered == "easiest way to fix this is"
    assert spoken_text(wired) == "to fix this" and spoken_text("plain") == "plain"


def test_pieces_keep_the_context_at_their_own_ends() -> None:
    seg = Segment("one two three", "zero ", " four")
    assert seg.with_text("one", first=True, last=False) == Segment("one", "zero ", "")
    assert seg.with_text("three", first=False, last=True) == Segment("three", "", " four")


def test_a_client_cannot_write_the_marks() -> None:
    assert normalize(f"a{OPEN}b{CLOSE}c\ufdef\uffff") == "abc"
    assert Segment.parse(f"a{OPEN}b") == Segment("ab")  # a lone mark is dropped
