"""The light vocoder as the GPU engine's module (``EMOSTREAM_VOCODER=lite`` on cuda), run here
on CPU through the same backend class: the shipped ONNX weights, the same audio as ONNX
Runtime gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emostream.config import Settings
from emostream.voices.catalog import LITE_VOCODER

MODELS = Path(__file__).resolve().parents[2] / "models"
pytestmark = pytest.mark.skipif(
    not (MODELS / LITE_VOCODER).is_file(), reason="the light vocoder is not under models/ yet"
)


def test_engine_backend_runs_the_shipped_light_vocoder() -> None:
    pytest.importorskip("torch")
    from emostream.engine.gpu.vocoder_backend import TorchVocoderBackend, _lite_module
    from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder

    backend = TorchVocoderBackend(_lite_module(Settings()), device="cpu", cuda_graphs=False)
    mel = (np.random.default_rng(0).standard_normal((2, 80, 48)) - 5.0).astype(np.float32)
    audio = backend.run(mel)
    assert audio.shape == (2, 48 * 256)
    ort = OnnxLiteVocoder(MODELS / LITE_VOCODER)
    for i in range(2):
        ref = ort(mel[i])
        snr = 10 * np.log10(np.sum(ref**2) / np.sum((audio[i] - ref) ** 2))
        assert snr > 60.0, snr
