import numpy as np
import pytest
import torch

from emostream.networks.contour import fit, frame_positions, legendre, legendre_np, positions_np


def test_positions_span_each_unit_and_match_the_torch_twin() -> None:
    d = np.array([3, 0, 1, 4])
    x = positions_np(d)
    assert x.round(3).tolist() == [-0.667, 0.0, 0.667, 0.0, -0.75, -0.25, 0.25, 0.75]
    both = torch.tensor([[3, 0, 1, 4], [2, 2, 0, 0]])
    t = frame_positions(both, 10)
    assert np.allclose(t[0, :8].numpy(), x) and t[0, 8:].tolist() == [0.0, 0.0]
    assert t[1, :4].tolist() == [-0.5, 0.5, -0.5, 0.5] and t[1, 4:].abs().sum() == 0


def test_legendre_twins_agree_and_are_the_textbook_polynomials() -> None:
    x = np.linspace(-1, 1, 7)
    p = legendre_np(x, 3)
    assert np.allclose(p[:, 0], x) and np.allclose(p[:, 1], (3 * x**2 - 1) / 2)
    assert np.allclose(p[:, 2], (5 * x**3 - 3 * x) / 2)
    assert np.allclose(legendre(torch.from_numpy(x), 3).numpy(), p)


def test_fit_recovers_rising_dipping_and_falling_units() -> None:
    """Tones 2, 3 and 4 as log-F0 over a unit's frames; slope and bend come back."""
    d = np.array([12, 12, 12, 2])
    x = positions_np(d)
    unit = np.repeat(np.arange(4), d)
    c1 = np.array([0.2, 0.0, -0.3, 0.5])[unit]  # rise, dip, fall, too short to say
    c2 = np.array([0.0, 0.25, 0.0, 0.0])[unit]
    logf0 = 5.3 + c1 * x + c2 * (3 * x**2 - 1) / 2
    voiced = np.ones(len(x), bool)
    voiced[:2] = False  # unvoiced frames do not count
    shape, ok = fit(logf0, voiced, d, 2)
    assert ok.tolist() == [True, True, True, False]
    assert shape[:3] == pytest.approx(np.array([[0.2, 0.0], [0.0, 0.25], [-0.3, 0.0]]), abs=0.01)
    assert shape[3].tolist() == [0.0, 0.0]  # two frames cannot give three coefficients
