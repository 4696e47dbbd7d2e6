import numpy as np
import torch

from emostream.models.acoustic import AcousticModel
from emostream.text.phonemes import G2P
from emostream.voices.acoustic import AcousticVoice, prosody_for
from emostream.voices.base import Controls, Voice, VoiceInfo


def test_prosody_for_scales_with_intensity() -> None:
    full = prosody_for(Controls(emotion="sad", intensity=1.0))
    half = prosody_for(Controls(emotion="sad", intensity=0.5))
    assert full.pitch_shift < half.pitch_shift < 0 and full.rate < half.rate < 1.0
    assert prosody_for(Controls(speed=1.5)).rate == 1.5


def test_voice_protocol_and_frames() -> None:
    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("test", "acoustic", "en", 22050, ("speed", "pitch_shift", "energy", "emotion"))
    decoded: list[int] = []

    def dec(frames: np.ndarray) -> np.ndarray:
        decoded.append(frames.shape[1])
        return np.zeros(frames.shape[1] * 256, np.float32)

    v = AcousticVoice(
        info,
        model,
        np.random.default_rng(0).standard_normal(256).astype(np.float32),
        G2P(),
        decoder=dec,
    )
    assert isinstance(v, Voice)
    lat = v.acoustic("Hello there.", Controls())
    assert lat.frames.shape[0] == 80 and lat.num_frames == int(lat.unit_frames.sum())
    assert len(lat.units) == len(lat.unit_frames)
    assert v.decode(lat.frames).shape == (lat.num_frames * 256,)


def test_batched_inference_equals_one_at_a_time() -> None:
    """infer_batch pads to the longest request; every layer masks the padding, so each result
    is what that request gives alone (the GPU runner batches across streams on this)."""
    from emostream.voices.acoustic import infer_batch

    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("t", "acoustic", "en", 22050, ("speed", "emotion"))
    rng = np.random.default_rng(1)
    voices = [
        AcousticVoice(info, model, rng.standard_normal(256).astype(np.float32), G2P())
        for _ in range(3)
    ]
    texts = ["Hi.", "A somewhat longer sentence, with a pause in it.", "Good morning, everyone."]
    controls = [Controls(), Controls(speed=1.3, emotion="happy"), Controls(pitch_shift=-2.0)]
    requests = [v.prepare(t, c) for v, t, c in zip(voices, texts, controls, strict=True)]
    together = infer_batch(model, requests)
    for request, batched in zip(requests, together, strict=True):
        alone = infer_batch(model, [request])[0]
        np.testing.assert_array_equal(batched.unit_frames, alone.unit_frames)
        assert batched.frames.shape == alone.frames.shape
        np.testing.assert_allclose(batched.frames, alone.frames, atol=1e-4)
