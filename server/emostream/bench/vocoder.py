"""``emostream bench vocoder``: HiFi-GAN V1 on a GPU -- latency, throughput, accuracy, and
the batched engine under N simulated real-time streams.

Sections (each written to the JSON result as it finishes):

* ``latency``: batch 1, chunk windows of 30 / 60 / 92 frames (16 / 32 / 64 emitted frames
  with 14 frames of context per side), eager vs CUDA graph, fp32 vs fp16. ``gpu_ms`` is
  device time of the call on resident input (CUDA events); ``call_ms`` the engine's whole
  backend call (host->device copy, compute, device->host copy, sync).
* ``throughput``: 92-frame windows (64 emitted = 743 ms of audio) as the batch grows;
  ``realtime_streams`` = audio seconds produced per wall second.
* ``accuracy``: on a real speech mel, fp16 vs fp32 one-shot SNR, and chunked (bucket-padded
  windows, as the engine runs them) vs one-shot in the same precision.
* ``engine``: N streams, each speaking utterances back to back through the real batcher
  and :class:`GpuVocoderEngine`; a stream submits a window when the previous chunk starts
  playing and needs it before that chunk ends (the first chunk of an utterance within
  ``--first-budget-ms``). Reports late chunks and latency per N, and the largest N with
  zero late chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import heapq
import json
import logging
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.engine.chunks import (
    ChunkSchedule,
    ChunkWindow,
    PadSide,
    pad_frames,
    pad_side,
    snr_db,
)
from emostream.engine.gpu.batcher import BucketSpec
from emostream.engine.gpu.runner import GpuVocoderEngine
from emostream.models.mel import silence_level

log = logging.getLogger("emostream.bench.vocoder")

SR = 22050
HOP = 256
SCHEDULE = ChunkSchedule(first=16, size=64, growth=2.0, context=14)
LATENCY_FRAMES = (30, 60, 92)
EMITTED = {30: 16, 60: 32, 92: 64}  # frames of audio each window emits (context excluded)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="emostream bench vocoder", description=__doc__)
    p.add_argument("--device", default="cuda")
    p.add_argument("--name", default="universal", help="packaged checkpoint (universal, LJSpeech)")
    p.add_argument("--checkpoint", default=None, help="a generator .pth.tar instead")
    p.add_argument(
        "--mel", default=None, help="real speech log-mel .npy [80, T] (accuracy, engine)"
    )
    p.add_argument("--out", default=None, help="write the JSON result here")
    p.add_argument("--sections", default="latency,throughput,accuracy,engine")
    p.add_argument("--batches", default="1,8,32,64,128,256")
    p.add_argument("--streams", default="250,500,750,1000,1250,1500,1750,2000,2500,3000")
    p.add_argument("--seconds", type=float, default=12.0, help="simulated time per N")
    p.add_argument("--max-batch", type=int, default=32, help="largest engine batch bucket")
    p.add_argument("--batch-sizes", default="1,2,4,8,12,16,20,24,28,32,48,64,96,128")
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the engine's model before graph capture (slow start)",
    )
    p.add_argument(
        "--frame-buckets", default="auto", help="e.g. 32,64,96; auto: fit the chunk size"
    )
    p.add_argument("--chunk-size", type=int, default=64, help="later chunks' emitted frames")
    p.add_argument(
        "--no-edf",
        dest="edf",
        action="store_false",
        help="do not pass playback deadlines to the engine (round-robin/FIFO only)",
    )
    p.add_argument("--max-wait-ms", type=float, default=2.0)
    p.add_argument("--first-budget-ms", type=float, default=150.0)
    p.add_argument("--utterance-frames", type=int, default=430, help="~5 s per utterance")
    p.add_argument("--min-time", type=float, default=0.3, help="seconds per timing point")
    p.add_argument("--random-weights", action="store_true", help="no checkpoint (smoke tests)")
    p.add_argument("--channels", type=int, default=512, help="with --random-weights")
    p.add_argument("--stop-after-late", type=int, default=2, help="ramp stops after k late N")
    return p.parse_args(argv)


# -- helpers ---------------------------------------------------------------------------


def _load_model(args: argparse.Namespace) -> Any:
    from emostream.models.hifigan import HifiGan, HifiGanConfig

    if args.random_weights:
        import torch

        torch.manual_seed(0)
        return HifiGan(HifiGanConfig(upsample_initial_channel=args.channels)).eval()
    return HifiGan.load(args.name, checkpoint=args.checkpoint)


def _real_mel(args: argparse.Namespace) -> tuple[npt.NDArray[np.float32], str]:
    if args.mel:
        return np.load(args.mel).astype(np.float32), f"file {Path(args.mel).name}"
    rng = np.random.default_rng(0)
    return rng.normal(-6.0, 2.0, (80, 430)).astype(np.float32), "random (no --mel given)"


def _stats_ms(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "median_ms": round(1000 * statistics.median(s), 4),
        "p90_ms": round(1000 * s[int(0.9 * (len(s) - 1))], 4),
        "min_ms": round(1000 * s[0], 4),
        "n": len(s),
    }


def _time_calls(fn: Callable[[], Any], min_time: float, *, min_n: int = 5) -> list[float]:
    for _ in range(3):
        fn()
    out: list[float] = []
    start = time.perf_counter()
    while len(out) < min_n or (time.perf_counter() - start < min_time and len(out) < 2000):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _gpu_times(backend: Any, batch: int, frames: int, min_time: float) -> list[float]:
    import torch

    if backend.device.type != "cuda":
        return _time_calls(lambda: backend.run_resident(batch, frames), min_time)
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]

    def once() -> float:
        start.record()
        backend.run_resident(batch, frames)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    for _ in range(3):
        once()
    out: list[float] = []
    t0 = time.perf_counter()
    while len(out) < 5 or (time.perf_counter() - t0 < min_time and len(out) < 2000):
        out.append(once())
    return out


def _backends(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from emostream.engine.gpu.vocoder_backend import TorchVocoderBackend

    cuda = torch.device(args.device).type == "cuda"
    configs = {"eager_fp32": (torch.float32, False)}
    if cuda:
        configs.update(
            eager_fp16=(torch.float16, False),
            graph_fp32=(torch.float32, True),
            graph_fp16=(torch.float16, True),
        )
    out: dict[str, Any] = {}
    for name, (dtype, graphs) in configs.items():
        import copy

        out[name] = TorchVocoderBackend(
            copy.deepcopy(model), device=args.device, dtype=dtype, cuda_graphs=graphs
        )
    return out


# -- sections --------------------------------------------------------------------------


def bench_latency(backends: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for name, backend in backends.items():
        for frames in LATENCY_FRAMES:
            mel = np.full((1, 80, frames), -6.0, dtype=np.float32)
            gpu = _gpu_times(backend, 1, frames, args.min_time)
            call = _time_calls(functools.partial(backend.run, mel), args.min_time)
            res[f"{name}/{frames}"] = {
                "frames": frames,
                "emitted_audio_ms": round(1000 * EMITTED[frames] * HOP / SR, 1),
                "gpu": _stats_ms(gpu),
                "call": _stats_ms(call),
            }
            log.info("latency %s %d frames: %s", name, frames, res[f"{name}/{frames}"])
    return res


def bench_throughput(backends: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {}
    frames, emitted = 92, 64
    for name, backend in backends.items():
        for batch in (int(b) for b in args.batches.split(",")):
            mel = np.full((batch, 80, frames), -6.0, dtype=np.float32)
            try:
                call = _time_calls(functools.partial(backend.run, mel), args.min_time, min_n=3)
                gpu = _gpu_times(backend, batch, frames, args.min_time)
            except RuntimeError as exc:  # e.g. out of memory on a small device
                res[f"{name}/{batch}"] = {"error": repr(exc)}
                continue
            med = statistics.median(call)
            res[f"{name}/{batch}"] = {
                "batch": batch,
                "frames": frames,
                "call": _stats_ms(call),
                "gpu": _stats_ms(gpu),
                "realtime_streams": round(batch * emitted * HOP / SR / med, 1),
                "realtime_streams_gpu_only": round(
                    batch * emitted * HOP / SR / statistics.median(gpu), 1
                ),
            }
            log.info("throughput %s batch %d: %s", name, batch, res[f"{name}/{batch}"])
    return res


def _chunked(
    run: Callable[[npt.NDArray[np.float32]], Any], mel: npt.NDArray[np.float32], spec: BucketSpec
) -> npt.NDArray[np.float32]:
    total = mel.shape[1]
    parts = []
    for w in SCHEDULE.windows(total):
        frames = mel[:, w.lo : w.hi]
        length = spec.frames_bucket(frames.shape[1])
        side = pad_side(w, total)
        audio = np.asarray(run(pad_frames(frames, length, value=silence_level(), side=side)[None]))[
            0
        ]
        skip = (length - frames.shape[1]) * HOP if side == "left" else 0
        a = skip + w.trim_left * HOP
        parts.append(audio[a : a + w.emitted * HOP].astype(np.float32))
    return np.concatenate(parts)


def bench_accuracy(
    backends: dict[str, Any], mel: npt.NDArray[np.float32], source: str
) -> dict[str, Any]:
    import torch

    spec = BucketSpec()
    one_shot: dict[str, npt.NDArray[np.float32]] = {}
    res: dict[str, Any] = {"mel": source, "frames": int(mel.shape[1])}
    for name, backend in backends.items():
        if name.startswith("graph"):
            continue
        with torch.inference_mode():
            x = torch.from_numpy(mel[None]).to(backend.device, backend.dtype)
            one_shot[name] = backend.model(x)[0, 0].float().cpu().numpy()
    if "eager_fp16" in one_shot:
        res["fp16_vs_fp32_one_shot_snr_db"] = round(
            snr_db(one_shot["eager_fp32"], one_shot["eager_fp16"]), 2
        )
    for name, backend in backends.items():
        ref_name = "eager_" + name.split("_")[1]
        streamed = _chunked(backend.run, mel, spec)
        res[f"{name}_chunked_vs_one_shot_snr_db"] = round(snr_db(one_shot[ref_name], streamed), 2)
        res[f"{name}_chunked_vs_fp32_one_shot_snr_db"] = round(
            snr_db(one_shot["eager_fp32"], streamed), 2
        )
    log.info("accuracy: %s", res)
    return res


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


async def _engine_ramp(
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


# -- main ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import torch

    raw_argv = sys.argv[1:] if argv is None else argv
    result: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "emostream bench vocoder " + " ".join(raw_argv),
        "device": (
            torch.cuda.get_device_name(0)
            if torch.device(args.device).type == "cuda"
            else platform.processor() or platform.machine()
        ),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "model": "random" if args.random_weights else f"hifigan_v1_{args.name}",
    }
    out = Path(args.out) if args.out else None

    def save() -> None:
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1))

    model = _load_model(args)
    mel, source = _real_mel(args)
    backends = _backends(model, args)
    sections = set(args.sections.split(","))
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("latency", lambda: bench_latency(backends, args)),
        ("throughput", lambda: bench_throughput(backends, args)),
        ("accuracy", lambda: bench_accuracy(backends, mel, source)),
    ]
    best = backends.get("graph_fp16") or backends["eager_fp32"]
    if args.compile:
        best.compile()

    def engine_progress(partial: dict[str, Any]) -> None:
        result["engine"] = partial
        save()

    steps.append(("engine", lambda: asyncio.run(_engine_ramp(best, mel, args, engine_progress))))
    failed = 0
    for name, step in steps:
        if name not in sections:
            continue
        t0 = time.perf_counter()
        try:
            result[name] = step()
        except Exception as exc:
            log.exception("section %s failed", name)
            result[name] = {"error": repr(exc)}
            failed += 1
        result.setdefault("seconds", {})[name] = round(time.perf_counter() - t0, 1)
        save()
    result["summary"] = _summary(result)
    save()
    print(json.dumps(result["summary"], indent=1))
    return 1 if failed else 0


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    lat = result.get("latency", {})
    for key in ("graph_fp16/30", "graph_fp16/92", "eager_fp16/30", "eager_fp32/30"):
        if key in lat and "gpu" in lat[key]:
            s[f"batch1_{key.replace('/', '_')}f_gpu_ms"] = lat[key]["gpu"]["median_ms"]
            s[f"batch1_{key.replace('/', '_')}f_call_ms"] = lat[key]["call"]["median_ms"]
    thr = result.get("throughput", {})
    for key, val in thr.items():
        if "realtime_streams" in val:
            s.setdefault("realtime_streams_by_config", {})[key] = val["realtime_streams"]
    acc = result.get("accuracy", {})
    for key in ("fp16_vs_fp32_one_shot_snr_db", "graph_fp16_chunked_vs_one_shot_snr_db"):
        if key in acc:
            s[key] = acc[key]
    eng = result.get("engine", {})
    if "max_streams_zero_late" in eng:
        s["max_streams_zero_late"] = eng["max_streams_zero_late"]
    return s


if __name__ == "__main__":
    raise SystemExit(main())
