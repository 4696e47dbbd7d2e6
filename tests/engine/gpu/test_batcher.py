"""Batcher core: ordering, fairness, cancellation, deadlines, buckets (fake clock)."""

import pytest

from emostream.engine.gpu.batcher import Batch, Batcher, BucketSpec

SPEC = BucketSpec(frames=(32, 64, 128), batch_sizes=(1, 2, 4, 8))


def drain(b: Batcher[str], now: float) -> list[Batch[str]]:
    out = []
    while (batch := b.next_batch(now, force=True)) is not None:
        out.append(batch)
    return out


def test_bucket_spec() -> None:
    assert SPEC.frames_bucket(1) == 32
    assert SPEC.frames_bucket(32) == 32
    assert SPEC.frames_bucket(33) == 64
    assert SPEC.batch_bucket(3) == 4
    assert SPEC.batch_bucket(8) == 8
    with pytest.raises(ValueError):
        SPEC.frames_bucket(129)
    with pytest.raises(ValueError):
        SPEC.batch_bucket(9)
    with pytest.raises(ValueError):
        BucketSpec(frames=(64, 32))
    assert (8, 128) in SPEC.shapes() and len(SPEC.shapes()) == 12


def test_submit_rejects_oversized_items() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC)
    with pytest.raises(ValueError):
        b.submit("s", "x", frames=200, now=0.0)
    with pytest.raises(ValueError):
        b.submit("s", "x", frames=0, now=0.0)


def test_deadline_waits_for_max_wait() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, max_wait=0.002)
    assert b.deadline() is None and b.next_batch(0.0) is None
    b.submit("a", "a0", frames=30, now=10.0)
    b.submit("b", "b0", frames=30, now=10.001)
    assert b.deadline() == pytest.approx(10.002)
    assert not b.ready(10.0019)
    assert b.next_batch(10.0019) is None
    assert b.ready(10.002)
    batch = b.next_batch(10.002)
    assert batch is not None
    assert [i.payload for i in batch.items] == ["a0", "b0"]
    assert batch.size == 2 and batch.frames == 32
    assert b.pending == 0 and b.deadline() is None


def test_full_batch_leaves_before_deadline() -> None:
    b: Batcher[int] = Batcher(buckets=SPEC, max_wait=1.0)
    for s in range(7):
        b.submit(s, s, frames=30, now=0.0)
    assert not b.ready(0.0)
    b.submit(7, 7, frames=30, now=0.0)
    assert b.ready(0.0)
    batch = b.next_batch(0.0)
    assert batch is not None and len(batch.items) == 8 and batch.size == 8


def test_per_stream_order_across_mixed_buckets() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC)
    # Stream "a": a short first window then long ones; "b" long ones. Submit interleaved.
    lengths = {"a": [30, 60, 92, 92, 20], "b": [92, 92, 60, 30, 92]}
    for k in range(5):
        for s in ("a", "b"):
            b.submit(s, f"{s}{k}", frames=lengths[s][k], now=float(k))
    delivered: dict[str, list[int]] = {"a": [], "b": []}
    for batch in drain(b, 100.0):
        for item in batch.items:
            assert item.frames <= batch.frames
            delivered[str(item.stream)].append(item.seq)
    assert delivered == {"a": [0, 1, 2, 3, 4], "b": [0, 1, 2, 3, 4]}


def test_round_robin_fairness_under_backlog() -> None:
    b: Batcher[str] = Batcher(buckets=BucketSpec(frames=(64,), batch_sizes=(1, 2, 4)))
    # One greedy stream with a backlog of 12, three light streams with 2 each.
    for k in range(12):
        b.submit("greedy", f"g{k}", frames=60, now=0.0)
    for s in ("x", "y", "z"):
        for k in range(2):
            b.submit(s, f"{s}{k}", frames=60, now=0.001)
    first = b.next_batch(1.0)
    assert first is not None
    # A batch of 4 holds one item of each of the 4 streams, not 4 of the greedy one.
    assert sorted(str(i.stream) for i in first.items) == ["greedy", "x", "y", "z"]
    second = b.next_batch(1.0)
    assert second is not None
    assert sorted(str(i.stream) for i in second.items) == ["greedy", "x", "y", "z"]
    # The light streams are drained; the backlog now fills whole batches.
    third = b.next_batch(1.0)
    assert third is not None and [i.payload for i in third.items] == ["g2", "g3", "g4", "g5"]


