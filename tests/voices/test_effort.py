"""Vocal effort (emostream.voices.effort): spectral balance in the mels, level as a gain."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emostream.networks.mel import silence_level
from emostream.voices.effort import (
    LIMIT_KNEE,
    apply_effort,
    apply_gain,
    band_slopes,
    effort_db,
    effort_gain,
    effort_offset,
    power_share,
)


def _speech(seed: int = 0, frames: int = 120) -> np.ndarray:
    """Speech-like log-mel ``[80, T]``: most power low, falling ~3 nats to the top band,
    a few silent frames at the floor."""
    rng = np.random.default_rng(seed)
    tilt = np.linspace(-1.0, -4.0, 80)[:, None]
    x = tilt + 0.5 * rng.standard_normal((80, frames)) + rng.uniform(-2, 0, frames)[None]
    x[:, :10] = silence_level()
    return x.astype(np.float32)


def test_effort_db_and_gain() -> None:
    assert effort_db(1.0) == 0.0
    assert effort_db(1.4) == pytest.approx(2.9226, abs=1e-4)
    assert effort_db(0.7) == pytest.approx(-3.098, abs=1e-3)
    assert effort_gain(effort_db(1.4)) == pytest.approx(1.4)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            effort_db(bad)


def test_band_slopes_make_effort_brighter() -> None:
    """The standard's spectra: below 300 Hz rises ~0.25 dB per dB, 1–3 kHz ~1.4."""
    s = band_slopes()
    assert s.shape == (80,)
    assert 0.2 < s[0] < 0.3 and 1.3 < s[40] < 1.45  # band 40: ~1.7 kHz
    assert s[:10].mean() < 0.7 < s[30:60].min()


def test_offset_moves_the_balance_not_the_power() -> None:
    frames = _speech()
    offset = effort_offset(frames, 6.0)
    # brighter: the 1-3 kHz bands go up against the lowest bands (by ~1.1 dB per dB)
    assert offset[35:60].mean() - offset[:8].mean() > 0.1 * 6.0
    # and the power of its loud frames, weighted per band by their own spectrum, stays
    ratio = float(np.sum(power_share(frames) * np.exp(2.0 * offset.astype(np.float64))))
    assert abs(10 * math.log10(ratio)) < 1e-4
    # (a different spectrum gets a different uniform part, the same balance)
    other = effort_offset(_speech(5) + np.linspace(2, -2, 80)[:, None].astype(np.float32), 6.0)
    np.testing.assert_allclose(np.diff(other), np.diff(offset), atol=1e-5)
    assert abs(float(other.mean() - offset.mean())) > 1e-3


def test_offset_is_linear_in_level() -> None:
    """neutral + (label − neutral) × intensity: half the dB is half the offset, and softer
    is the mirror of louder."""
    frames = _speech(1)
    full = np.diff(effort_offset(frames, 2.92))
    np.testing.assert_allclose(np.diff(effort_offset(frames, 1.46)), full / 2, atol=1e-6)
    np.testing.assert_allclose(np.diff(effort_offset(frames, -2.92)), -full, atol=1e-6)
    assert not effort_offset(frames, 0.0).any()


def test_offset_checks_the_band_count() -> None:
    with pytest.raises(ValueError, match="bands"):
        effort_offset(np.zeros((192, 10), np.float32), 3.0)


def test_offset_of_an_empty_segment_is_finite() -> None:
    offset = effort_offset(np.zeros((80, 0), np.float32), 3.0)
    assert offset.shape == (80,) and np.isfinite(offset).all()


def test_apply_effort_never_goes_below_silence() -> None:
    frames = _speech(2)
    out = apply_effort(frames, effort_offset(frames, -12.0))
    assert out.dtype == np.float32 and out.shape == frames.shape
    assert out.min() >= silence_level()
    moved = frames > silence_level() + 3.0
    np.testing.assert_allclose(out[moved], (frames + effort_offset(frames, -12.0)[:, None])[moved])


def test_gain_is_exact_below_the_knee() -> None:
    x = np.linspace(-0.5, 0.5, 101, dtype=np.float32)
    np.testing.assert_allclose(apply_gain(x, 1.4), 1.4 * x, rtol=1e-6)
    np.testing.assert_allclose(apply_gain(x, 0.5), 0.5 * x, rtol=1e-6)
    assert apply_gain(x, 1.0) is x


def test_limiter_bends_peaks_below_full_scale() -> None:
    x = np.linspace(-1.0, 1.0, 20001, dtype=np.float32)
    y = apply_gain(x, 4.0)
    assert np.abs(y).max() <= 1.0
    assert np.abs(apply_gain(np.array([0.6, -0.6], np.float32), 2.0)).max() < 0.99  # 1.2: < 1
    assert np.all(np.diff(y) >= 0)  # monotone: no fold-over
    # continuous at the knee: just above it, the output is just above the knee
    near = np.abs(4.0 * x - LIMIT_KNEE) < 1e-3
    np.testing.assert_allclose(np.abs(y[near]), LIMIT_KNEE, atol=2e-3)
    # a gain below 1 is never limited (nothing rises)
    np.testing.assert_allclose(apply_gain(x, 0.9), 0.9 * x, rtol=1e-6)


def test_gain_chunk_by_chunk_equals_whole() -> None:
    x = np.random.default_rng(3).uniform(-0.9, 0.9, 4000).astype(np.float32)
    whole = apply_gain(x, 2.0)
    parts = np.concatenate([apply_gain(c, 2.0) for c in np.array_split(x, 7)])
    np.testing.assert_array_equal(whole, parts)
