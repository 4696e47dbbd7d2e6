"""Kokoro on torch vs the int8 ONNX teacher: parity and throughput (CPU here, CUDA in a lease).

For each job of a plan (tokens + style): frames per token from both (how many tokens agree,
largest difference), F0 and log-mel distance when the torch decoder is given the ONNX
durations, and the torch teacher's speed at a few batch sizes. JSON to ``--out``.

    python bench/kokoro_teacher.py --plan PLAN --model kokoro.onnx --device cuda --n 24 \\
        --out /tmp/parity.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import soxr
import torch

from emostream.networks.mel import magnitude_spectrogram, mel_filterbank
from train import corpus
from train.kokoro_torch import KokoroTorchTeacher
from train.render_gpu import style_tables
from train.teacher import KokoroTeacher, load_voices


def logmel(audio24k: np.ndarray) -> np.ndarray:
    a = soxr.resample(audio24k, 24000, corpus.MEL.sample_rate).astype(np.float32)
    return np.log(
        np.maximum(mel_filterbank(corpus.MEL) @ magnitude_spectrogram(a, corpus.MEL), 1e-5)
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--plan", type=Path, required=True)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    jobs = corpus.load_jobs(a.plan / "jobs.jsonl.xz")
    by_lang = {lang: [j for j in jobs if j.lang == lang][: a.n // 2] for lang in ("en", "zh")}
    sample = by_lang["en"] + by_lang["zh"]
    speakers = [corpus.Speaker(**d) for d in json.loads((a.plan / "speakers.json").read_text())]
    tables = style_tables(speakers, load_voices(a.plan))
    cpu = KokoroTeacher(a.model, threads=4)
    gpu = KokoroTorchTeacher(a.model, device=a.device)
    rows = []
    for job in sample:
        ref = cpu(job.tokens, tables[job.speaker])
        own = gpu(job.tokens, tables[job.speaker])
        same = gpu.batch([job.tokens], [tables[job.speaker]], frames=[ref.token_frames])[0]
        d = own.token_frames - ref.token_frames
        m_ref, m_same = logmel(ref.audio), logmel(same.audio)
        n = min(m_ref.shape[1], m_same.shape[1])
        rows.append(
            {
                "utt": job.utt,
                "lang": job.lang,
                "tokens": len(ref.token_frames),  # with the two pads
                "tokens_same_frames": int((d == 0).sum()),
                "max_frame_diff": int(np.abs(d).max()),
                "total_frames": [int(ref.token_frames.sum()), int(own.token_frames.sum())],
                "f0_mae_hz_same_durations": float(np.abs(ref.f0 - same.f0).mean()),
                "mel_l1_same_durations": float(np.abs(m_ref[:, :n] - m_same[:, :n]).mean()),
            }
        )
    tokens = sum(r["tokens"] for r in rows)
    same_tokens = sum(r["tokens_same_frames"] for r in rows)
    speed = {}
    for b in (1, 8, 32):
        group = (sample * 4)[: max(b, 8)]
        gpu.batch([j.tokens for j in group[:b]], [tables[j.speaker] for j in group[:b]])
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        audio = 0.0
        for i in range(0, len(group), b):
            g = group[i : i + b]
            outs = gpu.batch([j.tokens for j in g], [tables[j.speaker] for j in g])
            audio += sum(len(o.audio) for o in outs) / 24000
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
        speed[f"batch{b}"] = round(audio / (time.perf_counter() - t), 1)
    report = {
        "device": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu",
        "utterances": len(rows),
        "tokens": tokens,
        "tokens_with_identical_frames": same_tokens,
        "fraction_identical": round(same_tokens / tokens, 4),
        "max_frame_diff": max(r["max_frame_diff"] for r in rows),
        "f0_mae_hz_same_durations": round(
            float(np.mean([r["f0_mae_hz_same_durations"] for r in rows])), 2
        ),
        "mel_l1_same_durations": round(
            float(np.mean([r["mel_l1_same_durations"] for r in rows])), 3
        ),
        "x_real_time_one_process": speed,
        "rows": rows,
    }
    a.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
