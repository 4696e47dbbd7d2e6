import numpy as np
import pytest

from emostream.networks.mel import (
    MelConfig,
    mel_filterbank,
    mel_spectrogram,
    silence_level,
)


def test_frame_count_is_samples_over_hop() -> None:
    cfg = MelConfig()
    for n in (1024, 22050, 22050 + 255, 44100 + 1):
        mel = mel_spectrogram(np.zeros(n, dtype=np.float32), cfg)
        assert mel.shape == (80, n // 256) == (80, cfg.num_frames(n))


def test_silence_is_the_clamp_floor() -> None:
    mel = mel_spectrogram(np.zeros(4096, dtype=np.float32))
    assert np.allclose(mel, silence_level())
    assert silence_level() == pytest.approx(np.log(1e-5))


def test_sine_energy_lands_in_its_band() -> None:
    cfg = MelConfig()
    t = np.arange(22050) / cfg.sample_rate
    for hz in (300.0, 2000.0, 6000.0):
        mel = mel_spectrogram(0.5 * np.sin(2 * np.pi * hz * t).astype(np.float32), cfg)
        band = int(np.argmax(mel[:, 10:-10].mean(axis=1)))
        fb = mel_filterbank(cfg)
        bin_ = round(hz * cfg.n_fft / cfg.sample_rate)
        assert fb[band, bin_] > 0.25 * fb[:, bin_].max()  # a band covering hz wins


def test_filterbank_shape_and_range() -> None:
    fb = mel_filterbank()
    assert fb.shape == (80, 513)
    assert (fb >= 0).all()
    # fmax 8 kHz: nothing above it
    assert fb[:, int(np.ceil(8000 * 1024 / 22050)) + 1 :].max() == 0.0


def test_filterbank_matches_librosa_slaney() -> None:
    librosa = pytest.importorskip("librosa")
    ref = librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0, fmax=8000)
    assert np.abs(mel_filterbank() - ref).max() < 1e-6


def test_matches_torch_stft_reference() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(8000).astype(np.float32) * 0.1
    y = torch.nn.functional.pad(torch.from_numpy(x)[None, None], (384, 384), mode="reflect")[0]
    spec = torch.stft(
        y,
        1024,
        hop_length=256,
        win_length=1024,
        window=torch.hann_window(1024),
        center=False,
        return_complex=True,
    )
    mag = torch.sqrt(spec.abs() ** 2 + 1e-9)
    ref = torch.log(torch.clamp(torch.from_numpy(mel_filterbank().copy()) @ mag, min=1e-5))[
        0
    ].numpy()
    assert np.abs(mel_spectrogram(x) - ref).max() < 1e-4
