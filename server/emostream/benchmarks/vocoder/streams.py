"""``emostream bench vocoder``'s ``engine`` section: the batched engine
(:class:`~emostream.engine.gpu.runner.GpuVocoderEngine`) under N simulated real-time
streams, N ramped up until chunks come late. The command:
:mod:`emostream.benchmarks.vocoder.command`."""

from __future__ import annotations

import argparse
import asyncio
import functools
import heapq
import logging
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.benchmarks.vocoder.calls import HOP, SR
from emostream.engine.chunks import ChunkSchedule, ChunkWindow, PadSide, pad_side
from emostream.engine.gpu.batcher import BucketSpec
from emostream.engine.gpu.runner import GpuVocoderEngine

log = logging.getLogger("emostream.benchmarks.vocoder")


async def _simulate(
    engine: GpuVocoderEngine,
    mel: npt.NDArray[np.float32],
    n_streams: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """N independent streams speaking utterances back to back for ``args.seconds``.

    Utterance lengths vary (0.5-1.5 x ``--utterance-frames``) and every stream starts at a
    random point of an utterance, so utterance starts (whose first chunks have the tightest
    deadlines) are spread over time as with independent listeners. A stream queues window
    k when chunk k - 1 starts playing and needs it when chunk k starts; playback of an
    utterance starts ``--first-budget-ms`` after its first window was queued.
    """
    loop = asyncio.get_running_loop()
    rng = random.Random(n_streams)
    longest = int(args.utterance_frames * 1.5) + 1
    reps = -(-longest // mel.shape[1])
    utter = np.ascontiguousarray(np.tile(mel, (1, reps))[:, :longest])
    schedule = ChunkSchedule(first=16, size=args.chunk_size, growth=2.0, context=14)
    plans: dict[int, tuple[list[ChunkWindow], list[PadSide]]] = {}
    frame_s = HOP / SR
    first_budget = float(args.first_budget_ms) / 1000.0

    def plan(total: int) -> tuple[list[ChunkWindow], list[PadSide]]:
        if total not in plans:
            wins = list(schedule.windows(total))
            plans[total] = (wins, [pad_side(w, total) for w in wins])
        return plans[total]

    def new_length() -> int:
        return int(args.utterance_frames * rng.uniform(0.5, 1.5))

    def submit_time(u_start: float, total: int, k: int) -> float:
        wins = plan(total)[0]
        if k == 0:
            return u_start
        return u_start + first_budget + float(wins[k - 1].start) * frame_s

    def due_time(u_start: float, total: int, k: int) -> float:
        return u_start + first_budget + float(plan(total)[0][k].start) * frame_s

    t0 = loop.time() + 0.05
    end_at = t0 + args.seconds
    # heap of (submit time, stream, utterance start, utterance frames, chunk index)
    heap: list[tuple[float, int, float, int, int]] = []
    for s in range(n_streams):
        total = new_length()
        u_start = t0 - rng.uniform(0.0, first_budget + total * frame_s)
        k = 0
        n_windows = len(plan(total)[0])
        while k < n_windows and submit_time(u_start, total, k) < t0:
            k += 1  # already played before the simulation starts
        if k == n_windows:
            u_start, total, k = t0, new_length(), 0
        heapq.heappush(heap, (max(t0, submit_time(u_start, total, k)), s, u_start, total, k))
    latencies: list[float] = []
    first_latencies: list[float] = []
    late = 0
    late_by_chunk = [0, 0, 0]  # first chunk, second, later
    chunks = 0
    emitted = 0
    pending: set[asyncio.Future[Any]] = set()

    def on_done(
        fut: asyncio.Future[Any], *, submitted: float, deadline: float, k: int, frames: int
    ) -> None:
        nonlocal late, chunks, emitted
        pending.discard(fut)
        if fut.cancelled() or fut.exception() is not None:
            late += 1
            return
        now = loop.time()
        chunks += 1
        emitted += frames
        latencies.append(now - submitted)
        if k == 0:
            first_latencies.append(now - submitted)
        if now > deadline:
            late += 1
            late_by_chunk[min(k, 2)] += 1

    while heap:
        when, s, u_start, total, k = heap[0]
        if when >= end_at:
            break
        delay = when - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
            continue
        heapq.heappop(heap)
        wins, sides = plan(total)
        w = wins[k]
        deadline = due_time(u_start, total, k)
        fut = engine.vocode(
            s,
            utter[:, w.lo : w.hi],
            pad_side=sides[k],
            trim=(w.trim_left, w.trim_left + w.emitted),
            deadline=deadline if args.edf else None,
        )
        submitted = loop.time()
        fut.add_done_callback(
            functools.partial(
                on_done, submitted=submitted, deadline=deadline, k=k, frames=w.emitted
            )
        )
        pending.add(fut)
        if k + 1 < len(wins):
            heapq.heappush(heap, (submit_time(u_start, total, k + 1), s, u_start, total, k + 1))
        else:
            play_end = u_start + first_budget + total * frame_s
            heapq.heappush(heap, (play_end, s, play_end, new_length(), 0))
    if pending:
        await asyncio.wait(pending, timeout=30.0)
    lat = sorted(latencies) or [0.0]
    first = sorted(first_latencies) or [0.0]
    return {
        "streams": n_streams,
        "chunks": chunks,
        "late": late,
        "late_first_second_later": late_by_chunk,
        "latency_p50_ms": round(1000 * lat[len(lat) // 2], 2),
        "latency_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
        "latency_max_ms": round(1000 * lat[-1], 2),
        "first_chunk_p50_ms": round(1000 * first[len(first) // 2], 2),
        "first_chunk_p99_ms": round(1000 * first[int(0.99 * (len(first) - 1))], 2),
        "audio_seconds_per_second": round(emitted * frame_s / args.seconds, 1),
    }


def _frame_buckets(args: argparse.Namespace) -> tuple[int, ...]:
    if args.frame_buckets != "auto":
        return tuple(int(f) for f in args.frame_buckets.split(","))
    size, ctx = args.chunk_size, 14
    mid = size + 2 * ctx  # a full chunk with context on both sides
    last = size + size // 4 - 1 + ctx  # a folded tail: left context only
    return tuple(sorted({32, 64, 96, _up16(mid), _up16(max(mid, last))}))


def _up16(n: int) -> int:
    return -(-n // 16) * 16


async def engine_ramp(
    backend: Any,
    mel: npt.NDArray[np.float32],
    args: argparse.Namespace,
    progress: Callable[[dict[str, Any]], None] = lambda _: None,
) -> dict[str, Any]:
    sizes = tuple(int(b) for b in args.batch_sizes.split(",") if int(b) <= args.max_batch)
    spec = BucketSpec(frames=_frame_buckets(args), batch_sizes=sizes)
    runs: list[dict[str, Any]] = []
    best = 0
    late_runs = 0
    for n in (int(x) for x in args.streams.split(",")):
        engine = GpuVocoderEngine(backend, buckets=spec, max_wait_s=args.max_wait_ms / 1000.0)
        await engine.start(warmup=not runs)
        result = await _simulate(engine, mel, n, args)
        await engine.close()
        result.update(
            batches=engine.batches_run,
            mean_batch=round(engine.batcher.stats.items / max(1, engine.batches_run), 1),
            fill=round(engine.stats()["fill"], 3),
            device_busy=round(engine.device_seconds / args.seconds, 3),
        )
        runs.append(result)
        log.info("engine: %s", result)
        progress({"partial": True, "runs": runs, "chunk_size": args.chunk_size})
        if result["late"] == 0 and result["chunks"] > 0:
            best = max(best, n)
        else:
            late_runs += 1
            if late_runs >= args.stop_after_late:
                break
    return {
        "schedule": {"first": 16, "size": args.chunk_size, "growth": 2.0, "context": 14},
        "deadlines_passed_to_engine": args.edf,
        "utterance_frames": [int(args.utterance_frames * 0.5), int(args.utterance_frames * 1.5)],
        "buckets": {"frames": list(spec.frames), "batch_sizes": list(spec.batch_sizes)},
        "max_wait_ms": args.max_wait_ms,
        "first_budget_ms": args.first_budget_ms,
        "seconds_per_n": args.seconds,
        "runs": runs,
        "max_streams_zero_late": best,
        "memory": backend.memory_report(),
    }
