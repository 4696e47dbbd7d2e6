"""Score saved acoustic checkpoints on a validation corpus and keep the best (GPU lease).

Window 4's validation render failed at the start of the lease (its plan had no voices file),
so `train --val-corpus` saw none; the checkpoints were snapshotted while training ran and are
scored here afterwards with the trainer's own loss (teacher-forced, bf16 on CUDA):

    python3 valpick.py --val corpus_val --best run/best_fp16.pt --out logs/valpick.json \
        snaps/*.pt run/model_fp16.pt
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch

from emostream.networks.acoustic import AcousticModel
from train.train import Item, load_corpus, score


def score_file(path: Path, items: list[Item], device: torch.device) -> dict[str, float]:
    blob = torch.load(path, map_location="cpu", weights_only=False)
    losses = score(AcousticModel.load(path).to(device), items, device)
    return {"step": int(blob.get("step", -1)), **{k: round(v, 4) for k, v in losses.items()}}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--val", type=Path, required=True)
    p.add_argument("--best", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("checkpoints", type=Path, nargs="+")
    a = p.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    items = load_corpus(a.val)
    rows = []
    for c in a.checkpoints:
        try:
            rows.append({"file": str(c), **score_file(c, items, dev)})
        except (OSError, RuntimeError, KeyError, EOFError) as e:  # a snapshot copied mid-write
            rows.append({"file": str(c), "error": repr(e)})
        print(json.dumps(rows[-1]), flush=True)
    good = [r for r in rows if "mel_l1" in r]
    best = min(good, key=lambda r: r["mel_l1"])
    shutil.copy(best["file"], a.best)
    a.out.write_text(
        json.dumps({"val_utterances": len(items), "rows": rows, "best": best}, indent=1)
    )
    print("best", json.dumps(best))


if __name__ == "__main__":
    main()
