"""The engine's scheduler (sans-I/O) and the H200 fake device driving it."""

from __future__ import annotations

from emostream.engine.chunks import ChunkSchedule
from emostream.engine.costs import CostTable, LinearCost, h200_table
from emostream.engine.scheduling.scheduler import EngineScheduler
from emostream.engine.scheduling.work import StageSpec
from emostream.engine.sim import (
    ACOUSTIC,
    ACOUSTIC_STAGE,
    FRAME_S,
    VOCODER,
    VOCODER_STAGE,
    FakeDevice,
    SimConfig,
    SimResult,
    h200_scheduler,
    simulate,
)

# 1 ms a call + 0.1 ms a row: easy to reason about.
COST = CostTable({"a": LinearCost(1e-3, 1e-4), "v": LinearCost(1e-3, 1e-4)})


def sched(**kw: float) -> EngineScheduler:
    stages = [StageSpec("a", (1, 2, 4, 8)), StageSpec("v", (1, 2, 4, 8, 16), (32, 64))]
    return EngineScheduler(stages, COST, **kw)


def test_earliest_deadline_first_across_stages() -> None:
    s = sched()
    s.submit(1, "x", "v", length=30, now=0.0, due=5.0)
    s.submit(2, "y", "a", length=10, now=0.0, due=1.0)
    s.submit(3, "z", "v", length=30, now=0.0, due=3.0)
    first = s.schedule(0.0)
    assert first is not None and first.stage == "a" and [i.rid for i in first.items] == [2]
    second = s.schedule(0.0)
    assert second is not None and second.stage == "v"
    assert [i.rid for i in second.items] == [3, 1]  # most urgent row first
    assert s.schedule(0.0) is None


def test_buckets_respected() -> None:
    s = sched()
    for k in range(11):
        s.submit(k, f"s{k}", "v", length=20 + 4 * k, now=0.0, due=10.0)
    plans = []
    while (plan := s.schedule(0.0)) is not None:
        plans.append(plan)
    assert sum(len(p.items) for p in plans) == 11
    for p in plans:
        assert p.batch in (1, 2, 4, 8, 16) and p.batch >= len(p.items)
        assert p.length in (32, 64) and all(i.length <= p.length for i in p.items)


def test_batch_closed_by_the_head_slack() -> None:
    s = sched()
    for k in range(16):  # head due in 1.5 ms: 1 ms + 4 rows x 0.1 ms fits, 8 rows do not
        s.submit(k, f"s{k}", "a", length=10, now=0.0, due=0.0015 + k)
    plan = s.schedule(0.0)
    assert plan is not None and len(plan.items) == 4 and plan.batch == 4


def test_late_head_takes_a_full_batch() -> None:
    s = sched()
    for k in range(16):
        s.submit(k, f"s{k}", "a", length=10, now=0.0, due=0.0)
    plan = s.schedule(1.0)  # long past due: throughput first
    assert plan is not None and len(plan.items) == 8


def test_urgent_item_gets_a_budget_not_a_full_batch() -> None:
    s = sched(urgent_budget_s=0.0015)
    for k in range(16):  # due on submission (first chunks)
        s.submit(k, f"s{k}", "a", length=10, now=0.0)
    plan = s.schedule(0.0)
    assert plan is not None and len(plan.items) == 4


def test_a_backlog_does_not_starve_another_stream() -> None:
    s = sched()
    for k in range(40):
        s.submit(k, "flood", "v", length=30, now=0.0, due=1.0)
    s.submit(100, "quiet", "v", length=30, now=0.0, due=1.0001)
    plan = s.schedule(0.0)
    assert plan is not None and 100 in [i.rid for i in plan.items]
    flood = [i.seq for i in plan.items if i.stream == "flood"]
    assert flood == sorted(flood)  # a stream's calls in submission order


def test_due_times_of_a_stream_never_go_backwards() -> None:
    s = sched()
    s.submit(1, "x", "v", length=30, now=0.0, due=5.0)
    item = s.submit(2, "x", "v", length=30, now=0.0, due=1.0)
    assert item.due == 5.0


