"""Render a teacher corpus where training runs: Kokoro on torch (GPU), features on the CPUs.

A corpus of tens of hours is hundreds of MB: it cannot travel to the GPU host, so each
training window makes its own from a small plan (token ids, units, speakers) and a seed. The
plan is made where the text front end is installed (``corpus_cli plan``); this module needs
only numpy, onnx(runtime), torch, soxr and the ``kokoro`` network package.

Several worker processes share the GPU, each with its own teacher copy: the teacher's text
side runs as one padded batch, its decoder per utterance (instance norms see whole
sequences), so concurrency, not batch size, fills the GPU. Each worker writes shards
(``corpus.write_shard``) with per-utterance GE2E embeddings from the project's ONNX speaker
encoder, and stops at its budget; a summary JSON says how many audio seconds per wall second
it made.

    python -m train.render_gpu --plan PLAN --model kokoro.onnx --out /tmp/corpus \\
        --workers 8 --budget 300
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from train import corpus

log = logging.getLogger(__name__)


def style_tables(
    speakers: list[corpus.Speaker], voices: dict[str, npt.NDArray[np.float32]]
) -> dict[str, npt.NDArray[np.float32]]:
    from train.teacher import speaker_style

    return {s.name: speaker_style(voices, s.weights, s.timbre) for s in speakers}


def _worker(rank: int, args: dict[str, Any]) -> dict[str, Any]:
    import torch

    from emostream.voices.cloning.encoder import SpeakerEncoder
    from train.kokoro_torch import KokoroTorchTeacher
    from train.teacher import load_voices

    torch.set_num_threads(1)
    torch.manual_seed(rank)
    plan = Path(args["plan"])
    jobs = corpus.load_jobs(plan / "jobs.jsonl.xz")[rank :: args["workers"]]
    speakers = [corpus.Speaker(**d) for d in json.loads((plan / "speakers.json").read_text())]
    tables = style_tables(speakers, load_voices(plan))
    teacher = KokoroTorchTeacher(Path(args["model"]), device=args["device"])
    encoder = SpeakerEncoder(threads=1)
    out = Path(args["out"])
    deadline = args["t0"] + args["budget"]
    pending: list[corpus.Record] = []
    shards: list[str] = []
    seconds = teacher_s = feature_s = 0.0
    done = 0

    def flush() -> None:
        if pending:
            name = f"{args['prefix']}-w{rank:02d}-{len(shards):03d}.npz.xz"
            corpus.write_shard(pending, out / name, preset=1)
            shards.append(name)
            pending.clear()

    batch = int(args["batch"])
    # Neighbours in length share a batch (less padding on the text side).
    chunks = [jobs[i : i + 8 * batch] for i in range(0, len(jobs), 8 * batch)]
    for chunk in chunks:
        chunk = sorted(chunk, key=lambda j: len(j.tokens))
        for i in range(0, len(chunk), batch):
            if time.time() > deadline:
                break
            group = chunk[i : i + batch]
            t = time.perf_counter()
            outs = teacher.batch([j.tokens for j in group], [tables[j.speaker] for j in group])
            teacher_s += time.perf_counter() - t
            t = time.perf_counter()
            for job, res in zip(group, outs):
                rec = corpus.features(job, res.audio, res.token_frames, res.f0,
                                      keep_audio=bool(args.get("keep_audio")))  # fmt: skip
                if rec.audio16k is not None and len(rec.audio16k) >= 1600:
                    rec.ge2e = encoder.embed_audio(rec.audio16k).astype(np.float16)
                rec.audio16k = None
                seconds += rec.mel.shape[0] * corpus.MEL.hop_length / corpus.MEL.sample_rate
                pending.append(rec)
                done += 1
            feature_s += time.perf_counter() - t
            if len(pending) >= args["shard_utts"]:
                flush()
        if time.time() > deadline:
            break
    flush()
    return {
        "rank": rank,
        "utterances": done,
        "audio_seconds": round(seconds, 1),
        "teacher_seconds": round(teacher_s, 1),
        "feature_seconds": round(feature_s, 1),
        "shards": shards,
    }


def render(
    plan: Path,
    model: Path,
    out: Path,
    *,
    workers: int = 8,
    batch: int = 8,
    budget_s: float = 300.0,
    device: str = "cuda",
    prefix: str = "gpu",
    shard_utts: int = 200,
    keep_audio: bool = False,
) -> dict[str, Any]:
    """Render ``plan``'s jobs with ``workers`` processes until done or ``budget_s`` passes.
    ``keep_audio``: also write each shard's teacher audio at the mel's rate beside it
    (``corpus.audio_path``; ~2.6 GB per 10 h), for a vocoder trained on it."""
    import multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    args = {
        "plan": str(plan),
        "model": str(model),
        "out": str(out),
        "workers": workers,
        "batch": batch,
        "budget": budget_s,
        "device": device,
        "prefix": prefix,
        "shard_utts": shard_utts,
        "keep_audio": keep_audio,
        "t0": t0,
    }
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(_worker, [(r, args) for r in range(workers)])
    wall = time.time() - t0
    audio = sum(r["audio_seconds"] for r in results)
    summary = {
        "utterances": sum(r["utterances"] for r in results),
        "audio_hours": round(audio / 3600, 3),
        "wall_seconds": round(wall, 1),
        "x_real_time": round(audio / wall, 1),
        "workers": workers,
        "batch": batch,
        "device": device,
        "per_worker": results,
    }
    (out / f"{prefix}-render-summary.json").write_text(json.dumps(summary, indent=1))
    speakers = [corpus.Speaker(**d) for d in json.loads((plan / "speakers.json").read_text())]
    brief = {k: v for k, v in summary.items() if k != "per_worker"}
    corpus.write_manifest(out, speakers, {"render": brief})
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="train.render_gpu")
    p.add_argument(
        "--plan", type=Path, required=True, help="jobs.jsonl.xz, speakers.json, voices.npz"
    )
    p.add_argument("--model", type=Path, required=True, help="Kokoro int8 ONNX")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--budget", type=float, default=300.0, help="seconds")
    p.add_argument("--device", default="cuda")
    p.add_argument("--prefix", default="gpu")
    p.add_argument("--keep-audio", action="store_true", help="write the audio beside each shard")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    s = render(
        a.plan,
        a.model,
        a.out,
        workers=a.workers,
        batch=a.batch,
        budget_s=a.budget,
        device=a.device,
        prefix=a.prefix,
        keep_audio=a.keep_audio,
    )
    log.info("%s", json.dumps({k: v for k, v in s.items() if k != "per_worker"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
