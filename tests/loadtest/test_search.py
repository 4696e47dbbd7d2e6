from __future__ import annotations

import pytest

from loadtest.search import MaxSearch


def run(capacity: int, **kw: float) -> tuple[int, list[int]]:
    s = MaxSearch(**kw)  # type: ignore[arg-type]
    order = []
    while (n := s.next_level()) is not None:
        order.append(n)
        s.record(n, n <= capacity)
    return s.best, order


@pytest.mark.parametrize("capacity", [1, 2, 3, 5, 8, 13, 37, 100, 1000])
def test_finds_capacity_exactly_with_resolution_one(capacity: int) -> None:
    best, order = run(capacity, relative_resolution=0.0)
    assert best == capacity
    assert len(order) == len(set(order))  # never repeats a level


def test_doubles_then_bisects() -> None:
    _, order = run(37, relative_resolution=0.0)
    assert order[:7] == [1, 2, 4, 8, 16, 32, 64]
    assert order[7] == 48  # between 32 (good) and 64 (bad)


def test_relative_resolution_stops_early() -> None:
    best, order = run(1000, relative_resolution=0.1)
    assert 900 <= best <= 1000
    _, order_exact = run(1000, relative_resolution=0.0)
    assert len(order) < len(order_exact)


def test_nothing_good() -> None:
    assert run(0) == (0, [1])


def test_limit_holds() -> None:
    best, order = run(10**6, limit=64)
    assert best == 64 and order[-1] == 64


def test_max_steps_bounds_the_search() -> None:
    _, order = run(10**6, limit=10**6, max_steps=5)
    assert len(order) == 5


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        MaxSearch(start=0)
    with pytest.raises(ValueError):
        MaxSearch(resolution=0)
