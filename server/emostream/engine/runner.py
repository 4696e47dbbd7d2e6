"""Where model calls run. The streaming loop awaits a runner, never a model directly.

:class:`ThreadRunner` is the CPU path: a few worker threads (ONNX Runtime and torch release
the GIL) taking queued calls most-urgent first. Every call carries a deadline on
``time.monotonic`` — when a listener would run out of audio — so a new stream's first
chunk goes ahead of chunks for streams that still have seconds buffered (earliest deadline
first, the usual rule for real-time work). A GPU runner implements the same coroutines.

A call may also say when the listener actually runs out of audio without it, ``need_by``
(default: the deadline), where it is scheduled ahead of that: the streamer's look-ahead
acoustic calls are due :data:`~emostream.engine.streamer.LOOKAHEAD_LEAD_S` early. Runners
order by the deadline; one that counts late calls (the engine process's scheduler, which
admission reads) counts those delivered after ``need_by``. Runners that count none accept
and ignore it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from emostream.engine.chunked import PadSide
from emostream.voices.base import Controls, Latent, Voice


class Runner(Protocol):
    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        """Run the acoustic stage; ``deadline`` (``time.monotonic``): when its audio is due;
        ``need_by``: when the listener runs out without it (None: the deadline; module docs)."""
        ...

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> npt.NDArray[np.float32]:
        """Decode one window. ``pad_side``: where a batching runner may pad the window (the side
        away from the utterance's edge); ``deadline`` (``time.monotonic``): when the listener
        needs the audio, for runners that schedule by urgency; ``need_by``: as for
        :meth:`acoustic` (the streamer passes none: a window is due when it is needed)."""
        ...

    def cancel(self, stream_id: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class StreamAffine(Protocol):
    """A runner that places each stream on one backend for its life (the Ray Serve runner,
    :mod:`emostream.cluster.ray_runner`). :class:`~emostream.engine.service.SpeechService`
    hands it a stream's output iterator before the first item is taken: ``bind`` places the
    stream (on a lighter path when ``degraded`` names one) and gives back the iterator, which
    raises as soon as that backend is lost, even while the stream waits for text."""

    def bind(
        self, stream_id: str, output: AsyncIterator[Any], *, degraded: str = ""
    ) -> AsyncIterator[Any]: ...


@runtime_checkable
class Joinable(Protocol):
    """A runner with threads of its own running model calls (:class:`ThreadRunner`).

    After :meth:`Runner.close`, :meth:`join` waits for the call each thread may still be
    running (a closed runner starts no new one). A process must not finalize while one runs:
    ONNX Runtime's globals are torn down under it and the process aborts (``terminate called
    without an active exception``, exit 134: seen on SIGTERM with utterances cut by the
    drain)."""

    def close(self) -> None: ...

    def join(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the worker threads to end; True when all have."""
        ...


@runtime_checkable
class Bucketed(Protocol):
    """A runner whose decoder pads windows to a few lengths (the GPU engine's CUDA graph
    shapes); the streamer then fills each window to its bucket
    (:class:`~emostream.engine.chunker.ChunkSchedule` ``buckets``)."""

    def decode_buckets(self, voice: Voice) -> tuple[int, ...]:
        """The padded window lengths of ``voice``'s decode calls (empty: unpadded)."""
        ...


def resolve_future(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """Set ``fut``'s result (``ok``) or exception, unless it is already done (cancelled:
    its stream went away while the call ran)."""
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class ThreadRunner:
    """Runs model calls on ``workers`` threads (documented default 2 = the CI machine's
    cores), earliest deadline first; calls without a deadline are due when submitted."""

    def __init__(self, *, workers: int = 2, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, Callable[[], Any], asyncio.Future[Any]]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"emostream-model-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    async def run(self, fn: Callable[[], Any], *, deadline: float | None = None) -> Any:
        """Queue ``fn`` and await its result."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        due = self._clock() if deadline is None else deadline
        with self._cond:
            if self._closed:
                raise RuntimeError("runner is closed")
            heapq.heappush(self._heap, (due, next(self._seq), fn, fut))
            self._cond.notify()
        return await fut

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,  # not used: no late calls counted here
    ) -> Latent:
        latent: Latent = await self.run(lambda: voice.acoustic(text, controls), deadline=deadline)
        return latent

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,  # not used: no late calls counted here
    ) -> npt.NDArray[np.float32]:
        audio: npt.NDArray[np.float32] = await self.run(
            lambda: voice.decode(frames), deadline=deadline
        )
        return audio

    def cancel(self, stream_id: str) -> None:
        """Queued calls of a cancelled stream are skipped (their awaiting task is cancelled,
        which cancels the future); a call already running finishes and is discarded."""

    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def join(self, timeout_s: float) -> bool:
        """After :meth:`close`: wait up to ``timeout_s`` (in all) for the calls still running
        to end and the worker threads with them. True when no worker is left."""
        end = time.monotonic() + max(0.0, timeout_s)
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            dropped, self._heap = self._heap, []
            self._cond.notify_all()
        for _, _, _, fut in dropped:
            fut.get_loop().call_soon_threadsafe(fut.cancel)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._heap and not self._closed:
                    self._cond.wait()
                if not self._heap:
                    return
                _, _, fn, fut = heapq.heappop(self._heap)
            if fut.cancelled():
                continue
            try:
                ok, value = True, fn()
            except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                ok, value = False, exc
            try:
                fut.get_loop().call_soon_threadsafe(resolve_future, fut, ok, value)
            except RuntimeError:  # the loop is gone (shutdown)
                return
            # (else this frame would keep the last call's result, a latent of up to a few
            # MB, alive until the thread's next call)
            del fn, fut, value
