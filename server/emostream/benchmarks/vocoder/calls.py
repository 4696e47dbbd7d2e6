"""``emostream bench vocoder``'s single-call sections: ``latency`` (batch 1, chunk windows
of 30 / 60 / 92 frames, eager vs CUDA graph, fp32 vs fp16), ``throughput`` (92-frame
windows as the batch grows) and ``accuracy`` (fp16 vs fp32, chunked vs one-shot). The
command and what each figure means: :mod:`emostream.benchmarks.vocoder.command`."""

from __future__ import annotations

import argparse
import functools
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.engine.chunks import ChunkSchedule, pad_frames, pad_side, snr_db
from emostream.engine.gpu.batcher import BucketSpec
from emostream.networks.mel import silence_level

log = logging.getLogger("emostream.benchmarks.vocoder")

SR = 22050
HOP = 256
SCHEDULE = ChunkSchedule(first=16, size=64, growth=2.0, context=14)
LATENCY_FRAMES = (30, 60, 92)
EMITTED = {30: 16, 60: 32, 92: 64}  # frames of audio each window emits (context excluded)


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


def backends(model: Any, args: argparse.Namespace) -> dict[str, Any]:
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
