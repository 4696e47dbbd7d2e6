import itertools

import pytest

from emostream.engine.chunker import ChunkSchedule


@pytest.mark.parametrize("total", [1, 5, 12, 13, 40, 100, 1000])
def test_windows_cover_exactly_once(total: int) -> None:
    sch = ChunkSchedule(first=12, size=48, context=10)
    ws = list(sch.windows(total))
    assert ws[0].start == 0 and ws[-1].end == total
    for a, b in itertools.pairwise(ws):
        assert a.end == b.start
    for w in ws:
        assert w.lo == max(0, w.start - 10) and w.hi == min(total, w.end + 10)
        assert w.emitted > 0


def test_first_chunk_short_then_growing() -> None:
    ws = list(ChunkSchedule(first=12, size=48, growth=2.0, context=10).windows(500))
    sizes = [w.emitted for w in ws]
    assert sizes[0] == 12 and sizes[1] == 24 and max(sizes) == 48
    gentle = [w.emitted for w in ChunkSchedule(first=12, size=48, context=10).windows(500)]
    assert gentle[:4] == [12, 18, 27, 40] and max(gentle) == 48


def test_not_first_starts_full_size() -> None:
    ws = list(ChunkSchedule(first=12, size=48).windows(500, first=False))
    assert ws[0].emitted == 48


def test_no_tiny_tail() -> None:
    ws = list(ChunkSchedule(first=12, size=48).windows(12 + 24 + 2))
    assert ws[-1].emitted >= 6


def test_invalid_schedule() -> None:
    with pytest.raises(ValueError):
        ChunkSchedule(first=0)
    with pytest.raises(ValueError):
        ChunkSchedule(first=20, size=10)
