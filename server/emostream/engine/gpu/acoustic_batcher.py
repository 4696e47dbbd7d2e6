"""Continuous batching of acoustic-model calls across streams (the GPU path).

Every stream's segments need one acoustic-model call each. Run one at a time, a small
FastSpeech-style model on a GPU costs mostly kernel launches and host time, so many streams
queue behind each other. :class:`AcousticBatcher` keeps one device thread busy: when it is
free it takes up to ``max_batch`` pending requests, most urgent first (earliest deadline,
like :class:`~emostream.engine.runner.ThreadRunner`), all for the same model, and runs them
as one padded batch (:func:`~emostream.voices.acoustic.infer_batch`, or the CUDA-graph
runner of :mod:`emostream.engine.gpu.acoustic_graphs`). Nothing waits for a
batch to fill: an idle batcher runs a lone request at once; under load, requests gather
while the previous batch runs.

A batch that fails is retried one request at a time, so one bad request fails alone.

:func:`take_batch` is the sans-I/O part (which pending requests go next).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from emostream.engine.runner import resolve_future
from emostream.voices.acoustic import AcousticRequest
from emostream.voices.base import Latent

log = logging.getLogger(__name__)


BatchFn = Callable[[list[AcousticRequest]], list[Latent]]


@dataclass(order=True)
class Pending:
    deadline: float
    seq: int
    key: object = field(compare=False)  # requests with the same key can share a batch
    run: BatchFn = field(compare=False)
    request: AcousticRequest = field(compare=False)
    future: asyncio.Future[Latent] = field(compare=False)


def take_batch(pending: list[Pending], max_batch: int) -> list[Pending]:
    """Remove and return the next batch from ``pending``: the most urgent request and up to
    ``max_batch - 1`` more with the same key (model), most urgent first."""
    live = [p for p in pending if not p.future.done()]
    pending[:] = []
    if not live:
        return []
    live.sort()
    head = live[0]
    batch = [p for p in live if p.key is head.key][:max_batch]
    chosen = {id(p) for p in batch}
    pending.extend(p for p in live if id(p) not in chosen)
    return batch


class AcousticBatcher:
    """See the module docs. ``max_batch``: requests per model call (default 32)."""

    def __init__(self, *, max_batch: int = 32, clock: Callable[[], float] = time.monotonic):
        self.max_batch = max_batch
        self._clock = clock
        self._pending: list[Pending] = []
        self._seq = itertools.count()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._device = ThreadPoolExecutor(max_workers=1, thread_name_prefix="emostream-fs2")
        self.batches = 0  # model calls made (for benchmarks and tests)
        self.requests = 0

    async def infer(
        self,
        key: object,
        run: BatchFn,
        request: AcousticRequest,
        *,
        deadline: float | None = None,
    ) -> Latent:
        """Queue ``request`` and await its latent. ``run`` maps a batch of requests to their
        latents (e.g. :func:`~emostream.voices.acoustic.infer_batch` for one model); requests
        batch together when their ``key`` (the model) is the same object."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._loop(), name="emostream-acoustic-batcher")
        assert self._wake is not None
        future: asyncio.Future[Latent] = loop.create_future()
        due = self._clock() if deadline is None else deadline
        self._pending.append(Pending(due, next(self._seq), key, run, request, future))
        self._wake.set()
        return await future

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while batch := take_batch(self._pending, self.max_batch):
                await self._serve(batch)

    async def _serve(self, batch: list[Pending]) -> None:
        """Run ``batch`` as one call; if it fails, run its requests one at a time."""
        loop = asyncio.get_running_loop()
        requests = [p.request for p in batch]
        try:
            latents = await loop.run_in_executor(self._device, self._run, batch[0].run, requests)
        except Exception as exc:  # noqa: BLE001 (fail only the request at fault)
            if len(batch) == 1:
                resolve_future(batch[0].future, False, exc)
                return
            log.warning("acoustic batch of %d failed (%s); retrying singly", len(batch), exc)
            for p in batch:
                await self._serve([p])
            return
        for p, latent in zip(batch, latents, strict=True):
            resolve_future(p.future, True, latent)

    def _run(self, run: BatchFn, requests: list[AcousticRequest]) -> list[Latent]:
        self.batches += 1
        self.requests += len(requests)
        return run(requests)

    def shutdown(self) -> None:
        """Stop: pending requests are cancelled; a batch already running finishes."""
        if self._task is not None:
            self._task.cancel()
        for p in self._pending:
            p.future.cancel()
        self._pending.clear()
        self._device.shutdown(wait=False, cancel_futures=True)
