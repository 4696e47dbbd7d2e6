"""The simulated streams of the fake device: the load generator's workload, recalibrated on
the H200 run of 2026-12-04."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from emostream.engine.costs import H200_HOST_PER_ITEM_S, H200_HOST_PER_PLAN_S, h200_table
from emostream.engine.scheduling.scheduler import EngineScheduler
from emostream.engine.scheduling.work import WorkItem
from emostream.engine.sim import (
    ACOUSTIC,
    ACOUSTIC_STAGE,
    FRAME_S,
    LOADGEN_SEGMENTS_S,
    VOCODER,
    VOCODER_STAGE,
    FakeDevice,
    Lookahead,
    SimConfig,
    h200_scheduler,
    simulate,
)
from emostream.text.splitter import Segmenter
from loadtest.texts import REPLIES


def loadgen(streams: int, lookahead: Lookahead = "eager") -> SimConfig:
    """The load generator's replies, the streamer's look-ahead as it ran (eager)."""
    return SimConfig(streams=streams, seconds=8.0, segments=LOADGEN_SEGMENTS_S, lookahead=lookahead)


def h200_device() -> FakeDevice:
    return FakeDevice(
        h200_table(), host_per_plan_s=H200_HOST_PER_PLAN_S, host_per_item_s=H200_HOST_PER_ITEM_S
    )


def test_loadgen_segments_are_the_replies_as_the_server_cuts_them() -> None:
    assert len(LOADGEN_SEGMENTS_S) == len(REPLIES)
    per_char = []
    for text, seconds in zip(REPLIES, LOADGEN_SEGMENTS_S):
        seg = Segmenter()
        cuts = seg.feed(text) + seg.flush()
        assert len(cuts) == len(seconds)
        per_char += [s / len(c) for c, s in zip(cuts, seconds)]
    assert max(per_char) - min(per_char) < 0.002  # one rate of speech: characters x a rate
    mean = sum(sum(u) for u in LOADGEN_SEGMENTS_S) / len(LOADGEN_SEGMENTS_S)
    assert abs(mean - 3.78) < 0.02  # the audio per reply measured at 500 streams


def test_eager_lookahead_makes_the_second_call_urgent() -> None:
    """The streamer as it ran: a reply's second acoustic call went at once, due at once (the
    engine logged 1,324 urgent of 1,410 acoustic calls at 500 streams); gated, only first
    segments are urgent."""
    eager = simulate(loadgen(50), h200_scheduler(), FakeDevice(h200_table()))
    gated = simulate(loadgen(50, lookahead="gated"), h200_scheduler(), FakeDevice(h200_table()))
    assert eager.acoustic_urgent / eager.acoustic_calls > 0.9
    assert gated.acoustic_urgent / gated.acoustic_calls < 0.6


def test_loadgen_workload_reproduces_the_500_stream_operating_point() -> None:
    """The run at 500 streams: 282 acoustic calls/s, 1.56 windows per audio second, the
    engine 96-99 % busy, no late chunk; at 750: late chunks. (The single-segment workload
    with no host work, the simulation before, kept 750 with none.)"""
    res = simulate(loadgen(500), h200_scheduler(linger_s=0.04), h200_device())
    audio_s = res.audio_frames * FRAME_S
    assert abs(res.acoustic_calls / res.seconds - 282) < 20
    assert abs(res.windows / audio_s - 1.56) < 0.08
    assert res.busy_s / res.seconds > 0.9 and res.underruns == 0
    over = simulate(loadgen(750), h200_scheduler(), h200_device())
    assert over.underruns > 0
    before = simulate(SimConfig(streams=750, seconds=8.0), h200_scheduler(),
                      FakeDevice(h200_table()))  # fmt: skip
    assert before.underruns == 0


class _Recording(EngineScheduler):
    """The scheduler, keeping every item submitted."""

    def __init__(self) -> None:
        super().__init__([ACOUSTIC_STAGE, VOCODER_STAGE], h200_table())
        self.items: list[WorkItem] = []

    def submit(self, *args: Any, **kwargs: Any) -> WorkItem:
        item = super().submit(*args, **kwargs)
        self.items.append(item)
        return item


def test_planned_lookahead_calls_are_needed_by_the_run_out() -> None:
    """As the streamer: a later segment's acoustic call is due ``lookahead_lead_s`` before
    its listener could run out (unless that is past) and needed by that run-out
    (``need_by``); windows are needed when due."""
    scheduler = _Recording()
    config = replace(loadgen(50), lookahead_due="planned", lookahead_lead_s=1.0)
    res = simulate(config, scheduler, FakeDevice(h200_table()))
    calls = [i for i in scheduler.items if i.stage == ACOUSTIC]
    assert len(calls) == res.acoustic_calls > 0
    ahead = [i for i in calls if not i.urgent]
    assert ahead and all(abs(i.need_by - i.due - 1.0) < 1e-9 for i in ahead)
    assert all(i.need_by >= i.due for i in calls)
    assert all(i.need_by == i.due for i in scheduler.items if i.stage == VOCODER)
    assert res.late_by_stage == {}
