"""The CPU path's load tracker (sans-I/O): what a window of model calls adds up to."""

from __future__ import annotations

import pytest

from emostream.config import available_cores
from emostream.engine.cpu_load import CpuLoadTracker


def _call(t: CpuLoadTracker, began: float, ended: float, **kw: float | str) -> None:
    args: dict[str, float | str] = {
        "kind": "decode", "submitted": began, "began": began, "ended": ended,
        "need_by": ended + 1.0, "delivered": ended,
    }  # fmt: skip
    args.update(kw)
    t.call(**args)  # type: ignore[arg-type]


def test_busy_share_is_wall_time_in_calls_over_the_window_and_workers() -> None:
    t = CpuLoadTracker(workers=2, window_s=2.0, cores=2)
    _call(t, 9.0, 9.5)
    _call(t, 9.0, 10.0)
    _call(t, 7.0, 8.5)  # half inside the window [8, 10]
    assert t.snapshot(10.0).busy_fraction == pytest.approx((0.5 + 1.0 + 0.5) / 4.0)
    assert t.snapshot(13.0).busy_fraction == 0.0  # all left the window


def test_first_calls_give_first_audio_and_late_ones_are_counted() -> None:
    t = CpuLoadTracker(workers=1, window_s=2.0, cores=1)
    # An utterance's first calls are due at once (need_by = submission): their latency.
    _call(t, 1.0, 1.04, kind="acoustic", submitted=1.0, need_by=1.0)
    _call(t, 1.05, 1.08, kind="decode", submitted=1.04, need_by=1.04)
    _call(t, 1.1, 1.2, need_by=1.5)  # in time
    _call(t, 1.2, 1.6, need_by=1.5)  # after its listener ran out
    _call(t, 1.7, 1.75, submitted=1.65, need_by=1.6)  # already late when submitted
    load = t.snapshot(2.0)
    assert load.first_audio_p95_s == pytest.approx(0.04 + 0.04)
    assert load.first_service_s == pytest.approx(0.04 + 0.03)  # run times, no queueing
    assert load.urgent_calls == 2
    assert load.late_recent == 2 and load.last_late_at == 1.75
    assert t.snapshot(3.7).late_recent == 1 and t.snapshot(3.8).late_recent == 0


def test_loop_lag_is_the_wait_for_the_event_loop() -> None:
    t = CpuLoadTracker(workers=1, window_s=2.0, cores=1)
    for i in range(20):
        _call(t, i * 0.05, i * 0.05 + 0.01, delivered=i * 0.05 + 0.01 + (0.2 if i == 19 else 0.002))
    load = t.snapshot(1.5)
    assert load.lag_samples == 20
    assert load.loop_lag_p95_s == pytest.approx(0.002)  # one slow delivery in 20 is the p100
    _call(t, 1.0, 1.01, delivered=1.2)
    assert t.snapshot(1.5).loop_lag_p95_s == pytest.approx(0.19)


def test_starts_pend_until_their_utterance_ends_or_leaves_the_window() -> None:
    t = CpuLoadTracker(workers=2, window_s=2.0, cores=2)
    for now in (0.0, 0.1, 0.2):
        t.admitted(now)
    load = t.snapshot(0.3)
    assert (load.pending_starts, load.oldest_pending_at, load.live_streams) == (3, 0.0, 3)
    t.ended("s1", 0.4)  # the oldest start goes
    load = t.snapshot(0.5)
    assert (load.pending_starts, load.oldest_pending_at, load.live_streams) == (2, 0.1, 2)
    assert t.snapshot(0.5).start_times == (0.0, 0.1, 0.2)  # every admission, ended or not
    load = t.snapshot(2.15)  # 0.1 left the window; live streams do not age
    assert (load.pending_starts, load.live_streams, load.start_times) == (1, 2, (0.2,))


def test_work_per_utterance_is_measured_from_the_audio_an_ended_one_made() -> None:
    t = CpuLoadTracker(workers=2, window_s=2.0, cores=2, average_weight=0.5)
    assert t.snapshot(0.0).work_per_utterance_s == 0.0  # none measured yet
    t.admitted(0.0)
    _call(t, 0.0, 0.1, kind="acoustic")  # no audio: its time is spread over the audio made
    _call(t, 0.1, 0.2, audio_s=4.0, stream_id="a")
    t.ended("a", 0.3)  # 0.2 worker-s for 4 s of audio; a's utterance made 4 s
    assert t.snapshot(0.3).work_per_utterance_s == pytest.approx(0.2)
    _call(t, 0.3, 0.4, audio_s=1.0, stream_id="b")  # window: 0.3 worker-s for 5 s of audio
    t.ended("b", 0.5)
    assert t.snapshot(0.5).work_per_utterance_s == pytest.approx(0.2 + 0.5 * (0.06 - 0.2))
    t.ended("never-decoded", 0.6)  # a cancelled or cached utterance changes nothing
    assert t.snapshot(0.6).work_per_utterance_s == pytest.approx(0.13)


def test_cores_default_to_the_process_affinity() -> None:
    assert CpuLoadTracker(workers=2).cores == available_cores() >= 1
    with pytest.raises(ValueError):
        CpuLoadTracker(workers=2, window_s=0.0)
