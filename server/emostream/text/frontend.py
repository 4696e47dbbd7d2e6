"""The text front end's one entry: normalise, segment, locate (sans-I/O).

Every path from a client's text to a voice goes through :class:`TextFrontEnd`: the WebSocket
protocol state owns one per utterance and feeds it each ``text`` message as it comes
(:mod:`emostream.transport.websocket.protocol`); ``POST /v1/audio/speech`` and one-shot
synthesis (:mod:`emostream.stream.oneshot`) take a whole text at once (:meth:`TextFrontEnd.split`).
The steps, in order:

* **normalise** (:func:`~emostream.text.normalize.normalize`): control characters, odd
  whitespace, full-width ASCII, emoji, symbols; chat handles read as words
  (:mod:`emostream.text.handles`, whose word list :meth:`TextFrontEnd.warm` loads);
* **pronunciation** (with a :class:`~emostream.text.pron.reader.PronunciationSetup` only):
  inline overrides ``{word|pronunciation}`` and dictionary words become pins, each riding in
  its segment to the voice (:mod:`emostream.text.pron`); what cannot be applied is a
  :class:`~emostream.text.pron.inline.Problem` in :attr:`TextFrontEnd.problems`;
* **segment** (:class:`~emostream.text.splitter.Segmenter`): sentences, long clauses, and a short
  first segment so the first audio comes early (never inside a pin); with ``languages`` (a
  voice per language), each segment cut again where its language changes
  (:func:`~emostream.text.languages.split_languages`; never inside a pin either);
* **locate** (with word timestamps only; :class:`TextMap`): where each segment's characters
  came from in the text as the client sent it. Normalising changes what the client sent
  (``Ｈ`` → ``H``, ``&`` → ``and``, ``...`` → ``…``), but a word timestamp must still name the
  word as the client wrote it, with offsets into the request text: :class:`TextMap` keeps, for
  every normalised character, the request characters it came from, and gives each segment its
  :class:`SegmentSource`.

What comes after is a voice's (its front-end step: G2P, :mod:`emostream.text.phonemes`); when
espeak-ng dies on an input there, the step raises :class:`EspeakCrashed`, defined here so that
the transport needs no more of the text layer than this module.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass

from emostream.text import handles
from emostream.text.context import spoken_text
from emostream.text.languages import split_languages
from emostream.text.normalize import normalize
from emostream.text.pron.inline import Override, Piece, Problem
from emostream.text.pron.reader import PronunciationReader, PronunciationSetup
from emostream.text.pron.wire import display_text
from emostream.text.splitter import Segmenter


class EspeakCrashed(RuntimeError):
    """espeak-ng died (or hung) on this call; the next call gets a fresh process
    (:mod:`emostream.text.espeak`)."""


class OverrideRefused(ValueError):
    """A whole text (:meth:`TextFrontEnd.split`) holds an override that cannot be applied."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


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


class TextFrontEnd:
    """One utterance's text, piece by piece: :meth:`feed` each piece as it comes, :meth:`flush`
    at a flush or the end; each returns the segments now complete, in order.

    ``locate``: keep where every normalised character came from, so that :meth:`locate` can
    place each segment in the text as sent (word timestamps). ``segmenter``: the segmenter to
    cut with (a fresh :class:`~emostream.text.splitter.Segmenter` if None). ``languages``: cut
    each segment where its language changes (an utterance with a voice per language).
    ``pronunciation``: read overrides and dictionary words (None: the text is read as it is,
    braces and all)."""

    def __init__(self, *, locate: bool = False, segmenter: Segmenter | None = None,
                 languages: bool = False,
                 pronunciation: PronunciationSetup | None = None) -> None:  # fmt: skip
        self._segmenter = Segmenter() if segmenter is None else segmenter
        self._map = TextMap() if locate else None
        self._chars = 0
        self._languages = languages
        self._emitted = 0
        self._reader = None if pronunciation is None else PronunciationReader(pronunciation)
        self.problems: list[Problem] = []  # overrides not applied (the caller reports them)

    @staticmethod
    def warm() -> None:
        """Load the handle splitter's word list now (before the first request), not at the
        first handle."""
        handles.warm()

    @staticmethod
    def normalize(raw: str) -> str:
        """``raw`` as it will be segmented. A piece of whitespace alone is kept as it is (it
        parts the streamed tokens on either side of it)."""
        return normalize(raw) if raw.strip() else raw

    @classmethod
    def split(cls, text: str, *, languages: bool = False,
              pronunciation: PronunciationSetup | None = None) -> list[str]:  # fmt: skip
        """A whole text's segments (the HTTP speech route, one-shot synthesis); with
        ``pronunciation``, raises :class:`OverrideRefused` for the first override that cannot
        be applied."""
        front = cls(languages=languages, pronunciation=pronunciation)
        segments = front.feed(text, None if pronunciation else normalize(text)) + front.flush()
        if front.problems:
            raise OverrideRefused(front.problems[0])
        return segments

    def feed(self, raw: str, normalized: str | None = None) -> list[str]:
        """Take the next piece of text as sent, ``raw`` (``normalized``: what :meth:`normalize`
        made of it, where the caller has it already; unused with pronunciation control, which
        normalises around the overrides); returns the segments now complete."""
        if self._reader is not None:
            return self._cut(self._take(self._reader.feed(raw)))
        text = self.normalize(raw) if normalized is None else normalized
        self._chars += len(text)
        if self._map is not None:
            self._map.add(raw, text)
        return self._cut(self._segmenter.feed(text))

    def flush(self, *, final: bool = True) -> list[str]:
        """Release what is buffered as segments: at a ``flush`` (``final`` False: an override
        not yet closed stays held) or at the end of the text."""
        out = self._take(self._reader.flush(final=final)) if self._reader is not None else []
        return self._cut(out + self._segmenter.flush())

    def _take(self, pieces: list[Piece]) -> list[str]:
        """The reader's pieces into the segmenter: plain text normalised, an override as its
        pin (its display is what the text map and the length count see)."""
        out: list[str] = []
        for piece in pieces:
            if isinstance(piece, Problem):
                self.problems.append(piece)
                continue
            if isinstance(piece, Override):
                text, shown = piece.pin.wire(), piece.pin.display
            else:
                text = shown = self.normalize(piece.text)
            self._chars += len(shown)
            if self._map is not None:
                self._map.add(piece.raw, shown)
            out += self._segmenter.feed(text)
        return out

    def take_problems(self) -> list[Problem]:
        """The problems found since the last call (each reported once)."""
        problems, self.problems = self.problems, []
        return problems

    def _cut(self, segments: list[str]) -> list[str]:
        """With ``languages``: each segment cut again where its language changes."""
        if self._languages:
            segments = [piece for s in segments for piece in split_languages(s)]
        self._emitted += len(segments)
        return segments

    def locate(self, segment: str) -> SegmentSource:
        """Where the next segment (in the order they were returned) came from in the text as
        sent. Only with ``locate``."""
        if self._map is None:
            raise RuntimeError("this front end was made without locate=True")
        # a segment's context is not its own; its overrides are located as their words
        return self._map.locate(display_text(spoken_text(segment)))

    @property
    def locating(self) -> bool:
        """Made with ``locate``: :meth:`locate` places segments."""
        return self._map is not None

    @property
    def chars(self) -> int:
        """Normalised characters taken so far."""
        return self._chars

    @property
    def emitted(self) -> int:
        """Segments returned so far."""
        return self._emitted