def test_cancel_drops_queued_work_and_running_results() -> None:
    s = sched()
    s.submit(1, "x", "v", length=30, now=0.0, due=1.0)
    s.submit(2, "y", "v", length=30, now=0.0, due=1.0)
    plan = s.schedule(0.0)
    assert plan is not None and len(plan.items) == 2
    s.submit(3, "x", "v", length=30, now=0.0, due=2.0)
    dropped = s.cancel("x")
    assert [i.rid for i in dropped] == [3]
    assert [d.rid for d in s.complete(plan, 0.002)] == [2]
    assert s.queued == 0 and s.in_flight == 0 and s.streams() == set()


def test_late_deliveries_counted_not_for_urgent_items() -> None:
    s = sched()
    s.submit(1, "x", "a", length=5, now=0.0)  # urgent
    s.submit(2, "y", "a", length=5, now=0.0, due=0.001)
    plan = s.schedule(0.0)
    assert plan is not None
    delivered = s.complete(plan, 0.5)
    assert [d.late for d in delivered] == [False, True]
    load = s.load(0.5)
    assert load.late_recent == 1 and load.urgent_p95_s == 0.5


def test_late_is_after_need_by_not_the_due() -> None:
    """A call due ahead of need (a look-ahead acoustic call, due 1 s before the listener
    runs out) delivered after its due but before its need_by is not late; after its
    need_by it is; without a need_by, late is after the due, as before."""
    s = sched()
    s.submit(1, "x", "a", length=5, now=0.0, due=1.0, need_by=2.0)
    s.submit(2, "z", "a", length=5, now=0.0, due=1.0)  # need_by: the due
    plan = s.schedule(0.0)
    assert plan is not None and [i.rid for i in plan.items] == [1, 2]
    assert [d.late for d in s.complete(plan, 1.5)] == [False, True]
    assert s.stats.late == 1 and s.load(1.5).late_recent == 1
    s.submit(3, "y", "a", length=5, now=1.5, due=1.6, need_by=2.6)
    plan = s.schedule(1.5)
    assert plan is not None
    assert [d.late for d in s.complete(plan, 2.7)] == [True]  # past need_by: late
    assert s.stats.late == 2 and s.load(2.7).late_recent == 2


def test_need_by_leaves_the_order_to_the_due() -> None:
    s = sched()
    s.submit(1, "x", "v", length=30, now=0.0, due=2.0)
    s.submit(2, "y", "a", length=10, now=0.0, due=1.0, need_by=9.0)
    first = s.schedule(0.0)
    assert first is not None and [i.rid for i in first.items] == [2]  # EDF on due
    # a need_by before the due is taken as the due: never late before it
    item = s.submit(3, "z", "a", length=10, now=0.0, due=5.0, need_by=1.0)
    assert item.need_by == 5.0


def test_load_busy_and_demand() -> None:
    s = EngineScheduler([VOCODER_STAGE], h200_table())
    s.submit(1, "x", VOCODER, length=90, now=0.0, due=1.0)
    plan = s.schedule(0.0)
    assert plan is not None
    s.complete(plan, 1.0)
    load = s.load(1.0)
    assert abs(load.busy_fraction - 0.5) < 1e-9  # 1 s busy in a 2 s window
    assert 0 < load.demand_fraction < 0.001  # one row at full-batch cost


def sim(n: int) -> tuple[SimResult, EngineScheduler]:
    s = h200_scheduler()
    return simulate(SimConfig(streams=n, seconds=8.0), s, FakeDevice(h200_table())), s


