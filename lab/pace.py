"""How fast does an acoustic model speak against its teacher, on the teacher's own lines?

The duration predictor is trained on ``log(d + 1)``, so it predicts something like the
geometric mean of a unit's durations: shorter than the teacher on average, and the more the
teacher varies (more speakers, more styles), the shorter. Window 10 spoke 4.4 % faster than
the teacher. This scores models on a corpus rendered by the teacher (``corpus_cli synth``,
any size; on CPU a few hundred lines take minutes), per language:

* ``pace``: the model's predicted frames over the teacher's, summed over the utterances
  (below 1: faster), as the shipped model runs it (its ``AcousticConfig.pace`` applied,
  integer frames, pauses included), and ``raw_pace`` before any of that;
* ``length_spread``: the standard deviation of the per-utterance log length ratio;
* ``unit_mae``: the mean absolute per-unit error in frames.

The figure for ``ship.py --pace`` is a version's ``raw_pace`` on speakers it never saw::

    corpus_cli text --out T --en 60 --zh 60 --seed 777
    corpus_cli plan --text T --voices V --out P --seed 777 --limit 60 \\
        --only af_river,am_echo,bf_alice,bm_fable,zf_xiaoyi,zm_yunxia
    corpus_cli synth --plan P --model kokoro.onnx --voices V --out C --device cpu
    python -m lab.pace --corpus C --model models/acoustic/emostream-fs2-v0.4.onnx [--symbols] -o OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from emostream.networks.acoustic import AcousticModel, controls_tensor, predicted_frames
from emostream.networks.acoustic_onnx import Prosody
from emostream.text.phonemes import LANG_ZH
from lab.acoustic_quality import run_record
from train.train import Item, load_corpus


def is_mandarin(it: Item) -> bool:
    return bool((it.langs == LANG_ZH).any())


def is_english(it: Item) -> bool:
    return not is_mandarin(it)


LANGS: dict[str, Callable[[Item], bool]] = {"en": is_english, "zh": is_mandarin}


def predicted(model: AcousticModel, it: Item) -> tuple[np.ndarray, np.ndarray]:
    """Frames per unit for ``it``'s units and speaker: raw (the predictor's ``exp - 1``)
    and as served (``infer_units``: the config's pace, pauses, integer frames)."""
    ids = torch.from_numpy(it.ids)[None]
    tones = torch.from_numpy(it.tones)[None]
    langs = torch.from_numpy(it.langs)[None]
    speaker = torch.from_numpy(it.speaker)[None]
    emotion = torch.zeros(1, dtype=torch.long)
    intensity = torch.ones(1)
    with torch.inference_mode():
        x, pad = model.encode(ids, tones, langs, speaker, emotion, intensity)
        raw = predicted_frames(model.duration(x, pad))[0].numpy()
        _, served = model.infer_units(ids, tones, langs, speaker, emotion, intensity,
                                      controls_tensor(Prosody()))  # fmt: skip
    return raw.astype(np.float64), served[0].numpy().astype(np.float64)


def pace_of(model: AcousticModel, items: Sequence[Item]) -> dict[str, float]:
    true_total = raw_total = served_total = 0.0
    log_ratios, unit_err, units = [], 0.0, 0
    for it in items:
        raw, served = predicted(model, it)
        truth = it.durations.astype(np.float64)
        true_total += truth.sum()
        raw_total += raw.sum()
        served_total += served.sum()
        log_ratios.append(np.log((served.sum() + 1.0) / (truth.sum() + 1.0)))
        unit_err += float(np.abs(served - truth).sum())
        units += len(truth)
    return {
        "utterances": len(items),
        "teacher_frames": true_total,
        "pace": round(served_total / true_total, 4),
        "raw_pace": round(raw_total / true_total, 4),
        "length_spread": round(float(np.std(log_ratios)), 4),
        "unit_mae": round(unit_err / max(units, 1), 3),
    }


def per_symbol(model: AcousticModel, items: Sequence[Item], *, min_count: int = 20
               ) -> dict[str, dict[str, float]]:  # fmt: skip
    """Served frames over the teacher's per unit symbol (those seen ``min_count`` times or
    more), most frequent first: does the model shorten a class of unit (schwas, stops)?"""
    from emostream.text.phonemes import SYMBOLS

    acc: dict[int, list[float]] = {}
    for it in items:
        _, served = predicted(model, it)
        for unit, s, t in zip(it.ids, served, it.durations.astype(np.float64), strict=True):
            a = acc.setdefault(int(unit), [0.0, 0.0, 0.0])
            a[0], a[1], a[2] = a[0] + s, a[1] + t, a[2] + 1
    rows = sorted(acc.items(), key=lambda kv: -kv[1][2])
    out: dict[str, dict[str, float]] = {}
    for u, (s, t, n) in rows:
        if n >= min_count:
            ratio = round(s / t, 3) if t else float("nan")
            out[SYMBOLS.symbols[u]] = {
                "units": n,
                "ratio": ratio,
                "teacher_frames": round(t / n, 2),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", type=Path, required=True, help="a corpus_cli synth folder")
    p.add_argument("--model", action="append", required=True,
                   help="an acoustic .onnx or model_fp16.pt (repeatable)")  # fmt: skip
    p.add_argument("--symbols", action="store_true",
                   help="also served frames over the teacher's per unit symbol")  # fmt: skip
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    items = load_corpus(a.corpus)
    if not items:
        raise SystemExit(f"no utterances in {a.corpus}")
    report: dict[str, Any] = {**run_record("lab.pace", argv), "corpus": str(a.corpus),
                              "models": {}}  # fmt: skip
    for path in a.model:
        model = AcousticModel.load(path)
        row: dict[str, Any] = {"config_pace": model.config.pace}
        for lang, wanted in LANGS.items():
            chosen = [it for it in items if wanted(it)]
            if chosen:
                row[lang] = pace_of(model, chosen)
                if a.symbols:
                    row[lang]["symbols"] = per_symbol(model, chosen)
        report["models"][path] = row
        print(path, json.dumps(row), file=sys.stderr)
    text = json.dumps(report, indent=1)
    if a.output:
        Path(a.output).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
