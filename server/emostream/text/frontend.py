"""The text front end's one entry: normalise, segment, locate (sans-I/O).

Every path from a client's text to a voice goes through :class:`TextFrontEnd`: the WebSocket
protocol state owns one per utterance and feeds it each ``text`` message as it comes
(:mod:`emostream.transport.websocket.protocol`); ``POST /v1/audio/speech`` and one-shot
synthesis (:mod:`emostream.stream.oneshot`) take a whole text at once (:meth:`TextFrontEnd.split`).
The steps, in order:

* **normalise** (:func:`~emostream.text.normalize.normalize`): control characters, odd
  whitespace, full-width ASCII, emoji, symbols; chat handles read as words
  (:mod:`emostream.text.handles`, whose word list :meth:`TextFrontEnd.warm` loads);
* **segment** (:class:`~emostream.text.splitter.Segmenter`): sentences, long clauses, and a short
  first segment so the first audio comes early;
* **locate** (with word timestamps only; :class:`~emostream.text.sources.TextMap`): where each
  segment's characters came from in the text as the client sent it.

What comes after is a voice's (its front-end step: G2P, :mod:`emostream.text.phonemes`).
"""

from __future__ import annotations

from emostream.text import handles
from emostream.text.normalize import normalize
from emostream.text.sources import SegmentSource, TextMap
from emostream.text.splitter import Segmenter


class TextFrontEnd:
    """One utterance's text, piece by piece: :meth:`feed` each piece as it comes, :meth:`flush`
    at a flush or the end; each returns the segments now complete, in order.

    ``locate``: keep where every normalised character came from, so that :meth:`locate` can
    place each segment in the text as sent (word timestamps). ``segmenter``: the segmenter to
    cut with (a fresh :class:`~emostream.text.splitter.Segmenter` if None)."""

    def __init__(self, *, locate: bool = False, segmenter: Segmenter | None = None) -> None:
        self._segmenter = Segmenter() if segmenter is None else segmenter
        self._map = TextMap() if locate else None
        self._chars = 0

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
    def split(cls, text: str) -> list[str]:
        """A whole text's segments (the HTTP speech route, one-shot synthesis)."""
        front = cls()
        return front.feed(text, normalize(text)) + front.flush()

    def feed(self, raw: str, normalized: str | None = None) -> list[str]:
        """Take the next piece of text as sent, ``raw`` (``normalized``: what :meth:`normalize`
        made of it, where the caller has it already); returns the segments now complete."""
        text = self.normalize(raw) if normalized is None else normalized
        self._chars += len(text)
        if self._map is not None:
            self._map.add(raw, text)
        return self._segmenter.feed(text)

    def flush(self) -> list[str]:
        """Release what is buffered as segments (a ``flush``, or the end of the text)."""
        return self._segmenter.flush()

    def locate(self, segment: str) -> SegmentSource:
        """Where the next segment (in the order they were returned) came from in the text as
        sent. Only with ``locate``."""
        if self._map is None:
            raise RuntimeError("this front end was made without locate=True")
        return self._map.locate(segment)

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
        return self._segmenter.emitted
