"""Where model calls run. The streaming loop awaits a runner, never a model directly.

:class:`ThreadRunner` is the CPU path: a few worker threads (ONNX Runtime and torch release
the GIL) taking queued calls most-urgent first. Every call carries a deadline on
``time.monotonic`` — when a listener would run out of audio — so a new stream's first
chunk goes ahead of chunks for streams that still have seconds buffered (earliest deadline
first, the usual rule for real-time work). A GPU runner implements the same coroutines.

A call may also say when the listener actually runs out of audio without it, ``need_by``
(default: the deadline), where it is scheduled ahead of that: the streamer's look-ahead
acoustic calls are due :data:`~emostream.stream.streamer.LOOKAHEAD_LEAD_S` early. Runners
order by the deadline; one that counts late calls (the engine process's scheduler, which
admission reads; :class:`ThreadRunner` with an admission policy) counts those delivered after
``need_by``. Runners that count none accept and ignore it.

With a :class:`~emostream.engine.cpu_admission.CpuAdmissionPolicy` the thread runner also
measures its load (:class:`~emostream.engine.cpu_load.CpuLoadTracker`: every call's times,
the audio it made, the event loop's delay in taking its result) and is
:class:`~emostream.engine.admission.Admits`: :meth:`ThreadRunner.admit` refuses an utterance
that would break the bound for those admitted (:func:`~emostream.engine.cpu_admission.decide`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from emostream.engine.admission import Decision, Verdict
from emostream.engine.chunks import PadSide
from emostream.voices.base import Controls, Latent, Voice

if TYPE_CHECKING:  # the CPU admission modules load with a policy (emostream import time)
    from emostream.engine.cpu_admission import CpuAdmissionPolicy
    from emostream.engine.cpu_load import CallKind, CpuLoadTracker


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
    :mod:`emostream.cluster.ray_runner`). :class:`~emostream.stream.service.SpeechService`
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
    (:class:`~emostream.engine.chunks.ChunkSchedule` ``buckets``)."""

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


class _Call:
    """A queued model call and what the load tracker is told of it."""

    __slots__ = (
        "began",
        "ended",
        "fn",
        "fut",
        "kind",
        "need_by",
        "rate",
        "stream_id",
        "submitted",
    )  # fmt: skip

    def __init__(
        self,
        fn: Callable[[], Any],
        fut: asyncio.Future[Any],
        *,
        kind: CallKind,
        submitted: float,
        need_by: float,
        stream_id: str,
        rate: int,
    ) -> None:
        self.fn = fn
        self.fut = fut
        self.kind: CallKind = kind
        self.submitted = submitted
        self.need_by = need_by
        self.stream_id = stream_id
        self.rate = rate  # the result's sample rate (decode calls), 0: no audio
        self.began = 0.0
        self.ended = 0.0


class ThreadRunner:
    """Runs model calls on ``workers`` threads (documented default 2 = the CI machine's
    cores), earliest deadline first; calls without a deadline are due when submitted.

    ``admission``: measure the load and refuse utterances past capacity (module docs; None:
    neither); ``cores``: the cores it may use (default: the process's CPU affinity);
    ``rng``: spreads the refusals' retry hints (up to the policy's ``retry_spread`` more), so
    that clients refused together do not come back together."""

    def __init__(
        self,
        *,
        workers: int = 2,
        clock: Callable[[], float] = time.monotonic,
        admission: CpuAdmissionPolicy | None = None,
        cores: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, _Call]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"emostream-model-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        self.admission = admission
        self._rng = rng or random.Random()
        self.load: CpuLoadTracker | None = None
        if admission is not None:
            from emostream.engine.cpu_load import CpuLoadTracker

            self.load = CpuLoadTracker(
                workers=len(self._threads), window_s=admission.window_s, cores=cores
            )
        for thread in self._threads:
            thread.start()

    def admit(self) -> Decision:
        """Admit one more utterance now? (:func:`~emostream.engine.cpu_admission.decide`;
        without an admission policy, always.) An admitted one is counted until :meth:`cancel`
        reports its end."""
        if self.admission is None or self.load is None:
            return Decision(Verdict.ADMIT, "", 0.0, 0.0)
        from emostream.engine.cpu_admission import decide

        now = self._clock()
        decision = decide(self.load.snapshot(now), self.admission)
        if decision.admitted:
            self.load.admitted(now)
        elif decision.retry_after_s > 0:
            spread = 1.0 + self.admission.retry_spread * self._rng.random()
            decision = replace(decision, retry_after_s=decision.retry_after_s * spread)
        return decision

    async def run(
        self,
        fn: Callable[[], Any],
        *,
        deadline: float | None = None,
        need_by: float | None = None,
        kind: CallKind = "call",
        stream_id: str = "",
        rate: int = 0,
    ) -> Any:
        """Queue ``fn`` and await its result. ``need_by``: when its listener runs out without
        it (default: the deadline); ``kind``, ``stream_id`` and ``rate`` (the sample rate of
        the audio it returns, 0: none) are what the load tracker records of it."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        now = self._clock()
        due = now if deadline is None else deadline
        call = _Call(fn, fut, kind=kind, submitted=now, stream_id=stream_id, rate=rate,
                     need_by=due if need_by is None else need_by)  # fmt: skip
        with self._cond:
            if self._closed:
                raise RuntimeError("runner is closed")
            heapq.heappush(self._heap, (due, next(self._seq), call))
            self._cond.notify()
        return await fut

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        latent: Latent = await self.run(
            lambda: voice.acoustic(text, controls), deadline=deadline, need_by=need_by,
            kind="acoustic",
        )  # fmt: skip
        return latent

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
        audio: npt.NDArray[np.float32] = await self.run(
            lambda: voice.decode(frames), deadline=deadline, need_by=need_by, kind="decode",
            stream_id=stream_id, rate=voice.info.sample_rate,
        )  # fmt: skip
        return audio

    def cancel(self, stream_id: str) -> None:
        """Queued calls of a cancelled stream are skipped (their awaiting task is cancelled,
        which cancels the future); a call already running finishes and is discarded. The
        service calls this once per utterance, at its end: admission counts it ended."""
        if self.load is not None:
            self.load.ended(stream_id, self._clock())

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
        for _, _, call in dropped:
            call.fut.get_loop().call_soon_threadsafe(call.fut.cancel)

    def _deliver(self, call: _Call, ok: bool, value: Any) -> None:
        """On the event loop: record the call, then hand its result over."""
        if self.load is not None:
            audio_s = 0.0
            if ok and call.rate > 0 and isinstance(value, np.ndarray) and value.size:
                audio_s = value.shape[-1] / call.rate
            self.load.call(
                kind=call.kind, submitted=call.submitted, began=call.began, ended=call.ended,
                need_by=call.need_by, delivered=self._clock(), audio_s=audio_s,
                stream_id=call.stream_id,
            )  # fmt: skip
        resolve_future(call.fut, ok, value)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._heap and not self._closed:
                    self._cond.wait()
                if not self._heap:
                    return
                _, _, call = heapq.heappop(self._heap)
            if call.fut.cancelled():
                continue
            call.began = self._clock()
            try:
                ok, value = True, call.fn()
            except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                ok, value = False, exc
            call.ended = self._clock()
            try:
                call.fut.get_loop().call_soon_threadsafe(self._deliver, call, ok, value)
            except RuntimeError:  # the loop is gone (shutdown)
                return
            # (else this frame would keep the last call's result, a latent of up to a few
            # MB, alive until the thread's next call)
            del call, value
