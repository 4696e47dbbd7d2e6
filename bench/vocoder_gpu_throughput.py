"""GPU throughput of the two vocoders side by side: HiFi-GAN V1 and the light one, as JSON.

    python bench/vocoder_gpu_throughput.py --v1 hifigan_v1_fp16.pt [--lite lite_vocoder_fp16.pt]
        [--batches 1,8,32,128] [--chunk 32] [--seconds 4] [--out FILE]

What the engine does per step, for each vocoder: a batch of ``B`` streams, each one chunk of
``--chunk`` mel frames plus the vocoder's own context on both sides (V1 14 frames, the light
one 29), decoded in one call (fp16 for V1, bf16 autocast + fp32 iSTFT for the light one, as
trained), synchronised, repeated for ``--seconds``. Reported per batch size: calls per second
and the real-time factor of the whole batch (audio seconds emitted per wall second, centre
only), plus peak memory. Eager PyTorch, no CUDA graphs: a like-for-like comparison, not the
engine's best figure (``bench/results/2026-12-02-h200-vocoder.md`` has V1 with graphs).
Random weights are fine for speed (``--lite`` absent: default-size random light model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.networks import hifigan, lite_vocoder
from emostream.networks.hifigan import HifiGan
from emostream.networks.lite_vocoder import LiteVocoder

SR, HOP = 22050, 256


def measure(fn: Callable[[torch.Tensor], torch.Tensor], mel: torch.Tensor, emitted: int,
            seconds: float) -> dict[str, float]:  # fmt: skip
    for _ in range(3):
        fn(mel)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn(mel)
        n += 1
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    audio_s = n * mel.shape[0] * emitted * HOP / SR
    return {
        "calls_per_s": round(n / dt, 1),
        "ms_per_call": round(1000 * dt / n, 3),
        "rtf_x": round(audio_s / dt, 1),
        "peak_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--v1", type=Path, default=None, help="V1 checkpoint (default: packaged)")
    p.add_argument("--lite", type=Path, default=None)
    p.add_argument("--batches", default="1,8,32,128")
    p.add_argument("--chunk", type=int, default=32)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    v1 = HifiGan.load("universal", device=dev, dtype=torch.float16, checkpoint=a.v1).eval()
    lite = (LiteVocoder.load(a.lite, device=dev) if a.lite else LiteVocoder().to(dev)).eval()

    @torch.inference_mode()
    def run_v1(mel: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = v1(mel.half())
        return out

    @torch.inference_mode()
    def run_lite(mel: torch.Tensor) -> torch.Tensor:
        return lite.mixed(mel, bf16=True)

    rows = []
    for b in [int(x) for x in a.batches.split(",")]:
        for name, fn, ctx in (
            ("hifigan_v1", run_v1, hifigan.CONTEXT_FRAMES),
            ("lite", run_lite, lite_vocoder.CONTEXT_FRAMES),
        ):
            mel = torch.randn(b, 80, a.chunk + 2 * ctx, device=dev) - 5.0
            row = {
                "vocoder": name,
                "batch": b,
                "context": ctx,
                **measure(fn, mel, a.chunk, a.seconds),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    report = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "chunk_frames": a.chunk,
        "v1_parameters": sum(p.numel() for p in v1.parameters()),
        "lite_parameters": lite.num_parameters(),
        "lite_weights": str(a.lite) if a.lite else "random (default size)",
        "rows": rows,
    }
    if a.out:
        a.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
