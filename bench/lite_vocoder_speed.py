"""ONNX Runtime speed of the light CPU vocoder (emostream.networks.lite_vocoder), as JSON.

    .venv/bin/python bench/lite_vocoder_speed.py [--weights lite_vocoder_fp16.pt] [--seconds 10]

Without ``--weights`` the default-size model with random weights is measured (the speed does
not depend on the values). The mel is real teacher speech from ``models/corpus/v1`` (random
numbers when that folder is absent), ``--seconds`` long. Reported per thread count: the
one-shot real-time factor (best of ``--repeats``) and the chunked one (``--chunk`` frames a
window, ``--context`` frames each side), plus the chunked-vs-one-shot SNR in ORT for a few
contexts (meaningful for trained weights: they decide how much context 40 dB needs).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.networks.lite_vocoder import (
    CONTEXT_FRAMES,
    LiteVocoder,
    OnnxLiteVocoder,
    chunk_snr,
    decode_chunked,
)


def speech_mel(frames: int) -> npt.NDArray[np.float32]:
    shards = sorted((ROOT / "models" / "corpus" / "v1").glob("*.npz.xz"))
    if not shards:
        rng = np.random.default_rng(0)
        return (rng.standard_normal((80, frames)) * 2.0 - 6.0).astype(np.float32)
    from train.corpus import dequantize_mel, read_shard

    parts, n = [], 0
    for u in read_shard(shards[0]):
        parts.append(dequantize_mel(u.mel))
        n += u.mel.shape[0]
        if n >= frames:
            break
    return np.ascontiguousarray(np.concatenate(parts)[:frames].T)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--weights", type=Path, default=None, help="lite_vocoder_fp16.pt")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--chunk", type=int, default=48)
    p.add_argument("--context", type=int, default=CONTEXT_FRAMES)
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.weights is not None:
        model = LiteVocoder.load(a.weights)
    else:
        torch.manual_seed(0)
        model = LiteVocoder().eval()
    frames = round(a.seconds * model.sample_rate / model.hop_length)
    mel = speech_mel(frames)
    audio_s = mel.shape[1] * model.hop_length / model.sample_rate
    result: dict[str, object] = {
        "weights": str(a.weights) if a.weights else "random",
        "config": model.config.__dict__,
        "parameters": model.num_parameters(),
        "audio_seconds": round(audio_s, 2),
        "chunk": a.chunk,
        "context": a.context,
    }
    with tempfile.TemporaryDirectory() as tmp:
        fp16 = model.save(Path(tmp) / "lite_vocoder_fp16.pt")
        result["fp16_mb"] = round(fp16.stat().st_size / 1e6, 2)
        onnx = model.export_onnx(Path(tmp) / "lite.onnx")
        ref = model.decode(mel)
        for threads in [int(t) for t in a.threads.split(",")]:
            ort = OnnxLiteVocoder(onnx, threads=threads)
            got = ort(mel)  # warm-up
            oneshot = best_of(partial(ort, mel), a.repeats)
            chunked = best_of(
                partial(decode_chunked, ort, mel, chunk=a.chunk, context=a.context), a.repeats
            )
            result[f"threads_{threads}"] = {
                "rtf_oneshot": round(oneshot / audio_s, 4),
                "rtf_chunked": round(chunked / audio_s, 4),
                "x_realtime_oneshot": round(audio_s / oneshot, 1),
                "max_abs_diff_vs_torch": float(np.max(np.abs(got - ref))),
            }
        ort = OnnxLiteVocoder(onnx, threads=1)
        short = np.ascontiguousarray(mel[:, : min(mel.shape[1], 400)])
        result["chunk_snr_db"] = {
            str(c): round(chunk_snr(ort, short, chunk=a.chunk, context=c), 1)
            for c in sorted({4, 8, 12, 16, 20, a.context, CONTEXT_FRAMES})
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
