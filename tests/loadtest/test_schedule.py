from __future__ import annotations

import itertools
import random

import pytest

from loadtest.schedule import burst_arrivals, poisson_arrivals, token_times
from loadtest.texts import REPLIES, SHORT_REPLIES, pick, tokenize


def test_poisson_rate_and_bounds() -> None:
    arr = poisson_arrivals(rate_hz=50.0, duration_s=100.0, rng=random.Random(1))
    assert 4500 < len(arr) < 5500  # 5000 expected; sd ~71
    times = [a.at_s for a in arr]
    assert times == sorted(times) and 0 < times[0] and times[-1] < 100.0
    assert [a.index for a in arr] == list(range(len(arr)))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    mean = sum(gaps) / len(gaps)
    assert abs(mean - 0.02) < 0.002
    # exponential: the coefficient of variation is about 1
    var = sum((g - mean) ** 2 for g in gaps) / len(gaps)
    assert 0.9 < var**0.5 / mean < 1.1


def test_poisson_is_seeded_and_capped() -> None:
    a = poisson_arrivals(rate_hz=5, duration_s=10, rng=random.Random(7))
    b = poisson_arrivals(rate_hz=5, duration_s=10, rng=random.Random(7))
    assert a == b
    assert (
        len(poisson_arrivals(rate_hz=1000, duration_s=10, rng=random.Random(0), max_count=30)) == 30
    )
    with pytest.raises(ValueError):
        poisson_arrivals(rate_hz=0, duration_s=10, rng=random.Random(0))


def test_bursts_all_at_once() -> None:
    arr = burst_arrivals(burst_size=20, interval_s=5.0, duration_s=12.0)
    assert len(arr) == 60  # bursts at 0, 5, 10
    assert sorted({a.at_s for a in arr}) == [0.0, 5.0, 10.0]


def test_bursts_spread_and_cap() -> None:
    arr = burst_arrivals(
        burst_size=10, interval_s=1.0, duration_s=3.0, spread_s=0.2, rng=random.Random(3)
    )
    assert len(arr) == 30
    for a in arr:
        assert 0.0 <= a.at_s - int(a.at_s) <= 0.2
    assert [a.at_s for a in arr] == sorted(a.at_s for a in arr)
    assert len(burst_arrivals(burst_size=10, interval_s=1, duration_s=100, max_count=25)) == 25


def test_token_times() -> None:
    assert token_times(["a", "b", "c"], tokens_per_s=10) == [0.0, 0.1, 0.2]
    assert token_times(["a", "b"], tokens_per_s=0) == [0.0, 0.0]


@pytest.mark.parametrize("text", [*REPLIES, *SHORT_REPLIES, "supercalifragilistic word", "a"])
def test_tokenize_round_trips(text: str) -> None:
    tokens = tokenize(text)
    assert "".join(tokens) == text
    assert all(len(t.strip()) <= 4 for t in tokens)
    assert len(tokens) >= len(text.split())


def test_pick_cycles() -> None:
    assert pick(("a", "b"), 3) == "b"
