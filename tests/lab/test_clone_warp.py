"""lab.clone_warp's pieces: the mel-axis warp, the voicing weight, the formant estimate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from lab.clone_warp import frame_formants, median_formants, voiced_weight, warp_mel, warp_positions


def test_warp_one_is_the_identity() -> None:
    assert np.allclose(warp_positions(1.0), np.arange(80))
    mel = np.random.default_rng(0).normal(size=(80, 5)).astype(np.float32)
    assert np.allclose(warp_mel(mel, warp_positions(1.0)), mel)


@pytest.mark.parametrize("alpha", [0.88, 0.94, 1.06, 1.12])
def test_warp_moves_formants_the_right_way(alpha: float) -> None:
    pos = warp_positions(alpha)
    assert np.all(np.diff(pos) > 0)  # monotonic: no band folds over another
    assert 0.0 <= pos.min() and pos.max() <= 79.0
    low = pos[5:50]  # below the knee, an output band reads a source band below it when alpha > 1
    assert np.all(low < np.arange(5, 50)) if alpha > 1 else np.all(low > np.arange(5, 50))
    # a peak in band 30 moves up for alpha > 1 and down for alpha < 1
    mel = np.full((80, 1), -5.0, np.float32)
    mel[30] = 0.0
    peak = int(np.argmax(warp_mel(mel, pos)[:, 0]))
    assert (peak > 30) if alpha > 1 else (peak < 30)


def test_voiced_weight_tells_a_vowel_from_a_fricative() -> None:
    vowel = np.full(80, -6.0, np.float32)
    vowel[8:27] = 0.0  # strong 300-1000 Hz
    fricative = np.full(80, -6.0, np.float32)
    fricative[40:80] = 0.0  # strong above 1.7 kHz
    w = voiced_weight(np.stack([vowel, fricative], axis=1), theta=0.0, tau=0.5)
    assert w[0] > 0.99 and w[1] < 0.01


def _vowel(formants: tuple[float, ...], sr: int = 16000, f0: float = 120.0) -> np.ndarray:
    x = np.zeros(sr, np.float64)
    x[:: int(sr / f0)] = 1.0
    for f in formants:  # second-order resonators, 80 Hz bandwidth
        r = np.exp(-np.pi * 80.0 / sr)
        x = lfilter([1.0], [1.0, -2 * r * np.cos(2 * np.pi * f / sr), r * r], x)
    return np.asarray(0.5 * x / np.abs(x).max(), dtype=np.float32)


def test_formants_of_a_synthetic_vowel() -> None:
    med = median_formants(_vowel((500.0, 1500.0, 2500.0)), 16000)
    assert np.allclose(med, [500.0, 1500.0, 2500.0], rtol=0.08), med
    # an unvoiced signal (noise) gives no frames
    noise = np.random.default_rng(1).normal(scale=0.1, size=16000).astype(np.float32)
    assert len(frame_formants(noise, 16000)) < 10