def test_no_starvation_with_many_streams() -> None:
    b: Batcher[int] = Batcher(buckets=BucketSpec(frames=(64,), batch_sizes=(1, 2, 4)))
    served: list[int] = []
    now = 0.0
    # 10 streams each always have one item pending; each batch holds 4.
    for s in range(10):
        b.submit(s, s, frames=60, now=now)
    for _ in range(10):
        now += 1.0
        batch = b.next_batch(now)
        assert batch is not None
        for item in batch.items:
            served.append(int(str(item.stream)))
            b.submit(item.stream, 0, frames=60, now=now)  # the stream's next chunk
    counts = [served.count(s) for s in range(10)]
    assert max(counts) - min(counts) <= 1, counts


def test_skipped_long_stream_leads_next_batch() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, fixed_cost_frames=0.0)  # padding never pays
    b.submit("short", "s0", frames=20, now=0.0)
    b.submit("long", "l0", frames=100, now=0.0)
    b.submit("short2", "t0", frames=20, now=0.0)
    first = b.next_batch(1.0)
    assert first is not None and first.frames == 32
    assert [i.payload for i in first.items] == ["s0", "t0"]
    second = b.next_batch(1.0)
    assert (
        second is not None and second.frames == 128 and [i.payload for i in second.items] == ["l0"]
    )


def test_cancel_drops_pending_work() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC)
    for k in range(3):
        b.submit("a", f"a{k}", frames=30, now=0.0)
        b.submit("b", f"b{k}", frames=30, now=0.0)
    dropped = b.cancel("a")
    assert [i.payload for i in dropped] == ["a0", "a1", "a2"]
    assert b.pending == 3 and b.pending_for("a") == 0
    assert b.cancel("a") == []
    payloads = [i.payload for batch in drain(b, 1.0) for i in batch.items]
    assert payloads == ["b0", "b1", "b2"]
    assert b.stats.cancelled == 3
    # A cancelled stream id can be reused; its seq restarts.
    assert b.submit("a", "new", frames=30, now=2.0).seq == 0


def test_cancel_updates_deadline() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, max_wait=0.002)
    b.submit("old", "o", frames=30, now=0.0)
    b.submit("new", "n", frames=30, now=5.0)
    assert b.deadline() == pytest.approx(0.002)
    b.cancel("old")
    assert b.deadline() == pytest.approx(5.002)
    assert not b.ready(5.001)


def test_backlog_of_one_stream_fills_spare_rows_in_order() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC)
    for k in range(5):
        b.submit("a", f"a{k}", frames=60, now=0.0)
    batch = b.next_batch(1.0)
    assert batch is not None
    assert [i.payload for i in batch.items] == ["a0", "a1", "a2", "a3", "a4"]
    assert batch.size == 8 and batch.frames == 64
    assert 0 < batch.fill < 1


def test_short_windows_join_a_long_batch_when_a_call_costs_more() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, fixed_cost_frames=256.0)
    b.submit("new", "first", frames=30, now=0.0)  # a first chunk leads the round-robin
    for s in range(5):
        b.submit(s, f"long{s}", frames=92, now=0.0)
    batch = b.next_batch(1.0)
    assert batch is not None and batch.frames == 128 and len(batch.items) == 6


def test_long_window_waits_when_padding_costs_more() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, fixed_cost_frames=16.0)
    for s in range(8):
        b.submit(s, f"short{s}", frames=30, now=0.0)
    b.submit("x", "long", frames=120, now=0.0)
    first = b.next_batch(1.0)
    assert first is not None and first.frames == 32 and len(first.items) == 8
    second = b.next_batch(1.0)
    assert second is not None and [i.payload for i in second.items] == ["long"]


