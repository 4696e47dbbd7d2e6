"""The light CPU vocoder: shapes, the iSTFT, exact chunking (torch and ONNX Runtime), files."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import torch
import torch.nn.functional as F

from emostream.engine.chunks import snr_db
from emostream.networks.lite_vocoder import (
    CONTEXT_FRAMES,
    LiteVocoder,
    LiteVocoderConfig,
    OnnxLiteVocoder,
    chunk_snr,
    decode_chunked,
)

SMALL = LiteVocoderConfig(dim=32, intermediate=64, blocks=3)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # Two threads on a busy 2-core machine spin against each other.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def scrambled(config: LiteVocoderConfig | None = None, seed: int = 0) -> LiteVocoder:
    """Random weights loud enough that every layer's reach shows in the output (the
    default init's small layer scale hides far context)."""
    torch.manual_seed(seed)
    model = LiteVocoder(config or LiteVocoderConfig()).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma"):
                p.fill_(1.0)
            elif p.dim() >= 2:
                p.normal_(0.0, 1.0 / math.sqrt(p[0].numel()))
    return model


def speech_like_mel(frames: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((80, frames)) * 2.0 - 6.0).astype(np.float32)


@pytest.fixture(scope="module")
def default_model() -> LiteVocoder:
    return scrambled()


@pytest.fixture(scope="module")
def onnx_path(default_model: LiteVocoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return default_model.export_onnx(tmp_path_factory.mktemp("lite") / "lite.onnx")


def test_config_context_and_size() -> None:
    cfg = LiteVocoderConfig()
    assert cfg.context_frames == CONTEXT_FRAMES == 29  # 3 + 8 * 3 + 2
    assert LiteVocoderConfig(blocks=2, kernel=5).context_frames == 3 + 2 * 2 + 2
    assert LiteVocoder(cfg).num_parameters() == 4_475_106
    with pytest.raises(ValueError):
        LiteVocoderConfig(kernel=6)


@pytest.mark.parametrize("frames", [1, 2, 7, 40])
def test_output_length(frames: int) -> None:
    model = LiteVocoder(SMALL).eval()
    mel = torch.randn(3, 80, frames) - 6.0
    with torch.no_grad():
        audio = model(mel)
    assert audio.shape == (3, frames * 256)
    assert torch.isfinite(audio).all() and audio.abs().max() <= 1.0


def test_istft_inverts_v1_framing() -> None:
    """The synthesis half inverts an STFT framed like V1's mels (reflect pad 384, no
    centring), sample-aligned, edges included."""
    model = LiteVocoder(SMALL)
    x = torch.randn(2, 30 * 256, dtype=torch.float64).float()
    xp = F.pad(x[:, None], (384, 384), mode="reflect")[:, 0]
    spec = torch.stft(
        xp, 1024, 256, window=torch.hann_window(1024), center=False, return_complex=True
    )
    assert spec.shape[-1] == 30
    head = torch.cat([spec.abs().clamp(min=1e-12).log(), spec.angle()], dim=1).transpose(1, 2)
    y = model.synthesize(head)
    assert y.shape == x.shape
    assert snr_db(x.numpy(), y.numpy()) > 80.0
    # One frame late is far off: the test can tell misalignment.
    assert snr_db(x[:, :-256].numpy(), y[:, 256:].numpy()) < 10.0


def test_chunked_equals_oneshot_torch(default_model: LiteVocoder) -> None:
    mel = speech_like_mel(150)
    decode = default_model.decode
    for chunk in (14, 17, 48):
        assert chunk_snr(decode, mel, chunk=chunk, context=CONTEXT_FRAMES) >= 90.0
    # Too little context shows up (so the measure above can fail).
    assert chunk_snr(decode, mel, chunk=17, context=4) < 30.0
    assert chunk_snr(decode, mel, chunk=17, context=0) < 10.0


def test_decode_chunked_covers_every_frame() -> None:
    mel = speech_like_mel(53)
    out = decode_chunked(lambda m: np.repeat(m[0], 256), mel, chunk=10, context=3)
    assert np.array_equal(out, np.repeat(mel[0], 256))


def test_onnx_matches_torch_and_chunks(default_model: LiteVocoder, onnx_path: Path) -> None:
    ort = OnnxLiteVocoder(onnx_path, threads=1)
    for frames in (5, 37, 120):
        mel = speech_like_mel(frames, seed=frames)
        ref = default_model.decode(mel)
        got = ort(mel)
        assert got.shape == (frames * 256,)
        assert float(np.max(np.abs(got - ref))) < 1e-4
        assert snr_db(ref, got) > 60.0
    mel = speech_like_mel(150, seed=1)
    assert chunk_snr(ort, mel, chunk=17, context=CONTEXT_FRAMES) >= 60.0
    assert chunk_snr(ort, mel, chunk=17, context=4) < 30.0


def test_save_load_fp16(tmp_path: Path) -> None:
    model = LiteVocoder().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    path = model.save(tmp_path / "lite_vocoder_fp16.pt", extra={"step": 7})
    assert path.stat().st_size <= 10_000_000
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert raw["step"] == 7 and all(v.dtype == torch.float16 for v in raw["model"].values())
    loaded = LiteVocoder.load(path)
    assert loaded.config == model.config
    mel = speech_like_mel(60)
    assert snr_db(model.decode(mel), loaded.decode(mel)) > 30.0
    # Exactly the fp16-rounded weights.
    halved = LiteVocoder(model.config).eval()
    halved.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    assert np.array_equal(halved.decode(mel), loaded.decode(mel))


def test_the_torch_free_context_matches_the_config() -> None:
    from emostream.networks import lite_vocoder_onnx

    assert lite_vocoder_onnx.CONTEXT_FRAMES == LiteVocoderConfig().context_frames
