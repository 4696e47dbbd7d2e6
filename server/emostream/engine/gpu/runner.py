"""The asyncio layer over :class:`~emostream.engine.gpu.batcher.Batcher`: one device, all streams.

:class:`GpuVocoderEngine` owns a vocoder backend and a single device thread. Streams call
:meth:`GpuVocoderEngine.vocode` with a window of mel frames and await its audio; the engine
loop gathers pending windows for at most ``max_wait_s`` (or until a full batch is pending),
pads them into a bucket shape, runs one backend call per batch on the device thread (a
CUDA graph replay in fp16 on GPUs) and resolves each window's future, batches strictly in
the order they were formed, so one stream's windows complete in submission order.

While one batch runs, the loop may form and queue the next full batch
(``max_in_flight`` = 2), so host-side work (padding, slicing results) overlaps the device;
a partial batch waits for the device to be free (it then takes whatever is pending).

Usage::

    backend = TorchVocoderBackend(HifiGan.load("universal"), device="cuda")
    engine = GpuVocoderEngine(backend)
    await engine.start()                       # captures graphs for every bucket
    audio = await engine.vocode("stream-1", mel_window)            # [T * 256] float32
    engine.cancel("stream-1")                  # drops pending windows, cancels futures
    await engine.close()
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.engine.chunks import PadSide
from emostream.engine.gpu.acoustic_batcher import AcousticBatcher
from emostream.engine.gpu.acoustic_graphs import GraphedAcoustic
from emostream.engine.gpu.batcher import Batch, Batcher, BucketSpec
from emostream.engine.gpu.vocoder_backend import VocoderBackend
from emostream.engine.runner import ThreadRunner
from emostream.networks.acoustic import AcousticModel
from emostream.networks.mel import silence_level
from emostream.voices.acoustic import AcousticVoice, infer_batch
from emostream.voices.base import Controls, Latent, Voice

log = logging.getLogger(__name__)

Audio = npt.NDArray[np.float32]
SILENCE = silence_level()  # log-mel of digital silence (HiFi-GAN's clamp)


@dataclass
class _Job:
    frames: npt.NDArray[np.float32]  # [n_mels, T]
    side: PadSide
    trim: tuple[int, int] | None
    future: asyncio.Future[Audio]


class GpuVocoderEngine:
    """Batched vocoding for all streams of a process (see module docs)."""

    def __init__(
        self,
        backend: VocoderBackend,
        *,
        buckets: BucketSpec | None = None,
        max_wait_s: float = 0.002,
        max_in_flight: int = 2,
        pad_value: float = SILENCE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.buckets = buckets or BucketSpec()
        self.batcher: Batcher[_Job] = Batcher(buckets=self.buckets, max_wait=max_wait_s)
        self.pad_value = pad_value
        self.max_in_flight = max(1, max_in_flight)
        self._clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="emostream-gpu")
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None
        self._in_flight = 0
        self._closing = False
        self.batches_run = 0
        self.device_seconds = 0.0

    # -- lifecycle -----------------------------------------------------------------

    async def start(self, *, warmup: bool = True) -> None:
        """Start the loop; with ``warmup`` prepare every bucket shape first (graph capture)."""
        if self._task is not None:
            return
        loop = asyncio.get_running_loop()
        if warmup:
            t0 = time.perf_counter()
            await loop.run_in_executor(self._executor, self.backend.warmup, self.buckets.shapes())
            log.info(
                "vocoder warm-up: %d shapes in %.1f s; %s",
                len(self.buckets.shapes()),
                time.perf_counter() - t0,
                self.memory_report(),
            )
        self._task = asyncio.create_task(self._loop(), name="emostream-vocoder-batcher")

    async def close(self) -> None:
        """Finish queued work, stop the loop and the device thread."""
        self._closing = True
        self._poke()
        if self._task is not None:
            await self._task
            self._task = None
        self._executor.shutdown(wait=True)

    # -- stream API ----------------------------------------------------------------

    def vocode(
        self,
        stream_id: Hashable,
        frames: npt.NDArray[np.float32],
        *,
        pad_side: PadSide = "right",
        trim: tuple[int, int] | None = None,
        deadline: float | None = None,
    ) -> asyncio.Future[Audio]:
        """Queue one window ``[n_mels, T]``; the future gives its audio ``[T * hop]``, or
        only frames ``trim = (a, b)`` of it (``[(b - a) * hop]``). ``pad_side``: see
        :func:`emostream.engine.chunks.pad_side` (``"left"`` for an utterance's last
        window). ``deadline``: when the audio is needed, on the engine's clock
        (``time.monotonic`` by default; e.g. when the listener's buffer runs dry): urgent
        windows go first. Windows of one stream complete in the order they were queued."""
        if self._closing:
            raise RuntimeError("engine is closed")
        if self._task is None:
            raise RuntimeError("engine not started (await engine.start())")
        if frames.ndim != 2 or frames.shape[0] != self.backend.n_mels:
            raise ValueError(f"expected [{self.backend.n_mels}, T] frames, got {frames.shape}")
        loop = asyncio.get_running_loop()
        job = _Job(np.asarray(frames, dtype=np.float32), pad_side, trim, loop.create_future())
        self.batcher.submit(
            stream_id, job, frames=int(frames.shape[1]), now=self._clock(), due=deadline
        )
        self._poke()
        return job.future

    def cancel(self, stream_id: Hashable) -> int:
        """Drop ``stream_id``'s queued windows (their futures are cancelled); a batch
        already on the device finishes and its results for this stream are discarded by
        whoever no longer awaits them. Returns how many windows were dropped."""
        dropped = self.batcher.cancel(stream_id)
        for item in dropped:
            item.payload.future.cancel()
        if dropped:
            self._poke()
        return len(dropped)

    def release(self, stream_id: Hashable) -> None:
        """A stream ended normally: forget its bookkeeping."""
        self.batcher.release(stream_id)

    def memory_report(self) -> dict[str, Any]:
        report = dict(self.backend.memory_report())
        report["bucket_shapes"] = len(self.buckets.shapes())
        return report

    def stats(self) -> dict[str, Any]:
        s = self.batcher.stats
        return {
            "batches": s.batches,
            "items": s.items,
            "cancelled": s.cancelled,
            "pending": self.batcher.pending,
            "fill": (s.real_frames / s.padded_frames) if s.padded_frames else 0.0,
            "device_seconds": self.device_seconds,
        }

    # -- loop ----------------------------------------------------------------------

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def _sleep_until_poked(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        self._wake = loop.create_future()
        handle = None
        if timeout is not None:
            handle = loop.call_later(timeout, self._poke)
        try:
            await self._wake
        finally:
            if handle is not None:
                handle.cancel()
            self._wake = None

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        full = self.buckets.max_batch
        while True:
            now = self._clock()
            busy = self._in_flight > 0
            batch = None
            # While the device is busy, queue only full batches: a partial one would leave
            # as soon as its wait ran out and take rows from the better batch formed when
            # the device frees up.
            if self._in_flight < self.max_in_flight and (
                not busy or self._closing or self.batcher.pending >= full
            ):
                batch = self.batcher.next_batch(now, force=self._closing)
            if batch is None:
                if self._closing and self.batcher.pending == 0 and not busy:
                    return
                deadline = None if busy else self.batcher.deadline()
                if busy or deadline is None:
                    await self._sleep_until_poked(None)
                else:
                    await self._sleep_until_poked(max(0.0, deadline - now))
                continue
            mel = self._assemble(batch)
            self._in_flight += 1
            fut = loop.run_in_executor(self._executor, self._timed_run, mel)
            fut.add_done_callback(functools.partial(self._deliver, batch))

    def _timed_run(self, mel: npt.NDArray[np.float32]) -> Audio:
        t0 = time.perf_counter()
        out = self.backend.run(mel)
        self.device_seconds += time.perf_counter() - t0
        return out

    def _assemble(self, batch: Batch[_Job]) -> npt.NDArray[np.float32]:
        mel = np.full(
            (batch.size, self.backend.n_mels, batch.frames), self.pad_value, dtype=np.float32
        )
        for row, item in enumerate(batch.items):
            job = item.payload
            n = job.frames.shape[1]
            if job.side == "right":
                mel[row, :, :n] = job.frames
            else:
                mel[row, :, batch.frames - n :] = job.frames
        return mel

    def _deliver(self, batch: Batch[_Job], result: asyncio.Future[Audio]) -> None:
        self._in_flight -= 1
        self.batches_run += 1
        self._poke()
        exc = result.exception() if not result.cancelled() else asyncio.CancelledError()
        if exc is not None:
            log.error("vocoder batch failed: %r", exc)
            for item in batch.items:
                if not item.payload.future.done():
                    item.payload.future.set_exception(exc)
            return
        audio = result.result()
        hop = self.backend.hop_length
        for row, item in enumerate(batch.items):
            job = item.payload
            if job.future.done():  # cancelled meanwhile
                continue
            n = job.frames.shape[1]
            start = 0 if job.side == "right" else batch.frames - n
            a, b = job.trim if job.trim is not None else (0, n)
            chunk = audio[row, (start + a) * hop : (start + b) * hop]
            job.future.set_result(chunk.astype(np.float32, copy=True))


class GpuRunner:
    """The streamer's ``Runner`` (see :mod:`emostream.engine.runner`) over a
    :class:`GpuVocoderEngine`: windows of 80-bin mels from voices with hop 256 are vocoded by
    the shared engine (batched with every other stream); any other voice's ``decode`` (e.g.
    Piper's latent decoder) and every ``acoustic`` call run on a small thread pool.

    ``decode`` takes two optional hints the streamer knows: ``pad_side`` (``"left"`` for an
    utterance's last window, see :func:`emostream.engine.chunks.pad_side`; without it the
    last window's final frames differ slightly from a one-shot decode) and ``deadline``
    (when the listener needs the audio, on the engine's clock; urgent windows go first).
    """

    def __init__(
        self, engine: GpuVocoderEngine, *, workers: int = 2, max_acoustic_batch: int = 32
    ) -> None:
        self.engine = engine
        self._cpu = ThreadRunner(workers=workers)  # G2P, CPU voices' calls, non-mel decoders
        self.acoustic_batcher = AcousticBatcher(max_batch=max_acoustic_batch)
        self._graphed: dict[object, GraphedAcoustic] = {}  # by model

    def prepare_acoustic(self, model: AcousticModel, *, device: str = "cuda") -> GraphedAcoustic:
        """Capture ``model``'s bucket graphs now (start-up) and batch its requests through
        them from here on."""
        graphed = GraphedAcoustic(model, device=device)
        graphed.capture_all()
        self._graphed[model] = graphed
        return graphed

    def _on_engine(self, voice: Voice, frames: npt.NDArray[np.float32]) -> bool:
        backend = self.engine.backend
        return bool(
            frames.ndim == 2
            and frames.shape[0] == backend.n_mels
            and voice.hop_length == backend.hop_length
        )

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,  # not used: this runner counts no late calls
    ) -> Latent:
        if isinstance(voice, AcousticVoice):
            # G2P on a CPU thread, then the model call batched with every other stream's.
            request = await self._cpu.run(lambda: voice.prepare(text, controls), deadline=deadline)
            run = self._graphed.get(voice.model) or functools.partial(
                infer_batch, voice.model, device=voice.device
            )
            return await self.acoustic_batcher.infer(voice.model, run, request, deadline=deadline)
        return await self._cpu.acoustic(voice, text, controls, deadline=deadline)

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,  # not used: this runner counts no late calls
    ) -> Audio:
        if self._on_engine(voice, frames):
            return await self.engine.vocode(stream_id, frames, pad_side=pad_side, deadline=deadline)
        return await self._cpu.decode(voice, frames, stream_id=stream_id, deadline=deadline)

    def cancel(self, stream_id: str) -> None:
        self.engine.cancel(stream_id)

    def close(self) -> None:
        """Stop the thread pools (the engine is shared: ``await engine.close()`` at shutdown)."""
        self._cpu.close()
        self.acoustic_batcher.shutdown()
