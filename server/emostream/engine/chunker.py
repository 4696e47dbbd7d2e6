"""Chunk planning for streamed decoding (sans-I/O).

A segment's latent frames are known all at once (the acoustic models are
non-autoregressive), so the plan is a list of windows. Each window decodes
``frames[lo:hi]`` and keeps the samples of ``frames[start:end]``; the context on
both sides (``start - lo`` and ``hi - end`` frames) makes the joined chunks equal the
one-shot decode to float error when ``context`` is at least the decoder's receptive
field (measured per voice; see tests).

The first chunk of an utterance is short so that first audio comes early; later
chunks grow to cut per-call overhead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ChunkWindow:
    start: int  # first frame whose audio this chunk emits
    end: int  # one past the last emitted frame
    lo: int  # first frame fed to the decoder (start - left context)
    hi: int  # one past the last frame fed (end + right context)

    @property
    def trim_left(self) -> int:
        """Frames of left context to drop from the decoder's output."""
        return self.start - self.lo

    @property
    def emitted(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class ChunkSchedule:
    """Chunk sizes in frames: ``first``, then growing by ``growth`` up to ``size``.

    Defaults: 14 frames (163 ms at 22.05 kHz, hop 256) first, then 21, 31, 46, 48: each
    chunk's compute must fit in the audio already sent, so growth stays gentle.
    """

    first: int = 14
    size: int = 48
    growth: float = 1.5
    context: int = 10

    def __post_init__(self) -> None:
        if self.first < 1 or self.size < self.first or self.context < 0 or self.growth < 1:
            raise ValueError(f"invalid chunk schedule: {self}")

    def windows(self, total: int, *, first: bool = True) -> Iterator[ChunkWindow]:
        """Windows covering ``[0, total)``. ``first=False`` starts at full-size chunks
        (for segments after the first of an utterance, when audio is already playing)."""
        pos = 0
        n = self.first if first else self.size
        while pos < total:
            end = min(total, pos + n)
            # Avoid a tiny tail chunk: fold a remainder shorter than a quarter chunk in.
            if total - end < max(1, n // 4):
                end = total
            yield ChunkWindow(
                start=pos,
                end=end,
                lo=max(0, pos - self.context),
                hi=min(total, end + self.context),
            )
            pos = end
            n = min(self.size, int(n * self.growth))


def trim_output(
    window: ChunkWindow, audio: npt.NDArray[np.float32], hop: int
) -> npt.NDArray[np.float32]:
    """Cut a window's decoded audio down to the samples of its emitted frames."""
    a = window.trim_left * hop
    return audio[a : a + window.emitted * hop]
