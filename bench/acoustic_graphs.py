"""FS2 inference on a GPU: eager batched calls vs the bucketed CUDA graphs
(emostream.engine.gpu.acoustic_graphs): per-call wall and host CPU time, and the largest
difference between the two outputs. Run on the device from the repo root:

    PYTHONPATH=server python3 bench/acoustic_graphs.py [--device cuda]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from emostream.engine.gpu.acoustic_graphs import GraphedAcoustic
from emostream.voices.acoustic import AcousticFamily, find_models_dir, infer_batch
from emostream.voices.base import Controls

TEXTS = (
    "Thanks for the follow, welcome to the stream!",
    "Grab a seat and enjoy the show.",
    "That is a great question, let me think about it for a second.",
)


def timed(fn, n: int = 20) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - wall) / n * 1e3, (time.process_time() - cpu) / n * 1e3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16, 32])
    args = p.parse_args()
    models = find_models_dir()
    assert models is not None
    family = AcousticFamily(models, decoder=None, device=args.device)
    voice = family.stock_voices()[0]
    graphed = GraphedAcoustic(family.model, device=args.device)
    t0 = time.perf_counter()
    graphed.capture_all()
    print(f"capture: {time.perf_counter() - t0:.1f} s, "
          f"{torch.cuda.memory_reserved() / 2**20:.0f} MiB reserved")  # fmt: skip
    for b in args.batches:
        reqs = [voice.prepare(TEXTS[i % 3], Controls()) for i in range(b)]
        e_wall, e_cpu = timed(lambda r=reqs: infer_batch(family.model, r, device=args.device))
        g_wall, g_cpu = timed(lambda r=reqs: graphed(r))
        diff = max(
            float(np.abs(a.frames - c.frames).max())
            for a, c in zip(graphed(reqs), infer_batch(family.model, reqs, device=args.device))
        )
        print(f"batch {b:2d}: eager {e_wall:6.2f} ms wall {e_cpu:6.2f} ms cpu | graphs "
              f"{g_wall:6.2f} ms wall {g_cpu:6.2f} ms cpu | max |diff| {diff:.2e} "
              f"| eager batches {graphed.eager_batches}")  # fmt: skip


if __name__ == "__main__":
    main()