def test_h200_fake_device_keeps_real_time_below_capacity() -> None:
    res, s = sim(400)
    assert res.underruns == 0 and res.windows > 4000
    assert res.audio_frames * FRAME_S > 2500  # of the 3,200 s the listeners could hear
    assert res.p95_first_audio() < 0.05
    # every listener was served, none starved
    assert len(res.utterances_by_stream) == 400
    assert all(n >= 1 for n in res.utterances_by_stream.values())
    for stage, rows, batch, length in res.plans:
        spec = s.stages[stage]
        assert batch in spec.batch_sizes and rows <= batch
        assert not spec.lengths or length in spec.lengths


def test_h200_fake_device_overloaded_misses_deadlines() -> None:
    res, _ = sim(1250)  # past its ~850 streams
    assert res.underruns > 0.1 * res.windows
    assert res.p95_first_audio() > 0.2


def test_stages_both_run_on_one_scheduler() -> None:
    _, s = sim(200)
    assert s.stats.by_stage[ACOUSTIC] > 0 and s.stats.by_stage[VOCODER] > 0


def test_windows_filling_their_buckets_serve_more_streams() -> None:
    """Filled windows (the engine path) keep 750 streams in real time; windows of the
    planned sizes in the old 32/64/96 buckets (half of a 96-frame row is padding) do not."""
    n = 750
    filled = simulate(SimConfig(streams=n, seconds=8.0), h200_scheduler(), FakeDevice(h200_table()))
    old_stage = StageSpec(VOCODER, VOCODER_STAGE.batch_sizes, (32, 64, 96))
    old = EngineScheduler([ACOUSTIC_STAGE, old_stage], h200_table())
    config = SimConfig(streams=n, seconds=8.0, schedule=ChunkSchedule(context=14))
    planned = simulate(config, old, FakeDevice(h200_table()))
    assert filled.underruns == 0 and planned.underruns > 0.1 * planned.windows
    # less vocoder time per second of audio
    assert filled.busy_by_stage[VOCODER] / filled.audio_frames < (
        0.8 * planned.busy_by_stage[VOCODER] / planned.audio_frames
    )


# -- linger (the acoustic stage holds small batches under load) ----------------------------


def loaded(linger_s: float = 0.04, *, rows: int = 32, window_s: float = 2.0) -> EngineScheduler:
    """An H200 scheduler whose device is loaded at t=0: acoustic calls arriving (~100 / s)
    and vocoder batches of ``rows`` run back to back through the last 0.2 s (busy ~0.95),
    nothing queued."""
    s = h200_scheduler(linger_s=linger_s, window_s=window_s)
    rid = 1000
    for k in range(20):  # acoustic arrivals (each runs at once, in the vocoder's gaps)
        s.submit(rid, f"a{rid}", ACOUSTIC, length=40, now=-0.2 + 0.01 * k, track=False)
        rid += 1
    t = -0.2
    while (plan := s.schedule(t)) is not None or t < 0.0:
        if plan is None:  # nothing queued: the next vocoder batch
            for k in range(rows):
                s.submit(rid, f"v{k}", VOCODER, length=90, now=t, due=5.0)
                rid += 1
            continue
        t = min(0.0, t + plan.cost_s)
        s.complete(plan, t)
    assert s.queued == 0 and s.busy_share(0.0, 0.2) > 0.9
    return s


def test_linger_engages_on_a_device_kept_busy_by_small_batches() -> None:
    """The H200 run of 2026-12-04 at 500 streams: the engine 96-99 % busy with vocoder
    batches of ~11 rows, their rows at full-batch cost only 42-62 % of the device. The
    linger holds on the busy share, so it engages there."""
    s = loaded(rows=2, window_s=0.2)
    assert s.load(0.0).demand_fraction < 0.7  # the old test (this demand >= 0.7) said idle
    s.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    assert s.schedule(0.0) is None and s.wake_at == 0.04


