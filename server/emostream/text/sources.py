"""Where each spoken character came from in the request text, for word timestamps.

The text front end normalises what the client sends (``Ｈ`` → ``H``, ``&`` → ``and``, ``...`` →
``…``) before the segmenter splits it; a word timestamp must still name the word as the client wrote
it, with offsets into the request text. :class:`TextMap` keeps, for every normalised character,
the request characters it came from; :meth:`TextMap.locate` gives each segment its
:class:`SegmentSource`. Sans-I/O, used by :class:`emostream.text.frontend.TextFrontEnd`.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class SegmentSource:
    """Where a segment's characters came from in the utterance's request text (the ``text``
    messages as the client sent them, before normalisation, joined; code points).

    ``original`` is the request text from offset ``offset`` on that the segment covers;
    segment character ``i`` came from ``original[starts[i]:ends[i]]`` (an inserted character,
    such as a space around the ``and`` written for ``&``, from an empty stretch)."""

    offset: int
    original: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int, str]:
        """Request-text offsets and the text as written of segment characters
        ``[start, end)``."""
        if not self.starts or start >= end:
            at = self.offset + (self.starts[min(start, len(self.starts) - 1)] if self.starts else 0)
            return at, at, ""
        lo = self.starts[start]
        hi = max(self.ends[start:end])
        return self.offset + lo, self.offset + hi, self.original[lo:hi]


def char_sources(raw: str, norm: str) -> list[tuple[int, int]]:
    """For each character of ``norm`` (``raw`` normalised), the ``[start, end)`` of ``raw`` it
    came from. ``raw`` is compatibility-folded character by character first (``Ｈ`` → ``H``),
    then matched: one to one where they agree or a stretch changed length for length, the
    whole changed stretch where it did not (``…`` from ``...``, ``and`` from ``&``), an empty
    stretch for an insertion."""
    if raw == norm:
        return [(i, i + 1) for i in range(len(raw))]
    owner: list[int] = []  # raw index of each folded character
    folded: list[str] = []
    for i, ch in enumerate(raw):
        f = unicodedata.normalize("NFKC", ch)
        folded.append(f)
        owner += [i] * len(f)
    owner.append(len(raw))
    out: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, "".join(folded), norm, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out += [(owner[i1 + d], owner[i1 + d] + 1) for d in range(j2 - j1)]
        elif tag == "replace":
            out += [(owner[i1], owner[i2 - 1] + 1)] * (j2 - j1)
        elif tag == "insert":
            out += [(owner[i1], owner[i1])] * (j2 - j1)
    return out


class TextMap:
    """The request text as sent, the normalised text the segmenter reads, and for every
    normalised character the request characters it came from (for word timestamps)."""

    SEARCH = 256  # how far past the last segment a segment's next character is looked for

    def __init__(self) -> None:
        self.original = ""
        self.norm = ""
        self.starts: list[int] = []
        self.ends: list[int] = []
        self._cursor = 0

    def add(self, raw: str, norm: str) -> None:
        base = len(self.original)
        self.original += raw
        self.norm += norm
        for start, end in char_sources(raw, norm):
            self.starts.append(base + start)
            self.ends.append(base + end)

    def locate(self, segment: str) -> SegmentSource:
        """The source of the next segment: its characters, in order, in the normalised text
        (the segmenter only drops whitespace and unspeakable stretches between them)."""
        starts: list[int] = []
        ends: list[int] = []
        pos = self._cursor
        if not self.norm or not segment:
            return SegmentSource(len(self.original), "", (), ())
        for ch in segment:
            j = self.norm.find(ch, pos, pos + self.SEARCH)
            if j >= 0:
                pos = j + 1
            else:  # not where expected: stay put rather than jump
                j = min(pos, len(self.norm) - 1)
            starts.append(self.starts[j])
            ends.append(self.ends[j])
        self._cursor = pos
        lo, hi = min(starts), max(ends)
        return SegmentSource(
            lo,
            self.original[lo:hi],
            tuple(s - lo for s in starts),
            tuple(e - lo for e in ends),
        )
