"""The acoustic model's own mels as a corpus for the light vocoder (student_mels)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from emostream.train import corpus
from emostream.train.student_mels import draw_controls, run
from emostream.train.vocoder_gan import ShardPool

V1 = Path(__file__).resolve().parents[2] / "models" / "corpus" / "v1"


@pytest.fixture(scope="module")
def shipped_model() -> Path:
    """The shipped acoustic model (a random tiny one predicts zero-length speech)."""
    return min((V1.parents[1] / "acoustic").glob("emostream-fs2-*.onnx"))


def test_controls_stay_in_range() -> None:
    c = draw_controls(np.random.default_rng(0), 500)
    assert c.shape == (500, 5)
    assert 0.85 <= c[:, 0].min() and c[:, 0].max() <= 1.2
    assert -4 <= c[:, 1].min() and c[:, 1].max() <= 4 and c[:, 1].std() > 0.5
    assert (c[:, 4] == 1).all()


def test_converts_each_shard_once_with_the_models_own_mels(
    shipped_model: Path, tmp_path: Path
) -> None:
    src, out = tmp_path / "corpus", tmp_path / "pred"
    shard = min(V1.glob("*.npz.xz"))
    utts = list(itertools.islice(corpus.read_shard(shard), 6))
    corpus.write_shard([corpus.Record.from_utterance(u, keep_ge2e=True) for u in utts],
                       src / "a.npz.xz", preset=1)  # fmt: skip
    assert run(src, shipped_model, out, batch=4, device="cpu") == 6
    pred = list(corpus.read_shard(out / "a.npz.xz"))
    assert [p.utt for p in sorted(pred, key=lambda p: p.utt)] == sorted(u.utt for u in utts)
    by_utt = {u.utt: u for u in utts}
    for p in pred:
        teacher = by_utt[p.utt]
        assert (p.ids == teacher.ids).all() and p.mel.shape[1] == 80
        # The model's own timing (free-running, trimmed as served), not the teacher's.
        assert int(p.durations.sum()) == p.mel.shape[0] > 0
        assert not np.array_equal(p.durations, teacher.durations)
    # A second pass converts nothing; a new shard is picked up; the vocoder's pool reads both.
    assert run(src, shipped_model, out, batch=4, device="cpu") == 0
    corpus.write_shard([corpus.Record.from_utterance(u, keep_ge2e=True) for u in utts[:2]],
                       src / "b.npz.xz", preset=1)  # fmt: skip
    assert run(src, shipped_model, out, batch=4, device="cpu") == 2
    pool = ShardPool([src, out], held=2)
    assert pool.poll() == 6 + 2 + 6 + 2 - 2 and len(pool.held_out) == 2


def test_emotion_lines_are_spoken_as_served(shipped_model: Path) -> None:
    """An emotion label acts through its prosody profile, as the voice serves it; the
    model's untrained label rows made it say 1-32 frames of a 120-300 frame line (every
    shipped version: v0.3 and v0.4 alike), and a line that came out empty was dropped."""
    import torch

    from emostream.models.acoustic import AcousticModel
    from emostream.train.student_mels import predict

    utts = list(itertools.islice(corpus.read_shard(min(V1.glob("*.npz.xz"))), 6))
    model = AcousticModel.load(shipped_model)
    cpu = torch.device("cpu")
    neutral = predict(model, utts, np.random.default_rng(0), emotion_share=0.0, device=cpu)
    moved = predict(model, utts, np.random.default_rng(0), emotion_share=1.0, device=cpu)
    assert [r.utt for r in moved] == [r.utt for r in neutral] == [u.utt for u in utts]
    for a, b in zip(neutral, moved, strict=True):
        assert 0.5 * a.mel.shape[0] < b.mel.shape[0] < 2.0 * a.mel.shape[0]
