"""The acoustic model's own mels as a corpus for the light vocoder (student_mels)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from train import corpus
from train.student_mels import draw_controls, run
from train.vocoder_gan import ShardPool

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

    from emostream.networks.acoustic import AcousticModel
    from train.student_mels import predict

    utts = list(itertools.islice(corpus.read_shard(min(V1.glob("*.npz.xz"))), 6))
    model = AcousticModel.load(shipped_model)
    cpu = torch.device("cpu")
    neutral = predict(model, utts, np.random.default_rng(0), emotion_share=0.0, device=cpu)
    moved = predict(model, utts, np.random.default_rng(0), emotion_share=1.0, device=cpu)
    assert [r.utt for r in moved] == [r.utt for r in neutral] == [u.utt for u in utts]
    for a, b in zip(neutral, moved, strict=True):
        assert 0.5 * a.mel.shape[0] < b.mel.shape[0] < 2.0 * a.mel.shape[0]


def test_aligned_mels_keep_the_teachers_timeline_and_audio(
    shipped_model: Path, tmp_path: Path
) -> None:
    """``--aligned``: teacher-forced mels, frame for frame on the teacher's audio (linked
    beside the shard), so the vocoder can learn the model's mels → the teacher's waveform."""
    src, out = tmp_path / "corpus", tmp_path / "gta"
    shard = min(V1.glob("*.npz.xz"))
    utts = list(itertools.islice(corpus.read_shard(shard), 4))
    recs = [corpus.Record.from_utterance(u) for u in utts]
    with np.load(V1 / "speakers.npz") as z:  # v1 keeps per-speaker GE2E means only
        spk = {k: z[k] for k in z.files}
    for r in recs:
        r.ge2e = spk[r.speaker].astype(np.float16)
        r.audio = corpus.frame_audio(np.zeros(r.mel.shape[0] * 256, np.float32), r.mel.shape[0])
    corpus.write_shard(recs, src / "a.npz.xz", preset=1)
    assert run(src, shipped_model, out, batch=3, device="cpu", aligned=True) == 4
    by_utt = {u.utt: u for u in utts}
    kept = corpus.read_audio(out / "a.npz.xz")
    for p in corpus.read_shard(out / "a.npz.xz"):
        teacher = by_utt[p.utt]
        assert np.array_equal(p.durations, teacher.durations)
        assert p.mel.shape == teacher.mel.shape and not np.array_equal(p.mel, teacher.mel)
        # close to the teacher's mel (the shipped model, teacher-forced), not noise
        diff = np.abs(corpus.dequantize_mel(p.mel) - corpus.dequantize_mel(teacher.mel)).mean()
        assert diff < 0.6
        assert len(kept[p.utt]) == p.mel.shape[0] * 256
    pool = ShardPool(out, held=1, audio=True)
    assert pool.poll() == 3