def test_note_busy_counts_host_work_in_the_busy_share() -> None:
    """The H100 run of 2026-12-06 (light vocoder): the loop 77 % busy, its plans ~61 %. Host
    spans noted around the plans make the busy share the loop's, and the linger engages."""
    s = h200_scheduler(linger_s=0.04, window_s=0.2)
    rid, t = 1000, -0.2
    while t < 0.0:  # 0.6 ms plans with 0.4 ms of intake/delivery around each: 60 % device
        s.submit(rid, f"v{rid}", VOCODER, length=32, now=t, due=5.0)
        s.submit(rid + 1, f"a{rid}", ACOUSTIC, length=40, now=t, track=False)
        rid += 2
        while (plan := s.schedule(t + 0.0002)) is not None:
            s.complete(plan, t + 0.0008)
        s.note_busy(t, t + 0.001)  # the whole iteration: intake, plans, delivery
        t += 0.001
    assert s.busy_share(0.0, 0.2) > 0.95
    assert len(s.load_window._busy) == 1  # touching spans merged: one per busy stretch
    s.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    assert s.schedule(0.0) is None and s.wake_at is not None and s.wake_at > 0.0  # held
    # without the host spans the same loop reads 60 % busy: no hold
    d = h200_scheduler(linger_s=0.04, window_s=0.2)
    t = -0.2
    while t < 0.0:
        d.submit(rid, f"v{rid}", VOCODER, length=32, now=t, due=5.0)
        rid += 1
        plan = d.schedule(t + 0.0002)
        assert plan is not None
        d.complete(plan, t + 0.0008)
        t += 0.001
    assert 0.55 < d.busy_share(0.0, 0.2) < 0.65
    d.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    assert d.schedule(0.0) is not None and d.wake_at is None


def test_note_busy_ignores_empty_and_covered_spans() -> None:
    s = h200_scheduler(window_s=1.0)
    s.note_busy(0.1, 0.1)  # empty
    s.note_busy(0.2, 0.1)  # backwards
    assert s.busy_share(1.0, 1.0) == 0.0
    s.note_busy(0.0, 0.5)
    s.note_busy(0.1, 0.3)  # inside: counted already
    assert abs(s.busy_share(1.0, 1.0) - 0.5) < 1e-9
    s.note_busy(0.7, 0.8)  # apart: its own span
    assert abs(s.busy_share(1.0, 1.0) - 0.6) < 1e-9
    assert abs(s.load(1.0).busy_fraction - 0.6) < 1e-9


def test_linger_batches_requests_arriving_within_the_bound() -> None:
    s = loaded()
    s.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)  # a first segment: urgent
    assert s.schedule(0.0) is None and s.wake_at == 0.04  # held up to linger_s
    s.submit(2, "a2", ACOUSTIC, length=40, now=0.01, track=False)
    assert s.schedule(0.01) is None
    s.submit(3, "a3", ACOUSTIC, length=40, now=0.02, track=False)
    s.submit(4, "a4", ACOUSTIC, length=40, now=0.02, track=False)
    assert s.schedule(0.02) is None and s.wake_at == 0.04  # the oldest's bound, not renewed
    plan = s.schedule(0.04)
    assert plan is not None and [i.rid for i in plan.items] == [1, 2, 3, 4]
    assert s.stats.waited == 3


def test_linger_zero_or_an_idle_engine_does_not_wait() -> None:
    idle = h200_scheduler(linger_s=0.04)  # nothing ran: one stream's first segment
    idle.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    plan = idle.schedule(0.0)
    assert plan is not None and len(plan.items) == 1 and idle.wake_at is None
    off = loaded(linger_s=0.0)  # loaded, but linger off
    off.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    plan = off.schedule(0.0)
    assert plan is not None and len(plan.items) == 1 and off.stats.held == 0


