"""Admission (sans-I/O), alone and over the H200 fake device."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
from typing import Any

import numpy as np

from emostream.engine.admission import AdmissionPolicy, Decision, Verdict, decide
from emostream.engine.costs import h200_table
from emostream.engine.scheduling.load import LoadSnapshot
from emostream.engine.sim import (
    ACOUSTIC,
    FakeDevice,
    SimConfig,
    h200_scheduler,
    simulate,
)
from emostream.voices.base import BatchedStage, Controls, Latent
from tests.engine.test_core import _Declares


def load(**kw: float) -> LoadSnapshot:
    base: dict[str, float] = {
        "now": 0.0, "live_streams": 10, "queued": 0, "busy_fraction": 0.2,
        "demand_fraction": 0.2, "urgent_p95_s": 0.01, "late_recent": 0,
        "starts_recent": 0, "work_per_stream_s": 0.0,
    }  # fmt: skip
    base.update(kw)
    return LoadSnapshot(**base)  # type: ignore[arg-type]


def test_idle_engine_admits() -> None:
    d = decide(load(), AdmissionPolicy())
    assert d.verdict is Verdict.ADMIT and d.admitted and d.reason == ""


def test_demand_past_the_limit_refuses() -> None:
    d = decide(load(demand_fraction=0.86), AdmissionPolicy(max_utilization=0.85))
    assert d.verdict is Verdict.REFUSE and d.reason == "utilization"


def test_a_burst_of_starts_counts_before_its_work_runs() -> None:
    # 440 streams started in the 2 s window, each ~4 ms of work: 0.88 of the device
    d = decide(load(demand_fraction=0.1, starts_recent=440, work_per_stream_s=0.004),
               AdmissionPolicy(max_utilization=0.85))  # fmt: skip
    assert d.reason == "utilization" and d.utilization_after > 0.85


def test_disabled_policy_admits_whatever_the_load() -> None:
    busy = load(demand_fraction=0.99, late_recent=5, urgent_p95_s=0.5)
    assert decide(busy, AdmissionPolicy(max_utilization=1.0)).reason == "late"
    d = decide(busy, AdmissionPolicy(enabled=False))
    assert d.admitted and d.utilization_after > 0.99


def test_reserved_admissions_count() -> None:
    policy = AdmissionPolicy(max_utilization=0.85, prior_stream_load=0.01)
    assert decide(load(demand_fraction=0.8), policy, reserved=3).admitted
    assert not decide(load(demand_fraction=0.8), policy, reserved=5).admitted


def test_late_chunks_refuse() -> None:
    assert decide(load(late_recent=3), AdmissionPolicy()).reason == "late"


def test_first_audio_scaled_by_the_queue_refuses() -> None:
    policy = AdmissionPolicy(first_audio_bound_s=0.1, max_utilization=0.99, prior_stream_load=0.05)
    assert decide(load(urgent_p95_s=0.05, demand_fraction=0.5), policy).admitted
    d = decide(load(urgent_p95_s=0.09, demand_fraction=0.8), policy)
    assert d.reason == "first_audio" and d.first_audio_after_s > 0.09


def test_lite_when_a_lighter_path_exists() -> None:
    d = decide(load(demand_fraction=0.95), AdmissionPolicy(lite=True))
    assert d.verdict is Verdict.LITE and not d.admitted


def test_admission_keeps_an_overloaded_h200_in_real_time() -> None:
    policy = AdmissionPolicy()
    config = SimConfig(streams=1000, seconds=12.0, join_s=4.0)
    free = simulate(config, h200_scheduler(), FakeDevice(h200_table()))
    # Past the simulated H200's ~850 streams (bench/engine_sim.py): late chunks, slow starts.
    assert free.underruns > 1000 and free.p95_first_audio() > 0.15
    held = simulate(config, h200_scheduler(), FakeDevice(h200_table()),
                    admit=lambda snap: decide(snap, policy).admitted)  # fmt: skip
    assert held.refused > 0
    assert held.underruns == 0
    assert held.p95_first_audio() < 0.1
    assert held.windows > 0.8 * free.windows  # admission costs little throughput


def test_lookahead_calls_within_their_lead_do_not_refuse() -> None:
    """Later segments' acoustic calls are due LOOKAHEAD_LEAD_S (1 s) before their listeners
    could run out: delivered 0.5 s after that due, 0.5 s before the run-out (need_by),
    nobody ran out, and the next utterance is admitted; one delivered after its need_by
    refuses (an underrun)."""
    policy = AdmissionPolicy()
    s = h200_scheduler()
    for k in range(20):
        s.submit(k, f"s{k}", ACOUSTIC, length=20, now=0.0, due=1.0, need_by=2.0)
    t = 1.5
    while (plan := s.schedule(t)) is not None:
        assert not any(d.late for d in s.complete(plan, t + plan.cost_s))
        t += plan.cost_s
    assert t < 2.0 and s.stats.late == 0
    assert decide(s.load(t), policy).admitted
    s.submit(99, "late", ACOUSTIC, length=20, now=t, due=t + 0.1, need_by=t + 0.2)
    plan = s.schedule(t + 0.3)
    assert plan is not None
    assert [d.late for d in s.complete(plan, t + 0.3 + plan.cost_s)] == [True]
    assert decide(s.load(t + 0.4), policy).reason == "late"


def test_engine_admits_while_lookahead_calls_arrive_within_their_lead() -> None:
    """End to end through the engine process's channel: a front end's acoustic call due
    0.2 s ahead and needed 1 s ahead comes back 0.5 s later (after its due, before it is
    needed): the engine counts it on time and the front end admits; one needed 0.3 s ahead
    is late, and admission refuses."""
    from emostream.engine.client import EngineClient
    from emostream.engine.core import EngineCore

    clock = [100.0]  # the engine's and the front end's clock (a batch takes 0.5 s)

    def run(requests: list[Any]) -> list[Latent]:
        clock[0] += 0.5
        return [Latent(np.zeros((80, 4), np.float32)) for _ in requests]

    stage = BatchedStage("ac", "acoustic", run, (1, 2), size=lambda r: 1)
    core = EngineCore({"ac": stage}, clock=lambda: clock[0], stats_interval_s=0.0)
    voice: Any = _Declares(stage)
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "engine.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen()
        engine = threading.Thread(target=core.serve, args=(listener,), kwargs={"stop": stop.is_set})
        engine.start()

        async def call(client: EngineClient, due_in: float, need_in: float) -> Decision:
            t = clock[0]
            latent = await client.acoustic(voice, "x", Controls(), deadline=t + due_in,
                                           need_by=t + need_in)  # fmt: skip
            assert latent.num_frames == 4
            assert client._status is not None
            for _ in range(500):  # the engine publishes its load after the delivery
                load = client._status.read()
                if load is not None and load.now >= t + 0.5:
                    break
                await asyncio.sleep(0.01)
            return client.admit()

        async def main() -> tuple[Decision, Decision]:
            client = EngineClient(path, clock=lambda: clock[0])
            await client.start()
            try:
                return await call(client, 0.2, 1.0), await call(client, 0.1, 0.3)
            finally:
                client.close()

        try:
            on_time, late = asyncio.run(main())
        finally:
            stop.set()
            engine.join(10)
            core.close()
            listener.close()
    assert on_time.admitted, on_time
    assert late.reason == "late"
    assert core.scheduler.stats.late == 1
