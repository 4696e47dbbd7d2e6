"""lab.pace: a model's frames against the teacher's, per language."""

import json
import math
from pathlib import Path

import pytest
import torch

from emostream.networks.acoustic import AcousticConfig, AcousticModel
from lab import pace
from tests.train.test_train import TINY, tiny_corpus  # noqa: F401  (the fixture)
from train.train import load_corpus


def _model(frames_per_unit: float, config_pace: float = 1.0) -> AcousticModel:
    torch.manual_seed(0)
    m = AcousticModel(AcousticConfig(**TINY, pace=config_pace))  # type: ignore[arg-type]
    torch.nn.init.zeros_(m.duration.out.weight)
    torch.nn.init.constant_(m.duration.out.bias, math.log(frames_per_unit + 1.0))
    return m.eval()


def test_pace_per_language(tiny_corpus: Path, tmp_path: Path) -> None:  # noqa: F811
    items = load_corpus(tiny_corpus)
    model = _model(2.5, config_pace=0.5)
    model.save(tmp_path / "m.pt")
    out = tmp_path / "pace.json"
    assert pace.main(["--corpus", str(tiny_corpus), "--model", str(tmp_path / "m.pt"),
                      "-o", str(out), "--threads", "1"]) == 0  # fmt: skip
    row = json.loads(out.read_text())["models"][str(tmp_path / "m.pt")]
    assert row["config_pace"] == 0.5
    langs = [lang for lang in ("en", "zh") if lang in row]
    assert langs
    for lang in langs:
        chosen = [it for it in items if pace.LANGS[lang](it)]
        units = sum(len(it.durations) for it in chosen)
        frames = sum(int(it.durations.sum()) for it in chosen)
        assert row[lang]["utterances"] == len(chosen)
        assert row[lang]["raw_pace"] == pytest.approx(2.5 * units / frames, abs=1e-3)
        # served: the config's pace doubles every unit; whole frames lose under one each
        served = row[lang]["pace"] * frames
        assert abs(served - 5.0 * units) <= len(chosen)