def test_linger_never_holds_past_the_deadline_slack() -> None:
    s = loaded()
    cost = s.cost.cost
    # a later segment's call, due in 25 ms: released when a 2-row batch would just make it
    s.submit(1, "a1", ACOUSTIC, length=40, now=0.0, due=0.025, track=False)
    assert s.schedule(0.0) is None
    assert s.wake_at == 0.025 - cost(ACOUSTIC, 2, 40)
    plan = s.schedule(s.wake_at)
    assert plan is not None and s.wake_at is None and plan.started + plan.cost_s <= 0.025
    # a first segment (urgent): its batch done within linger_budget_s of its submission
    u = loaded(linger_s=1.0)
    u.submit(1, "a1", ACOUSTIC, length=40, now=0.0, track=False)
    assert u.schedule(0.0) is None
    assert u.wake_at == u.linger_budget_s - cost(ACOUSTIC, 2, 40)
    # meanwhile the vocoder runs, but never a batch that would overrun the latest start
    for k in range(96):  # three full batches: 59 ms, past the acoustic call's 47 ms
        u.submit(10 + k, f"v{k}", VOCODER, length=90, now=0.001, due=0.5)
    latest = u.wake_at
    assert latest is not None
    t, rows = 0.001, 0
    while (plan := u.schedule(t)) is not None and plan.stage == VOCODER:
        assert t + plan.cost_s <= latest
        t += plan.cost_s
        rows += len(plan.items)
        u.complete(plan, t)
    if plan is None:  # nothing fits before the latest start: wait for it
        assert u.wake_at == latest
        t = latest
        plan = u.schedule(t)
    assert plan is not None and plan.stage == ACOUSTIC and 32 <= rows < 96
    assert t + plan.cost_s <= u.linger_budget_s


def test_linger_keeps_more_streams_in_real_time() -> None:
    """At 950 simulated streams (past the ~850 knee) the acoustic batches of 2-3 requests
    take the device time the vocoder needs; held to batch under load they leave it."""
    n = 950
    config = SimConfig(streams=n, seconds=8.0)
    plain = simulate(config, h200_scheduler(), FakeDevice(h200_table()))
    held = simulate(config, h200_scheduler(linger_s=0.04), FakeDevice(h200_table()))
    assert plain.underruns > 0 and held.underruns == 0
    assert held.busy_by_stage[ACOUSTIC] < 0.85 * plain.busy_by_stage[ACOUSTIC]
    one = simulate(SimConfig(streams=1, seconds=8.0), h200_scheduler(linger_s=0.04),
                   FakeDevice(h200_table()))  # fmt: skip
    assert max(one.first_audio_s) < 0.005  # one stream: the acoustic call never waits


def test_linger_on_the_busy_share_keeps_more_loadgen_streams() -> None:
    """The load generator's workload with the engine's host work (recalibrated 2026-12-04):
    at 700 streams, linger off has late chunks, the busy-share linger none (simulated knee
    625 -> 750; the demand test lingered too little: 650); one stream never waits."""
    from emostream.engine.costs import H200_HOST_PER_ITEM_S, H200_HOST_PER_PLAN_S
    from emostream.engine.sim import LOADGEN_SEGMENTS_S

    def run(n: int, linger_s: float) -> SimResult:
        config = SimConfig(streams=n, seconds=8.0, segments=LOADGEN_SEGMENTS_S, lookahead="eager")
        device = FakeDevice(h200_table(), host_per_plan_s=H200_HOST_PER_PLAN_S,
                            host_per_item_s=H200_HOST_PER_ITEM_S)  # fmt: skip
        return simulate(config, h200_scheduler(linger_s=linger_s), device)

    plain, held = run(700, 0.0), run(700, 0.04)
    assert plain.underruns > 0 and held.underruns == 0
    assert held.busy_by_stage[ACOUSTIC] < 0.85 * plain.busy_by_stage[ACOUSTIC]
    one, alone = run(1, 0.04), run(1, 0.0)
    assert one.first_audio_s == alone.first_audio_s  # one stream: the linger never holds


