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
import json
import logging
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.benchmarks.vocoder.calls import backends as make_backends
from emostream.benchmarks.vocoder.calls import bench_accuracy, bench_latency, bench_throughput
from emostream.benchmarks.vocoder.streams import engine_ramp

log = logging.getLogger("emostream.benchmarks.vocoder")


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
    from emostream.networks.hifigan import HifiGan, HifiGanConfig

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
    backends = make_backends(model, args)
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

    steps.append(("engine", lambda: asyncio.run(engine_ramp(best, mel, args, engine_progress))))
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
