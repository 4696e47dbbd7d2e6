from pathlib import Path

import numpy as np
import pytest
import torch

from emostream.networks.acoustic import AcousticModel, Prosody, controls_tensor, length_regulate


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


def _feed(*args: torch.Tensor) -> dict[str, np.ndarray]:
    """The ONNX graph's inputs from :func:`_inputs`' tensors and a controls row."""
    names = ("ids", "tones", "langs", "speaker", "emotion", "intensity", "controls")
    return {k: t.numpy() for k, t in zip(names, args, strict=True)}


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
        feed = _feed(ids, tones, langs, spk, emo, inten, ctl)
        mel, dur = sess.run(None, feed)
        with torch.no_grad():
            tmel, tdur = m.infer(ids, tones, langs, spk, emo, inten, ctl)
        assert np.array_equal(dur, tdur.numpy())
        assert mel.shape == tuple(tmel.shape)
        assert np.abs(mel - tmel.numpy()).max() < 1e-3


def test_config_pace_slows_every_runtime_alike(tmp_path: Path) -> None:
    """A checkpoint's own pace divides its durations like the request's rate does, in torch,
    in the exported graph and after a reload from that file; pace 1 leaves them alone."""
    ort = pytest.importorskip("onnxruntime")
    m = _model()
    ids, tones, langs, spk, emo, inten = _inputs(20)
    ctl = controls_tensor(Prosody())
    with torch.no_grad():
        _, base = m.infer(ids, tones, langs, spk, emo, inten, ctl)
        m.config.pace = 0.5
        _, slow = m.infer(ids, tones, langs, spk, emo, inten, ctl)
        _, both = m.infer(ids, tones, langs, spk, emo, inten, controls_tensor(Prosody(rate=0.5)))
    assert slow.sum() > 1.8 * base.sum()
    assert both.sum() > 1.8 * slow.sum()  # the request's rate still acts on top
    path = m.export_onnx(tmp_path / "paced.onnx")
    again = AcousticModel.load(path)
    assert again.config.pace == 0.5
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    _, dur = sess.run(None, _feed(ids, tones, langs, spk, emo, inten, ctl))
    with torch.no_grad():
        _, reloaded = again.infer(ids, tones, langs, spk, emo, inten, ctl)
    assert np.array_equal(dur, slow.numpy()) and torch.equal(reloaded, slow)


def _contour_model() -> AcousticModel:
    from emostream.networks.acoustic import AcousticConfig

    torch.manual_seed(1)
    m = AcousticModel(AcousticConfig(contour=2))
    torch.nn.init.zeros_(m.duration.out.weight)
    torch.nn.init.constant_(m.duration.out.bias, 1.5)
    for layer in (m.contour.out, m.contour_proj):  # they start at zero; make them speak
        torch.nn.init.normal_(layer.weight, std=0.5)
    return m.eval()


def test_contour_starts_at_zero_so_a_warm_start_is_unchanged() -> None:
    from emostream.networks.acoustic import AcousticConfig

    plain = _model()
    grown = AcousticModel(AcousticConfig(contour=2)).eval()
    missing, unexpected = grown.load_state_dict(plain.state_dict(), strict=False)
    assert unexpected == [] and missing and all(k.startswith("contour") for k in missing)
    args = _inputs(11)
    with torch.no_grad():
        a, da = plain.infer(*args, controls_tensor(Prosody()))
        b, db = grown.infer(*args, controls_tensor(Prosody()))
    assert torch.equal(da, db) and torch.allclose(a, b, atol=1e-6)


def test_contour_changes_the_mel_and_follows_pitch_range() -> None:
    m = _contour_model()
    args = _inputs(11)
    with torch.no_grad():
        h, d = m.infer_units(*args, controls_tensor(Prosody()))
        flat_h, _ = m.infer_units(*args, controls_tensor(Prosody(pitch_range=0.0)))
    assert h.shape[-1] == 256 + 2
    assert h[..., 256:].abs().sum() > 0  # some units are voiced and shaped
    assert flat_h[..., 256:].abs().sum() == 0  # pitch_range 0 flattens shapes too
    x, _pad = m.regulate(h, d)
    x0, _ = m.regulate(torch.cat([h[..., :256], torch.zeros_like(h[..., 256:])], -1), d)
    assert x.shape == (1, int(d.sum()), 256) and not torch.allclose(x, x0)


def test_contour_model_trains_and_exports(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    m = _contour_model()
    ids = torch.randint(4, 100, (2, 9))
    d = torch.randint(1, 4, (2, 9))
    z = torch.zeros_like(ids)
    m.train()
    out = m(ids, z, z + 1, torch.randn(2, 256), z[:, 0], torch.ones(2), d,
            torch.randn(2, 9), torch.randn(2, 9), torch.randn(2, 9, 2))  # fmt: skip
    assert out["contour"].shape == (2, 9, 2)
    out["mel"].mean().backward()
    assert m.contour_proj.weight.grad is not None and m.contour_proj.weight.grad.abs().sum() > 0
    m.eval()
    sess = ort.InferenceSession(
        str(m.export_onnx(tmp_path / "c.onnx")), providers=["CPUExecutionProvider"]
    )
    for n in (7, 30):  # another length than the export's example: nothing baked in
        ids, tones, langs, spk, emo, inten = _inputs(n)
        ctl = controls_tensor(Prosody(pitch_range=1.3))
        mel, dur = sess.run(None, _feed(ids, tones, langs, spk, emo, inten, ctl))
        with torch.no_grad():
            tmel, tdur = m.infer(ids, tones, langs, spk, emo, inten, ctl)
        assert np.array_equal(dur, tdur.numpy())
        assert np.abs(mel - tmel.numpy()).max() < 1e-3
