"""A segment with the words around it (sans-I/O): rendered in context, spoken alone.

A segment cut between two words (no punctuation there: :mod:`emostream.text.breaks`) ends in
the middle of its sentence. Rendered alone, the acoustic model says it as a whole utterance:
its last phone lengthened (``way`` 27 frames against 3 inside the sentence, ``的`` 22 against
3), a final fall and the teacher's end silence, and the next segment starts again from
``^``. Whisper heard each such join as a comma. So a segment cut there carries the words
that follow it (``after``: the look-ahead the segmenter read before it cut), the segment
after it the words before it (``before``), and the voice renders the three together and keeps
the segment's own frames (:mod:`emostream.voices.joins`).

On its way from the segmenter to the voice a segment is a ``str`` (queues, the phrase cache
key, the engine process's front end): :meth:`Segment.wire` writes ``before`` U+FDD0 ``text``
U+FDD1 ``after``; a segment without context is its text alone, as before. U+FDD0 and U+FDD1
are Unicode noncharacters, for a program's own use;
:func:`emostream.text.normalize.normalize` removes every noncharacter from client text, so a
client cannot write them. What is shown or aligned (the ``segment`` event, word timings) is
:func:`spoken_text`.
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN = "\ufdd0"  # between ``before`` and the segment's text
CLOSE = "\ufdd1"  # between the segment's text and ``after``


@dataclass(frozen=True)
class Segment:
    """``text`` to speak; ``before``/``after``: the utterance's words next to it (rendered
    for prosody, not spoken), each with the whitespace between it and ``text``, so that
    ``before + text + after`` is the utterance's text there."""

    text: str
    before: str = ""
    after: str = ""

    @property
    def has_context(self) -> bool:
        return bool(self.before.strip() or self.after.strip())

    def wire(self) -> str:
        """The segment as one string (module docs); its text alone without context."""
        if not self.has_context:
            return self.text
        return f"{self.before}{OPEN}{self.text}{CLOSE}{self.after}"

    @classmethod
    def parse(cls, wired: str) -> Segment:
        """The inverse of :meth:`wire`; a string without the marks is a plain segment."""
        if OPEN not in wired or CLOSE not in wired:
            return cls(wired.replace(OPEN, "").replace(CLOSE, ""))
        before, rest = wired.split(OPEN, 1)
        text, after = rest.split(CLOSE, 1)
        return cls(text, before, after)

    @property
    def rendered(self) -> str:
        """What the model reads: the segment with its context."""
        return f"{self.before}{self.text}{self.after}"

    def with_text(self, text: str, *, first: bool, last: bool) -> Segment:
        """A piece of this segment (:func:`emostream.text.pieces.fit_pieces`): the first piece
        keeps ``before``, the last ``after``."""
        return Segment(text, self.before if first else "", self.after if last else "")

    def wire_pieces(self, pieces: list[str]) -> list[str]:
        """``pieces`` of this segment's text, in order, wired: the first with ``before``, the
        last with ``after`` (:meth:`with_text`)."""
        last = len(pieces) - 1
        return [
            self.with_text(p, first=k == 0, last=k == last).wire() for k, p in enumerate(pieces)
        ]


def spoken_text(wired: str) -> str:
    """The text a wired segment speaks (itself when it has no context)."""
    if OPEN not in wired and CLOSE not in wired:
        return wired
    return Segment.parse(wired).text
