"""Word timestamps as other APIs give them (sans-I/O).

The native ``words`` event times each word (``char_start``/``char_end`` into the context's text
as sent, ``start_ms``/``end_ms`` on its audio timeline). ElevenLabs gives characters instead:
``{"chars", "charStartTimesMs", "charDurationsMs"}`` on an audio message, the times counted
from zero in every message (what its clients add up: each message's span, its last character's
start plus duration, moves their clock on). :class:`CharAligner` makes that from each segment's
words: every character of the text from the end of the last alignment to the segment's last
word (and the punctuation stuck to it), a word's characters sharing its time evenly, the
characters between two words (spaces, punctuation) the pause between them; the times counted
from the end of the previous alignment, so the clients' sum lands on the stream's timeline.
Cartesia gives words with start and end in seconds from the context's start
(:func:`cartesia_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def cartesia_words(words: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """A ``words`` event's words as Cartesia's ``word_timestamps``."""
    return {
        "words": [str(w["word"]) for w in words],
        "start": [round(float(w["start_ms"]) / 1000.0, 4) for w in words],
        "end": [round(float(w["end_ms"]) / 1000.0, 4) for w in words],
    }


class CharAligner:
    """One context's character alignment, segment by segment (module docs)."""

    def __init__(self, *, relative: bool = True) -> None:
        self.relative = relative  # False: from the stream's start (ElevenLabs' HTTP routes)
        self.text = ""  # the context's text as sent, joined
        self._cursor = 0  # characters already aligned
        self._clock_ms = 0.0  # where the client's clock stands: the last alignment's end
        self._last_end_ms = 0.0

    def add_text(self, text: str) -> None:
        self.text += text

    def segment(self, words: Sequence[dict[str, Any]]) -> dict[str, list[Any]] | None:
        """The alignment of one ``words`` event, or None when it holds no word."""
        timed = [w for w in words if int(w["char_end"]) > int(w["char_start"])]
        if not timed:
            return None
        stop = int(timed[-1]["char_end"])
        while stop < len(self.text) and not self.text[stop].isspace():
            stop += 1  # the punctuation right after the last word
        if stop <= self._cursor:
            return None
        starts: list[float] = []
        ends: list[float] = []
        prev_end = max(self._last_end_ms, self._clock_ms)
        index = 0
        for pos in range(self._cursor, stop):
            while index < len(timed) and pos >= int(timed[index]["char_end"]):
                prev_end = float(timed[index]["end_ms"])
                index += 1
            if index < len(timed) and pos >= int(timed[index]["char_start"]):
                word = timed[index]
                lo, hi = int(word["char_start"]), int(word["char_end"])
                w0, w1 = float(word["start_ms"]), float(word["end_ms"])
                step = (w1 - w0) / (hi - lo)
                starts.append(w0 + step * (pos - lo))
                ends.append(w0 + step * (pos - lo + 1))
            else:  # between words: the pause before the next word (after the last: none)
                nxt = float(timed[index]["start_ms"]) if index < len(timed) else prev_end
                starts.append(prev_end)
                ends.append(max(prev_end, nxt))
        chars = list(self.text[self._cursor : stop])
        self._cursor = stop
        self._last_end_ms = ends[-1]
        return self._relative(chars, starts, ends)

    def _relative(
        self, chars: list[str], starts: list[float], ends: list[float]
    ) -> dict[str, list[Any]]:
        """Whole ms from the client's clock, never going back; the clock moves to the end."""
        out_starts: list[int] = []
        out_durs: list[int] = []
        floor = 0
        for start, end in zip(starts, ends, strict=True):
            s = max(floor, round(start - self._clock_ms))
            e = max(s, round(end - self._clock_ms))
            out_starts.append(s)
            out_durs.append(e - s)
            floor = s
        if self.relative:
            self._clock_ms += out_starts[-1] + out_durs[-1]
        return {"chars": chars, "charStartTimesMs": out_starts, "charDurationsMs": out_durs}
