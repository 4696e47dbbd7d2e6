"""Fixtures for the engine tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from emostream.networks.acoustic import AcousticModel
from emostream.text.phonemes import G2P
from emostream.voices.acoustic import AcousticVoice
from emostream.voices.base import VoiceInfo
from tests.voices.voice_fixtures import redis_server  # noqa: F401


@pytest.fixture(scope="module")
def voice() -> AcousticVoice:
    """An acoustic voice over a small random model (CPU), durations ~3.5 frames per unit."""
    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("t", "acoustic", "en", 22050, ("speed", "emotion"))
    speaker = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    return AcousticVoice(info, model, speaker, G2P())
