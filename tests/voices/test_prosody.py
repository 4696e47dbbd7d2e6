from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import pytest
import soxr

from emostream.text.emotion import ProsodyControls, prosody_controls
from emostream.voices.prosody import (
    apply_durations,
    apply_energy,
    apply_pitch,
    measure_prosody,
    relative_controls,
)

Speech = tuple[npt.NDArray[np.float32], int]


@pytest.fixture(scope="module")
def pyworld() -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("pyworld")


def _16k(speech: Speech) -> npt.NDArray[np.float32]:
    return np.asarray(soxr.resample(speech[0], speech[1], 16000), dtype=np.float32)


def test_reference_faster_higher_louder(pyworld: object, speech: Speech) -> None:
    base = _16k(speech)
    # "play it 20 % faster": pitch up 12*log2(1.2) = 3.16 st, rate x1.2; and 6 dB louder
    fast = np.asarray(soxr.resample(base, 16000 * 1.2, 16000), dtype=np.float32) * 2.0
    neutral, ref = measure_prosody(base), measure_prosody(fast)
    assert 60 < neutral.f0_median_hz < 400
    c = relative_controls(ref, neutral)
    assert 2.2 < c.pitch_shift_st < 4.2  # 3.16 expected; DIO on 64 kb/s LibriVox is rough
    assert c.energy_scale == pytest.approx(2.0, rel=0.1)
    assert c.rate_scale > 1.0  # the nucleus-count proxy under-reads (1.0-1.26 for 1.2)
    same = relative_controls(neutral, neutral)
    assert same == ProsodyControls()


def test_reference_with_flattened_pitch(pyworld: object, speech: Speech) -> None:
    import pyworld as pw

    base = _16k(speech).astype(np.float64)
    f0, sp, ap = pw.wav2world(base, 16000)
    voiced = f0 > 0
    flat = f0.copy()
    mean = np.exp(np.log(f0[voiced]).mean())
    flat[voiced] = np.exp(np.log(mean) + 0.4 * (np.log(f0[voiced]) - np.log(mean)))
    sad_like = pw.synthesize(flat * 2 ** (-2 / 12), sp, ap, 16000).astype(np.float32)
    resynth = pw.synthesize(f0, sp, ap, 16000).astype(np.float32)
    c = relative_controls(measure_prosody(sad_like), measure_prosody(resynth))
    assert c.pitch_shift_st < -1.0
    assert c.pitch_range < 0.7


def test_apply_pitch() -> None:
    f0 = np.array([0, 100, 200, 0, 400], dtype=np.float32)
    up = apply_pitch(f0, ProsodyControls(pitch_shift_st=12.0))
    assert np.allclose(up, f0 * 2, rtol=1e-5) and up[0] == 0 and up[3] == 0
    narrow = apply_pitch(f0, ProsodyControls(pitch_range=0.0 + 0.5))
    assert np.ptp(np.log(narrow[narrow > 0])) == pytest.approx(0.5 * np.log(4), rel=1e-5)
    sad = apply_pitch(f0, prosody_controls("sad"))
    assert np.exp(np.log(sad[sad > 0]).mean()) < np.exp(np.log(f0[f0 > 0]).mean())


def test_apply_energy_and_durations() -> None:
    assert np.allclose(apply_energy(np.ones(3, np.float32), ProsodyControls(energy_scale=1.5)), 1.5)
    d = np.array([3, 5, 20, 4, 1, 7])
    pause = np.array([False, False, True, False, False, False])
    same = apply_durations(d, pause, ProsodyControls())
    assert np.array_equal(same, d)
    slow = apply_durations(d, pause, prosody_controls("sad"))
    assert slow[~pause].sum() > d[~pause].sum() and slow[2] > d[2]
    fast = apply_durations(d, pause, ProsodyControls(rate_scale=2.0, pause_scale=0.5))
    assert abs(fast.sum() - d.sum() / 2) <= 1 and fast.min() >= 1
