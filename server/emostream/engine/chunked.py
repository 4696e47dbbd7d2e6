"""Chunked decoding of a whole frame sequence with a :class:`ChunkSchedule` (sans-I/O).

:func:`decode_chunked` runs a decoder window by window and yields each window's emitted
audio; joined, the chunks equal the one-shot decode to float error when the schedule's
``context`` covers the decoder's receptive field (HiFi-GAN V1: 14 frames -> ~50 dB).

:func:`pad_frames` right-pads a window to a bucket length and :func:`pad_side` says on which side (what the GPU
batcher does so that a few CUDA graphs serve every window). Padding must sit past a
context the window discards: right padding after an utterance's last frame changes that
window's audio (measured with HiFi-GAN V1: ~0 dB over the last 20 frames), so the last
window is padded on the left, where its left context absorbs it. Pad with the features of
silence (``emostream.models.mel.silence_level()`` for log-mels).

:func:`snr_db` is the accuracy measure used by tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt

from emostream.engine.chunker import ChunkSchedule, ChunkWindow, trim_output

Frames = npt.NDArray[np.float32]
Audio = npt.NDArray[np.float32]


def decode_chunked(
    decode: Callable[[Frames], Audio],
    frames: Frames,
    schedule: ChunkSchedule,
    *,
    hop: int,
    first: bool = True,
) -> Iterator[tuple[ChunkWindow, Audio]]:
    """Decode ``frames`` ``[C, T]`` window by window; yield ``(window, emitted audio)``."""
    total = int(frames.shape[-1])
    for window in schedule.windows(total, first=first):
        audio = decode(np.ascontiguousarray(frames[:, window.lo : window.hi]))
        yield window, trim_output(window, audio, hop)


PadSide = Literal["left", "right"]


def pad_side(window: ChunkWindow, total: int) -> PadSide:
    """Where a window may be padded without changing its emitted audio: on the right,
    into frames past its right context; for an utterance's last window (no right
    context) on the left, past its left context. A window that is the whole utterance has
    neither; it is padded on the right (its last frames then differ slightly from an
    unpadded decode: the decoder hears silence after the end rather than zeros)."""
    return "left" if window.hi >= total and window.lo > 0 else "right"


def pad_frames(frames: Frames, length: int, *, value: float, side: PadSide = "right") -> Frames:
    """``frames`` ``[C, T]`` padded with ``value`` to ``[C, length]`` on ``side``; the
    decoded audio of the real frames then starts at ``(length - T) * hop`` for ``"left"``."""
    c, t = frames.shape
    if t > length:
        raise ValueError(f"window of {t} frames does not fit a bucket of {length}")
    if t == length:
        return frames
    out = np.full((c, length), value, dtype=np.float32)
    if side == "right":
        out[:, :t] = frames
    else:
        out[:, length - t :] = frames
    return out


def snr_db(reference: npt.NDArray[np.floating], test: npt.NDArray[np.floating]) -> float:
    """Signal-to-noise ratio of ``test`` against ``reference`` in dB (inf when equal)."""
    ref = np.asarray(reference, dtype=np.float64)
    err = np.asarray(test, dtype=np.float64) - ref
    noise = float(np.sum(err * err))
    if noise == 0.0:
        return float("inf")
    return float(10.0 * np.log10(float(np.sum(ref * ref)) / noise))
