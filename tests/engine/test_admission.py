"""Admission (sans-I/O), alone and over the H200 fake device."""

from __future__ import annotations

from emostream.engine.admission import AdmissionPolicy, Verdict, decide
from emostream.engine.costs import h200_table
from emostream.engine.fake_device import FakeDevice, SimConfig, h200_scheduler, simulate
from emostream.engine.scheduler import LoadSnapshot


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
