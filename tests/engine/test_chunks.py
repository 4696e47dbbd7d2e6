import itertools

import pytest

from emostream.engine.chunks import ChunkSchedule


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


BUCKETS = (32, 96)


@pytest.mark.parametrize("total", [1, 18, 19, 30, 33, 40, 82, 100, 151, 344, 1000])
@pytest.mark.parametrize("first", [True, False])
def test_filled_windows_fill_their_buckets(total: int, first: bool) -> None:
    sch = ChunkSchedule(context=14, buckets=BUCKETS)
    ws = list(sch.windows(total, first=first))
    assert ws[0].start == 0 and ws[-1].end == total
    for a, b in itertools.pairwise(ws):
        assert a.end == b.start
    for w in ws:
        # the context is what an unfilled window has: full, or to the segment's edge
        assert w.lo == max(0, w.start - 14) and w.hi == min(total, w.end + 14)
        assert w.emitted > 0 and w.hi - w.lo <= BUCKETS[-1]
    # every window but the last fills a bucket exactly (no padding)
    assert all(w.hi - w.lo in BUCKETS for w in ws[:-1])


def test_filled_sizes_and_short_first_chunk() -> None:
    plain = ChunkSchedule(context=14)
    filled = ChunkSchedule(context=14, buckets=(32, 64, 96))
    assert [w.emitted for w in plain.windows(344)] == [14, 21, 31, 46, 48, 48, 48, 48, 40]
    # the first window (14 + 14 of context) lands in the 32 bucket: 18 frames for the same cost
    assert [w.emitted for w in filled.windows(344)] == [18, 36, 36, 68, 68, 68, 50]
    assert [w.emitted for w in ChunkSchedule(context=14, buckets=BUCKETS).windows(344)] == [
        18, 68, 68, 68, 68, 54
    ]  # fmt: skip
    # a segment whose rest fits the bucket ends in one window (no right context needed)
    assert [w.emitted for w in filled.windows(30)] == [30]
    # a bucket that cannot hold one frame with its context both sides is refused
    with pytest.raises(ValueError, match="largest bucket"):
        ChunkSchedule(context=14, buckets=(16,))


@pytest.mark.parametrize("total", [1, 40, 47, 48, 75, 96, 97, 130, 151, 344, 1000])
@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("buckets", [(32, 96), (48, 128)])
def test_wide_context_windows_never_outgrow_the_largest_bucket(
    total: int, first: bool, buckets: tuple[int, ...]
) -> None:
    # The light vocoder needs 29 frames each side: planned chunks of 48 make 106-frame
    # windows, past a 96-frame bucket (the engine refused them: "length 106 exceeds 96").
    sch = ChunkSchedule(context=29, buckets=buckets)
    ws = list(sch.windows(total, first=first))
    assert ws[0].start == 0 and ws[-1].end == total
    for a, b in itertools.pairwise(ws):
        assert a.end == b.start
    assert all(w.emitted > 0 and w.hi - w.lo <= buckets[-1] for w in ws)


def test_light_vocoder_chunks() -> None:
    # 96-frame rows leave 38 new frames; the light buckets 48/128 give a short first chunk
    # (19 frames + 29 of context fill 48), then 70 frames a window
    assert [w.emitted for w in ChunkSchedule(context=29, buckets=(32, 96)).windows(300)] == [
        67, 38, 38, 38, 38, 38, 43
    ]  # fmt: skip
    assert [w.emitted for w in ChunkSchedule(context=29, buckets=(48, 128)).windows(300)] == [
        19, 80, 70, 70, 61
    ]  # fmt: skip


def test_invalid_buckets() -> None:
    with pytest.raises(ValueError):
        ChunkSchedule(buckets=(96, 32))
    with pytest.raises(ValueError):
        ChunkSchedule(buckets=(0, 32))


def test_bucketed_schedule_plans_later_segments_as_wide_as_the_largest_bucket() -> None:
    from emostream.engine.chunks import bucketed_schedule

    lite = bucketed_schedule(29, (48, 128, 256))
    assert lite.size == 198
    # a later segment of 180 frames: one window (was 70 + 110: two engine calls)
    assert [(w.lo, w.hi) for w in lite.windows(180, first=False)] == [(0, 180)]
    old = ChunkSchedule(context=29, buckets=(48, 128, 256))
    assert len(list(old.windows(180, first=False))) == 2
    # every window fits a bucket, and the chunks tile the segment
    for total in range(1, 700):
        for first in (True, False):
            ws = list(lite.windows(total, first=first))
            assert ws[0].start == 0 and ws[-1].end == total
            assert all(a.end == b.start for a, b in itertools.pairwise(ws))
            assert all(w.hi - w.lo <= 256 for w in ws)
    # the first chunk stays short (first audio)
    assert next(lite.windows(500)).emitted == 19
    # HiFi-GAN V1's buckets: the windows filling already gave
    v1, before = bucketed_schedule(14, (32, 96)), ChunkSchedule(context=14, buckets=(32, 96))
    for total in (50, 200, 344, 601):
        for first in (True, False):
            assert [w.emitted for w in v1.windows(total, first=first)] == [
                w.emitted for w in before.windows(total, first=first)
            ]
    assert bucketed_schedule(14) == ChunkSchedule(context=14)  # no buckets: the defaults


@pytest.mark.parametrize(("before", "after"), [(0, 0), (5, 0), (0, 32), (32, 32)])
@pytest.mark.parametrize("buckets", [(), (32, 64, 96)])
def test_windows_with_context_frames_emit_the_segment_and_read_its_context(
    before: int, after: int, buckets: tuple[int, ...]
) -> None:
    """A segment rendered in context (Latent.before/after): the windows emit its frames
    once, in the coordinates of the frames with the context, and its edges read the context
    as an inner window reads its neighbours (never past the largest bucket)."""
    s = ChunkSchedule(context=14, buckets=buckets)
    total = 120
    plain = list(s.windows(total))
    ws = list(s.windows(total, before=before, after=after))
    assert [(w.start - before, w.end - before) for w in ws] == [(w.start, w.end) for w in plain]
    assert ws[0].lo == max(0, before - 14) and ws[-1].hi == min(
        before + total + after, ws[-1].end + 14
    )
    for w in ws:
        assert 0 <= w.lo <= w.start < w.end <= w.hi <= before + total + after
        if buckets:
            assert w.hi - w.lo <= buckets[-1]
