"""Average a window's fine-tuned acoustic model with the model it started from (WiSE-FT).

Each window so far has made the voices in its own corpus better and the ones outside it
worse (window 4: mel L1 on three voices left out of it rose 0.335 → 0.448 over its steps;
English WER and clone similarity on the held-out voices fell). Interpolating the weights
half-way back towards the warm start kept most of window 4's Mandarin gain and gave back
most of what English and cloning had lost (``bench/results/acoustic/2026-12-03-window4.md``).
Tensors the base lacks (layers the window added, e.g. the pitch-shape ``contour*``) are
taken from the tuned model as they are.

    .venv/bin/python models/recipes/wise.py --base models/acoustic/emostream-fs2-v0.3.onnx \\
        --tuned final.pt --alpha 0.5 --out wise05.pt

``--base`` is a shipped .onnx or a .pt (git history keeps the shipped ones:
``git show 906f00b:models/acoustic/emostream-fs2-v0.3.onnx > v0.3.onnx``); the output is a
``model_fp16.pt`` that ``ship.py`` exports (split it into ``model_fp16.pt.*`` parts).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))

from emostream.networks.acoustic import read_checkpoint


def interpolate(
    base: dict[str, torch.Tensor], tuned: dict[str, torch.Tensor], alpha: float
) -> tuple[dict[str, torch.Tensor], int]:
    """``alpha · tuned + (1 − alpha) · base`` for every float tensor both have with one
    shape (fp16 out); the rest from ``tuned``. Returns the state and how many were mixed."""
    out: dict[str, torch.Tensor] = {}
    mixed = 0
    for k, v in tuned.items():
        b = base.get(k)
        if b is not None and v.is_floating_point() and b.shape == v.shape:
            out[k] = (alpha * v.float() + (1.0 - alpha) * b.float()).half()
            mixed += 1
        else:
            out[k] = v
    return out, mixed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--tuned", type=Path, required=True)
    p.add_argument("--alpha", type=float, default=0.5, help="share of the tuned model")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    tuned = torch.load(a.tuned, map_location="cpu", weights_only=False)
    state, mixed = interpolate(read_checkpoint(a.base)["model"], tuned["model"], a.alpha)
    info = {"alpha": a.alpha, "base": a.base.name, "tuned_step": tuned.get("step")}
    torch.save({**tuned, "model": state, "wise": info}, a.out)
    print(f"{a.out}: {mixed} tensors mixed, {len(state) - mixed} from the tuned model", info)


if __name__ == "__main__":
    main()
