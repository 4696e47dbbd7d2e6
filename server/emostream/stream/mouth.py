"""Mouth shapes for an avatar, one per 20 ms audio frame (sans-I/O).

A :class:`MouthTrack` follows one utterance on the voice's own sample clock: it is told each
segment's phoneme units with their durations (the acoustic model's ``Latent.units`` and
``unit_frames``, the same timing ``timestamps`` and ``words`` events come from) and is fed the
segment's audio as it is decoded (PCM at the voice's rate, before encoding). For every complete
20 ms frame of the stream's timeline it gives a :class:`MouthFrame`:

* ``viseme``: the mouth position of the unit that fills most of the frame, one of
  :data:`VISEMES` (a silence, a lip closure ``PP``, consonant classes, five vowel shapes);
* ``open``: 0 (closed) to 1 (wide open): the viseme's opening scaled by the frame's loudness
  (its RMS level), so that a pause, a closure or a quiet tail shuts the mouth and a stressed
  vowel opens it most; smoothed a little from frame to frame (faster opening than closing; a
  lip closure at once);
* ``form``: −1 (rounded, pursed: *oo*) to +1 (spread, smiling: *ee*), from the viseme.

Frame ``k`` covers the stream's audio from ``k × 20 ms``: the same 20 ms as binary frame ``k``
(one Opus packet, or 20 ms of PCM) at any output rate, since the output keeps the voice's time.
:func:`mouth_event` packs a run of frames as the protocol's ``mouth`` event; the streamer sends
each before the audio it covers and a listener applies each frame when its playout clock
reaches ``start_ms + i × frame_ms`` (docs/protocol.md, "Mouth shapes").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FRAME_MS = 20
SILENCE = "sil"
# Visemes (mouth positions): silence, then consonant classes, then vowels.
VISEMES = ("sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "I", "O", "U")
# (opening, form) of each viseme at full loudness.
SHAPES: dict[str, tuple[float, float]] = {
    "sil": (0.0, 0.0), "PP": (0.0, 0.0), "FF": (0.15, 0.1), "TH": (0.2, 0.1),
    "DD": (0.25, 0.1), "kk": (0.3, 0.0), "CH": (0.25, -0.3), "SS": (0.15, 0.4),
    "nn": (0.2, 0.1), "RR": (0.25, -0.35), "aa": (1.0, 0.1), "E": (0.6, 0.45),
    "I": (0.35, 0.7), "O": (0.7, -0.6), "U": (0.35, -0.85),
}  # fmt: skip

# English units are espeak-ng IPA code points (emostream.text.phonemes, Piper's alike).
_IPA: dict[str, str] = {}
for _chars, _viseme in (
    ("aɑæɐɒʌ", "aa"), ("eɛɜəɚɘ", "E"), ("iɪᵻɨjɟ", "I"), ("oɔɤ", "O"), ("uʊwɯyʏøœɥ", "U"),
    ("pbmɸβ", "PP"), ("fvʋ", "FF"), ("θð", "TH"), ("tdɖʈ", "DD"), ("nŋɲɳɴlʎ", "nn"),
    ("kgɡxɣχqʔhɦ", "kk"), ("ʃʒʧʤçʝɕʂ", "CH"), ("szʐ", "SS"), ("ɹrɻʁɾɽɰ", "RR"),
):
    _IPA.update(dict.fromkeys(_chars, _viseme))
_NEXT = frozenset("ˈˌ")  # stress marks: the mouth of the sound they stress
_PREVIOUS = frozenset("ːˑ\u0303ʰʲ")  # length and colouring: the sound before them
# Mandarin units are "zh:<initial>" and "zh:<final>" (pinyin, toneless).
_ZH_INITIALS = {
    "b": "PP", "p": "PP", "m": "PP", "f": "FF", "d": "DD", "t": "DD", "n": "nn", "l": "nn",
    "g": "kk", "k": "kk", "h": "kk", "j": "CH", "q": "CH", "x": "CH", "zh": "CH", "ch": "CH",
    "sh": "CH", "r": "RR", "z": "SS", "c": "SS", "s": "SS",
}  # fmt: skip
_ZH_SPECIAL = {"_m": "PP", "_n": "nn", "_ng": "nn", "_r": "RR", "er": "E", "ê": "E"}

_FLOOR_DB, _RANGE_DB = -48.0, 30.0  # loudness 0 at -48 dBFS RMS, 1 at -18 dBFS and above
_QUIET = 0.05  # below this loudness a frame is silent: the mouth closes
_ATTACK, _RELEASE, _FORM_RATE = 0.85, 0.7, 0.6  # smoothing toward each frame's target


def viseme_of(unit: str) -> str | None:
    """The viseme of one acoustic unit; None for a mark that takes its neighbour's
    (``_NEXT``: the next unit's; ``_PREVIOUS``: the one before)."""
    if unit in _NEXT or unit in _PREVIOUS:
        return None
    if unit.startswith("zh:"):
        name = unit[3:]
        if name in _ZH_INITIALS:
            return _ZH_INITIALS[name]
        if name in _ZH_SPECIAL:
            return _ZH_SPECIAL[name]
        for vowel, viseme in (("a", "aa"), ("o", "O"), ("e", "E"), ("u", "U"), ("v", "U")):
            if vowel in name:
                return viseme
        return "I" if name.startswith("i") else SILENCE
    return _IPA.get(unit, SILENCE)


@dataclass(frozen=True)
class MouthFrame:
    open: float
    form: float
    viseme: str


class MouthTrack:
    """Mouth frames of one utterance from its units and its audio (module docs).

    ``sample_rate``: the voice's rate, of the PCM pushed and of the unit positions."""

    def __init__(self, sample_rate: int, *, frame_ms: int = FRAME_MS) -> None:
        self.rate = sample_rate
        self.frame_ms = frame_ms
        self.frames_out = 0  # frames given so far (the next frame's index)
        self._pending = np.zeros(0, dtype=np.float32)  # samples of the frame being filled
        self._spans: list[tuple[int, int, str]] = []  # (start, end) at the voice's rate
        self._open = 0.0
        self._form = 0.0

    def _bound(self, k: int) -> int:
        """First sample of frame ``k`` at the voice's rate."""
        return (k * self.frame_ms * self.rate + 500) // 1000

    def add_units(
        self, units: Sequence[str], unit_frames: Sequence[int], *, hop: int, offset: int
    ) -> None:
        """A segment's units and their durations (acoustic frames of ``hop`` samples); the
        segment starts ``offset`` samples into the stream (every earlier segment's audio)."""
        visemes: list[str | None] = [viseme_of(u) for u in units]
        for i in range(len(visemes) - 2, -1, -1):  # a stress mark takes the next sound's
            if visemes[i] is None and units[i] in _NEXT:
                visemes[i] = visemes[i + 1]
        pos = offset
        for viseme, n in zip(visemes, unit_frames, strict=False):
            start, pos = pos, pos + int(n) * hop
            if viseme is None:  # a length mark: the sound before it goes on
                viseme = self._spans[-1][2] if self._spans else SILENCE
            if pos > start:
                self._spans.append((start, pos, viseme))

    def push(self, pcm: npt.NDArray[np.float32]) -> list[MouthFrame]:
        """The next decoded audio (at the voice's rate): the frames it completes."""
        if len(pcm):
            self._pending = np.concatenate([self._pending, np.asarray(pcm, dtype=np.float32)])
        out: list[MouthFrame] = []
        while True:
            k = self.frames_out
            size = self._bound(k + 1) - self._bound(k)
            if len(self._pending) < size:
                return out
            out.append(self._frame(self._pending[:size]))
            self._pending = self._pending[size:]

    def finish(self) -> list[MouthFrame]:
        """The last, partial frame (the stream's audio ends inside it), if any."""
        if not len(self._pending):
            return []
        frame = self._frame(self._pending)
        self._pending = self._pending[:0]
        return [frame]

    def _frame(self, pcm: npt.NDArray[np.float32]) -> MouthFrame:
        k = self.frames_out
        self.frames_out += 1
        viseme = self._viseme(self._bound(k), self._bound(k + 1))
        loud = loudness(pcm)
        base, form = SHAPES[viseme]
        if loud < _QUIET or viseme == "PP":
            target = 0.0
        elif viseme == SILENCE:  # audio where the units say a pause: open a little with it
            target = 0.25 * loud
        else:
            target = base * (0.3 + 0.7 * loud)
        rate = _ATTACK if target > self._open else _RELEASE
        self._open += rate * (target - self._open)
        if viseme == "PP":  # the lips close at once
            self._open = 0.0
        self._form += _FORM_RATE * ((form if target > 0 else 0.0) - self._form)
        if self._open < 0.005:
            self._open = 0.0
        return MouthFrame(round(self._open, 3), round(self._form, 3), viseme)

    def _viseme(self, lo: int, hi: int) -> str:
        """The viseme of the unit that overlaps ``[lo, hi)`` most (silence where none does);
        spans wholly before ``lo`` are dropped (frames come in order)."""
        while self._spans and self._spans[0][1] <= lo:
            self._spans.pop(0)
        best, best_overlap = SILENCE, 0
        for start, end, viseme in self._spans:
            if start >= hi:
                break
            overlap = min(end, hi) - max(start, lo)
            if overlap > best_overlap:
                best, best_overlap = viseme, overlap
        return best


def loudness(pcm: npt.NDArray[np.float32]) -> float:
    """0-1: the frame's RMS level between -48 and -18 dBFS."""
    if not len(pcm):
        return 0.0
    rms = float(np.sqrt(np.mean(np.square(pcm, dtype=np.float64))))
    if rms <= 0.0:
        return 0.0
    db = 20.0 * math.log10(rms)
    return min(1.0, max(0.0, (db - _FLOOR_DB) / _RANGE_DB))


def mouth_event(
    frames: Sequence[MouthFrame], first: int, *, frame_ms: int = FRAME_MS
) -> dict[str, Any]:
    """The protocol's ``mouth`` event for ``frames``, the first being frame ``first``."""
    return {
        "type": "mouth",
        "start_ms": first * frame_ms,
        "frame_ms": frame_ms,
        "open": [f.open for f in frames],
        "form": [f.form for f in frames],
        "viseme": [f.viseme for f in frames],
    }