def test_engine_with_the_default_linger_never_delays_one_stream() -> None:
    """The engine loop as served (EngineCore, the default EMOSTREAM_ENGINE_ACOUSTIC_LINGER_MS,
    the H200 cost table, the clock advanced by each batch's cost): one stream speaking
    utterance after utterance, each acoustic call runs in the step that follows its
    submission, never held, and so does every vocoder window."""
    from emostream.config import Settings
    from emostream.engine.core import EngineCore, _Call
    from emostream.voices.base import BatchedStage

    now = [0.0]
    stages = {ACOUSTIC: BatchedStage(ACOUSTIC, "acoustic", lambda rs: list(rs), (1, 2, 4, 8, 16, 32)),
              VOCODER: BatchedStage(VOCODER, "decode", None, (1, 2, 4, 8, 16, 32), (32, 96))}  # fmt: skip
    linger = Settings().engine_acoustic_linger_ms / 1e3
    assert linger > 0  # the default lingers: what this checks is that it waits for load
    core = EngineCore(stages, cost=h200_table(), clock=lambda: now[0], acoustic_linger_s=linger)
    sched = core.scheduler
    rid = 0
    for utterance in range(30):
        for k, (stage, length) in enumerate([(ACOUSTIC, 40), (VOCODER, 32), (VOCODER, 96)]):
            rid += 1
            due = now[0] if k < 2 else now[0] + 0.2  # first chunk urgent, the next has slack
            stream = "" if stage == ACOUSTIC else "s1"
            sched.submit(rid, (1, stream or f"a-{rid}"), stage, length=length, now=now[0],
                         due=due, payload=_Call(None, rid, -1, None, None, None),  # type: ignore[arg-type]
                         track=bool(stream))  # fmt: skip
            plan = sched.schedule(now[0])
            assert plan is not None and sched.wake_at is None, (utterance, stage)
            now[0] += plan.cost_s
            sched.complete(plan, now[0])
        now[0] += 0.005  # the front end's work between utterances
    assert sched.stats.held == 0


def test_load_matches_a_recount_of_its_window() -> None:
    """load() keeps running sums and a sorted copy of the urgent latencies; they agree
    with a recount of the window from the full history, and idle streams are forgotten
    as a scan of every stream would (those with queued calls kept)."""
    import random
    from collections.abc import Hashable

    from emostream.engine.scheduling.load import nearest_rank

    rng = random.Random(3)
    s = sched(window_s=0.5, stream_idle_s=0.3)
    busy: list[tuple[float, float]] = []
    urgent: list[tuple[float, float]] = []
    work: list[tuple[float, float]] = []
    seen: dict[Hashable, float] = {}
    now, rid = 0.0, 0
    for _ in range(600):
        now += rng.expovariate(200.0)
        for _ in range(rng.randrange(3)):
            rid += 1
            stream = f"s{rng.randrange(40)}"
            due = None if rng.random() < 0.4 else now + rng.uniform(0.0, 0.05)
            s.submit(rid, stream, rng.choice("av"), length=rng.randint(1, 60), now=now, due=due)
            seen[stream] = now
        plan = s.schedule(now)
        if plan is None:
            continue
        end = now + plan.cost_s * rng.uniform(0.5, 1.5)
        for d in s.complete(plan, end):
            item = next(i for i in plan.items if i.rid == d.rid)
            if item.urgent:
                urgent.append((end, end - item.submitted))
            seen[item.stream] = end
        busy.append((now, end))
        work.append((end, s.row_cost(plan.stage, plan.length) * len(plan.items)))
        now = end
        if rng.random() < 0.05:  # a stream ends
            gone = f"s{rng.randrange(40)}"
            s.cancel(gone)
            seen.pop(gone, None)
        load = s.load(now)
        start = now - 0.5
        want_busy = sum(min(b, now) - max(a, start) for a, b in busy if b > start) / 0.5
        assert abs(load.busy_fraction - min(1.0, want_busy)) < 1e-9
        assert abs(load.demand_fraction - sum(w for t, w in work if t > start) / 0.5) < 1e-9
        want_p95 = nearest_rank(sorted(x for t, x in urgent if t > start), 0.95)
        assert load.urgent_p95_s == want_p95
        for idle in [k for k, t in seen.items() if now - t > 0.3]:
            if not any(i.stream == idle for i in s._queued.values()):
                del seen[idle]
        assert load.live_streams == len(seen)