def test_urgent_items_go_first_when_a_batch_cannot_hold_all() -> None:
    b: Batcher[str] = Batcher(buckets=BucketSpec(frames=(64,), batch_sizes=(1, 2)))
    b.submit("relaxed1", "r1", frames=60, now=0.0, due=5.0)
    b.submit("relaxed2", "r2", frames=60, now=0.0, due=5.0)
    b.submit("urgent", "u", frames=30, now=0.5, due=0.6)
    first = b.next_batch(1.0)
    assert first is not None and [i.payload for i in first.items] == ["u", "r1"]
    second = b.next_batch(1.0)
    assert second is not None and [i.payload for i in second.items] == ["r2"]


def test_due_times_never_go_backwards_within_a_stream() -> None:
    b: Batcher[str] = Batcher(buckets=SPEC, default_slack=0.5)
    assert b.submit("a", "a0", frames=30, now=0.0, due=2.0).due == 2.0
    # An earlier due cannot overtake the stream's own earlier item.
    assert b.submit("a", "a1", frames=30, now=0.0, due=1.0).due == 2.0
    assert b.submit("b", "b0", frames=30, now=1.0).due == 1.5


@pytest.mark.parametrize("vocoder", ["v1", "lite"])
def test_engine_buckets_hold_each_vocoders_windows(vocoder: str) -> None:
    # The engine's shapes for each vocoder, with that vocoder's own context: the first
    # window lands in the smallest bucket, none outgrows the largest. V1's first chunk is
    # short; the light vocoder's fills a 128-frame row (99 frames, 1.15 s): the second
    # window is due over a second after first audio, not 0.2 s (bursts stalled there).
    from emostream.engine.chunks import ChunkSchedule
    from emostream.engine.gpu.batcher import engine_buckets
    from emostream.networks.hifigan import CONTEXT_FRAMES as V1_CONTEXT
    from emostream.networks.lite_vocoder import CONTEXT_FRAMES as LITE_CONTEXT

    spec = engine_buckets(vocoder)
    context = {"v1": V1_CONTEXT, "lite": LITE_CONTEXT}[vocoder]
    schedule = ChunkSchedule(context=context, buckets=spec.frames)
    for total in (20, 64, 150, 400, 1500):
        ws = list(schedule.windows(total))
        assert all(w.hi - w.lo <= spec.max_frames for w in ws)
        if total > spec.frames[0]:
            first = {"v1": range(1, 21), "lite": range(99, 100)}[vocoder]
            assert ws[0].hi - ws[0].lo == spec.frames[0] and ws[0].emitted in first
    with pytest.raises(ValueError):
        engine_buckets("v2")


def test_engine_vocoder_frames_override_the_rows_for_ab_runs() -> None:
    from emostream.config import Settings
    from emostream.engine.client import SLOT_BYTES
    from emostream.engine.gpu.batcher import LITE_ENGINE_BUCKETS, engine_buckets

    assert Settings().vocoder_frames() == ()
    assert engine_buckets("lite", ()) == LITE_ENGINE_BUCKETS
    ab = Settings.from_env({"EMOSTREAM_ENGINE_VOCODER_FRAMES": "48,128,256"})
    spec = engine_buckets("lite", ab.vocoder_frames())
    assert spec.frames == (48, 128, 256)
    assert spec.batch_sizes == LITE_ENGINE_BUCKETS.batch_sizes
    for bad in ("128,48", "0,128", "48,512", "48;128", "a"):
        with pytest.raises(ValueError, match="vocoder frames"):
            Settings(engine_vocoder_frames=bad)
    assert Settings(engine_vocoder_frames="256").vocoder_frames() == (256,)
    assert 256 * 256 * 4 <= SLOT_BYTES  # the longest row allowed fits a front end's slot
