"""Chunks of a streamed decode (sans-I/O): the plan, and running a decoder by it.

**The plan.** A segment's latent frames are known all at once (the acoustic models are
non-autoregressive), so the plan is a list of windows. Each window decodes
``frames[lo:hi]`` and keeps the samples of ``frames[start:end]``; the context on
both sides (``start - lo`` and ``hi - end`` frames) makes the joined chunks equal the
one-shot decode to float error when ``context`` is at least the decoder's receptive
field (measured per voice; see tests).

The first chunk of an utterance is short so that first audio comes early; later
chunks grow to cut per-call overhead.

A decoder that pads windows to a few lengths (``buckets``: the GPU engine's CUDA graph
shapes) computes the padding as if it were audio. With ``buckets`` each window is grown to
fill the bucket its planned size lands in: the same device time, more audio per call
(HiFi-GAN V1 windows of 48 + 2 x 14 frames used 48 of a 96-frame bucket's frames; filled,
68). Context is unchanged, so the joined chunks still equal the one-shot decode.

**Running it.** :func:`decode_chunked` runs a decoder window by window and yields each window's emitted
audio; joined, the chunks equal the one-shot decode to float error when the schedule's
``context`` covers the decoder's receptive field (HiFi-GAN V1: 14 frames -> ~50 dB).

:func:`pad_frames` right-pads a window to a bucket length and :func:`pad_side` says on which side (what the GPU
batcher does so that a few CUDA graphs serve every window). Padding must sit past a
context the window discards: right padding after an utterance's last frame changes that
window's audio (measured with HiFi-GAN V1: ~0 dB over the last 20 frames), so the last
window is padded on the left, where its left context absorbs it. Pad with the features of
silence (``emostream.networks.mel.silence_level()`` for log-mels).

:func:`snr_db` is the accuracy measure used by tests and benchmarks.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

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

    ``buckets`` (ascending window lengths a batching decoder pads to; empty: none): a
    window is then extended until it fills the smallest bucket holding its planned frames
    (with context), or to the end of the segment when the rest fits that bucket. Sizes
    keep growing from the planned ones: with ``context=14`` and buckets 32/64/96 the
    chunks are 18, 36, 36, 68, 68, ... frames (planned 14, 21, 31, 46, 48, ...). No window
    is longer than the largest bucket: a chunk is cut to ``buckets[-1] - 2 * context``
    frames (the light vocoder's 29 frames a side leave 38 of a 96-frame bucket, less than
    the planned 48), and a schedule whose largest bucket cannot hold one frame with its
    context both sides is refused.
    """

    first: int = 14
    size: int = 48
    growth: float = 1.5
    context: int = 10
    buckets: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.first < 1 or self.size < self.first or self.context < 0 or self.growth < 1:
            raise ValueError(f"invalid chunk schedule: {self}")
        b = self.buckets
        if list(b) != sorted(set(b)) or (b and b[0] < 1):
            raise ValueError(f"chunk schedule buckets must be ascending positive ints: {b}")
        if b and b[-1] <= 2 * self.context:
            raise ValueError(
                f"chunk schedule: the largest bucket ({b[-1]} frames) holds no chunk with "
                f"{self.context} frames of context each side"
            )

    def windows(
        self, total: int, *, first: bool = True, before: int = 0, after: int = 0
    ) -> Iterator[ChunkWindow]:
        """Windows covering ``[0, total)``. ``first=False`` starts at full-size chunks
        (for segments after the first of an utterance, when audio is already playing).

        ``before``/``after``: frames of context outside the segment's (a segment rendered in
        context: ``Latent.before``/``after``). The windows are then over the frames with them
        (``[before, before + total)`` emitted), and the first and last take their context
        from them as inner windows do (within the largest bucket)."""
        for w in self._planned(total, first=first):
            if not before and not after:
                yield w
                continue
            start, end = w.start + before, w.end + before
            lo = max(0, start - self.context)
            hi = min(before + total + after, end + self.context)
            if self.buckets and hi - lo > self.buckets[-1]:  # give up context, not frames
                lo = max(lo, min(start, hi - self.buckets[-1]))
                hi = min(hi, max(end, lo + self.buckets[-1]))
            yield ChunkWindow(start=start, end=end, lo=lo, hi=hi)

    def _planned(self, total: int, *, first: bool) -> Iterator[ChunkWindow]:
        pos = 0
        widest = self.buckets[-1] if self.buckets else None  # no window longer
        n = self.first if first else self.size
        while pos < total:
            if widest is not None:
                n = min(n, widest - 2 * self.context)
            end = min(total, pos + n)
            lo = max(0, pos - self.context)
            # Avoid a tiny tail chunk: fold a remainder shorter than a quarter chunk in
            # (unless the window would then outgrow the largest bucket).
            if total - end < max(1, n // 4) and (widest is None or total - lo <= widest):
                end = total
            if self.buckets:
                end = self._fill(lo, end, total)
            yield ChunkWindow(start=pos, end=end, lo=lo, hi=min(total, end + self.context))
            pos = end
            n = min(self.size, int(n * self.growth))

    def _fill(self, lo: int, end: int, total: int) -> int:
        """``end`` moved on so that the window from ``lo`` fills its bucket (:meth:`windows`
        never plans one wider than the largest)."""
        width = min(total, end + self.context) - lo
        bucket = self.buckets[bisect.bisect_left(self.buckets, width)]
        if total - lo <= bucket:
            return total  # the rest of the segment fits: the last window (no right context)
        return lo + bucket - self.context  # its right context ends the bucket


def bucketed_schedule(context: int, buckets: tuple[int, ...] = ()) -> ChunkSchedule:
    """The schedule of a decoder with these ``buckets`` (none: the default sizes): chunks
    grow as :class:`ChunkSchedule`'s default, but up to what the largest bucket holds with
    ``context`` both sides, rather than 48 frames (the light vocoder's 256-frame bucket: 198;
    HiFi-GAN V1's 96: 68, what filling already gave). A segment after an utterance's first
    then takes one wide window where it took two or three of 70 frames."""
    if not buckets:
        return ChunkSchedule(context=context)
    widest = buckets[-1] - 2 * context
    return ChunkSchedule(context=context, buckets=buckets, size=max(ChunkSchedule.size, widest))


def trim_output(
    window: ChunkWindow, audio: npt.NDArray[np.float32], hop: int
) -> npt.NDArray[np.float32]:
    """Cut a window's decoded audio down to the samples of its emitted frames."""
    a = window.trim_left * hop
    return audio[a : a + window.emitted * hop]


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
