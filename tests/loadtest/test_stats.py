from __future__ import annotations

import math
import random

import pytest

from loadtest.stats import Histogram, percentile, summary


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 0.5) == pytest.approx(2.5)
    assert percentile([5], 0.99) == 5
    assert percentile(range(101), 0.95) == pytest.approx(95)
    assert math.isnan(percentile([], 0.5))
    with pytest.raises(ValueError):
        percentile([1], 1.5)


def test_summary_fields() -> None:
    s = summary([10, 20, 30])
    assert s["n"] == 3 and s["mean"] == 20 and s["max"] == 30 and s["p50"] == 20
    assert summary([])["p95"] is None


def test_histogram_matches_exact_percentiles() -> None:
    rng = random.Random(2)
    values = [rng.expovariate(1 / 30) for _ in range(5000)]
    h = Histogram(resolution=0.1)
    for v in values:
        h.add(v)
    assert h.count == 5000
    for q in (0.5, 0.9, 0.99):
        assert h.quantile(q) == pytest.approx(percentile(values, q), abs=0.5)


def test_histogram_merge_and_round_trip() -> None:
    a, b = Histogram(), Histogram()
    for v in (1.0, 2.0, 3.0):
        a.add(v)
    b.add(100.0)
    a.merge(b)
    assert a.count == 4 and a.quantile(1.0) == pytest.approx(100)
    c = Histogram.from_dict(a.to_dict())
    assert c.bins == a.bins
    with pytest.raises(ValueError):
        a.merge(Histogram(resolution=1.0))
    assert math.isnan(Histogram().quantile(0.5))
    assert Histogram().summary()["p99"] is None
