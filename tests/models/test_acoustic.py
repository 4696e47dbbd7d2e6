from pathlib import Path

import numpy as np
import pytest
import torch

from emostream.models.acoustic import AcousticModel, Prosody, controls_tensor, length_regulate


def _model() -> AcousticModel:
    torch.manual_seed(0)
    m = AcousticModel()
    torch.nn.init.zeros_(m.duration.out.weight)
    torch.nn.init.constant_(m.duration.out.bias, 1.5)  # ≈3.5 frames per unit
    return m.eval()


def _inputs(n: int) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(4, 100, (1, n))
    return (
        ids,
        torch.zeros_like(ids),
        torch.ones_like(ids),
        torch.randn(1, 256),
        torch.zeros(1, dtype=torch.long),
        torch.ones(1),
    )


def test_length_regulate() -> None:
    x = torch.arange(6, dtype=torch.float32).view(1, 3, 2)
    frames, pad = length_regulate(x, torch.tensor([[2, 0, 1]]))
    assert frames[0].tolist() == [[0, 1], [0, 1], [4, 5]]
    assert not pad.any()


def test_fp16_checkpoint_fits_budget(tmp_path: Path) -> None:
    m = AcousticModel()
    m.save(tmp_path / "a.pt")
    assert (tmp_path / "a.pt").stat().st_size <= 40_000_000
    back = AcousticModel.load(tmp_path / "a.pt")
    assert back.config == m.config


def test_training_forward_shapes() -> None:
    m = AcousticModel()
    ids = torch.randint(4, 100, (2, 9))
    ids[1, 6:] = 0
    d = torch.randint(1, 4, (2, 9)) * (ids > 0)
    z = torch.zeros_like(ids)
    out = m(
        ids,
        z,
        z + 1,
        torch.randn(2, 256),
        z[:, 0],
        torch.ones(2),
        d,
        torch.randn(2, 9),
        torch.randn(2, 9),
    )
    assert out["mel"].shape == (2, int(d.sum(1).max()), 80)
    assert out["frame_pad"][1].sum() == d.sum(1).max() - d[1].sum()


def test_controls_move_duration_and_pitch() -> None:
    m = _model()
    args = _inputs(15)
    with torch.no_grad():
        _, base_d = m.infer(*args, controls_tensor(Prosody()))
        fast_mel, fast_d = m.infer(*args, controls_tensor(Prosody(rate=2.0)))
        _, slow_d = m.infer(*args, controls_tensor(Prosody(pause=3.0)))
    assert fast_d.sum() < base_d.sum() < slow_d.sum()
    assert fast_mel.shape[1] == fast_d.sum()


def test_onnx_export_matches_torch(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    m = _model()
    path = m.export_onnx(tmp_path / "a.onnx")
    assert not m.training
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for n in (7, 30):
        ids, tones, langs, spk, emo, inten = _inputs(n)
        ctl = controls_tensor(Prosody(pitch_shift=2.0))
        feed = {
            "ids": ids.numpy(),
            "tones": tones.numpy(),
            "langs": langs.numpy(),
            "speaker": spk.numpy(),
            "emotion": emo.numpy(),
            "intensity": inten.numpy(),
            "controls": ctl.numpy(),
        }
        mel, dur = sess.run(None, feed)
        with torch.no_grad():
            tmel, tdur = m.infer(ids, tones, langs, spk, emo, inten, ctl)
        assert np.array_equal(dur, tdur.numpy())
        assert mel.shape == tuple(tmel.shape)
        assert np.abs(mel - tmel.numpy()).max() < 1e-3
