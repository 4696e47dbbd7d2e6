"""Admission on the CPU path: the decision alone (sans-I/O), then the service with a thread
runner whose model calls are slow on purpose."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.codec.packetizer import OutputFormat
from emostream.config import Settings
from emostream.engine.admission import Admits, Verdict
from emostream.engine.cpu_admission import CpuAdmissionPolicy, decide, stream_share
from emostream.engine.cpu_load import CpuLoad
from emostream.engine.devices import setup_device
from emostream.engine.runner import ThreadRunner
from emostream.stream.service import Busy, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest
from emostream.voices.base import Controls, Latent, VoiceInfo
from emostream.voices.catalog import VoiceCatalog

POLICY = CpuAdmissionPolicy()


def load(**kw: Any) -> CpuLoad:
    base: dict[str, Any] = {
        "now": 10.0, "window_s": 2.0, "workers": 2, "cores": 2, "busy_fraction": 0.2,
        "work_per_utterance_s": 0.2, "first_audio_p95_s": 0.04, "urgent_calls": 20,
        "late_recent": 0, "last_late_at": None, "loop_lag_p95_s": 0.002, "lag_samples": 100,
        "pending_starts": 0, "oldest_pending_at": None, "live_streams": 10,
        "first_service_s": 0.03, "start_times": (),
    }  # fmt: skip
    base.update(kw)
    return CpuLoad(**base)


def test_a_light_load_admits() -> None:
    d = decide(load(), POLICY)
    assert d.verdict is Verdict.ADMIT and d.reason == "" and d.retry_after_s == 0.0
    assert d.utilization_after == pytest.approx(0.2 + 0.2 / 4)


def test_busy_workers_refuse_with_a_retry_hint() -> None:
    d = decide(load(busy_fraction=0.76), POLICY)  # 0.76 + 0.05 > 0.8
    assert d.verdict is Verdict.REFUSE and d.reason == "utilization"
    assert d.retry_after_s == pytest.approx(1.0)  # half the window: no better guess


def test_a_burst_of_starts_counts_before_its_work_runs() -> None:
    # 16 starts in the window, none ended, 0.05 of the workers each: 0.8 + 0.05 > 0.8
    d = decide(load(busy_fraction=0.1, pending_starts=16, oldest_pending_at=9.5), POLICY)
    assert d.reason == "utilization" and d.utilization_after == pytest.approx(0.8 + 0.05)
    assert d.retry_after_s == pytest.approx(1.5)  # when the oldest start leaves the window
    assert decide(load(busy_fraction=0.1, pending_starts=14, oldest_pending_at=9.5),
                  POLICY).admitted  # fmt: skip


def test_before_any_measurement_the_prior_sets_a_stream_share() -> None:
    cold = load(work_per_utterance_s=0.0, busy_fraction=0.0, cores=1, workers=2)
    assert stream_share(cold, POLICY) == pytest.approx(POLICY.prior_work_s / 2.0)  # 1 core
    assert stream_share(replace(cold, cores=8), POLICY) == pytest.approx(POLICY.prior_work_s / 4)
    refused = decide(replace(cold, pending_starts=5, oldest_pending_at=10.0), POLICY)
    assert refused.reason == "utilization"  # 6 x 0.15 > 0.8 on one core


def test_a_late_call_refuses_until_it_leaves_the_window() -> None:
    d = decide(load(late_recent=1, last_late_at=9.7), POLICY)
    assert d.reason == "late" and d.retry_after_s == pytest.approx(1.7)


def test_loop_lag_and_first_audio_refuse_on_enough_samples() -> None:
    assert decide(load(loop_lag_p95_s=0.08), POLICY).reason == "loop_lag"
    assert decide(load(loop_lag_p95_s=0.08, lag_samples=3), POLICY).admitted
    # first calls' p95 0.12 s at u 0.5 -> 0.55: 0.12 x 0.5 / 0.45 = 0.133 (admit)
    assert decide(load(first_audio_p95_s=0.12, busy_fraction=0.5), POLICY).admitted
    d = decide(load(first_audio_p95_s=0.14, busy_fraction=0.5), POLICY)
    assert d.reason == "first_audio" and d.first_audio_after_s > 0.15
    assert decide(load(first_audio_p95_s=0.5, urgent_calls=2), POLICY).admitted


def test_a_burst_of_starts_is_bounded_by_the_first_calls_ahead_of_the_next() -> None:
    # Each start's first calls run 40 ms; on 2 workers the next start waits for those of the
    # starts within the 150 ms bound: 40 x (1 + n/2) <= 150 for n <= 5.
    five = tuple(9.9 + 0.01 * i for i in range(5))
    busy = load(first_service_s=0.04, start_times=(9.0, *five))  # 9.0: long past the bound
    assert decide(busy, POLICY).admitted
    d = decide(replace(busy, start_times=(*five, 9.96)), POLICY)
    assert d.reason == "first_audio" and d.first_audio_after_s == pytest.approx(0.04 * 4)
    assert d.retry_after_s == pytest.approx(0.1)  # 9.9 + 0.15 - 10.0 = 0.05, at least 0.1
    # Before any first call was measured, the prior stands for their run time.
    cold = load(urgent_calls=0, first_service_s=0.0, start_times=(*five, 9.96, 9.97, 9.98))
    assert not decide(cold, POLICY).admitted  # 0.05 x (1 + 8/2) > 0.15
    assert decide(replace(cold, start_times=five[:3]), POLICY).admitted  # 0.05 x 2.5
    # A first call slower than the bound alone is no burst: nothing to refuse for.
    assert decide(load(first_service_s=0.2), POLICY).admitted


def test_a_few_live_utterances_are_always_admitted_and_a_disabled_policy_admits_all() -> None:
    overloaded = load(busy_fraction=1.0, late_recent=3, last_late_at=9.9)
    assert decide(replace(overloaded, live_streams=3), POLICY).admitted  # 2 per core: 4
    assert not decide(replace(overloaded, live_streams=4), POLICY).admitted
    assert not decide(replace(overloaded, live_streams=2, cores=1), POLICY).admitted
    assert decide(replace(overloaded, live_streams=7, cores=8, workers=4), POLICY).admitted
    d = decide(overloaded, replace(POLICY, enabled=False))
    assert d.admitted and d.utilization_after > 1.0  # the figures are still computed


def test_the_retry_hint_stays_within_the_window() -> None:
    assert decide(load(late_recent=1, last_late_at=8.0), POLICY).retry_after_s == 0.1
    assert decide(load(late_recent=1, last_late_at=20.0), POLICY).retry_after_s == 2.0


def test_settings_make_the_policy() -> None:
    s = Settings()
    assert (s.cpu_admission, s.cpu_max_utilization, s.cpu_first_audio_bound_ms) == (
        True, 0.8, 150.0)  # fmt: skip
    env = {"EMOSTREAM_CPU_ADMISSION": "0", "EMOSTREAM_CPU_MAX_UTILIZATION": "0.7",
           "EMOSTREAM_CPU_FIRST_AUDIO_BOUND_MS": "120"}  # fmt: skip
    p = CpuAdmissionPolicy.from_settings(Settings.from_env(env))
    assert (p.enabled, p.max_utilization, p.first_audio_bound_s) == (False, 0.7, 0.12)


async def test_the_cpu_device_admits_from_measured_load() -> None:
    setup = await setup_device(Settings(decode_workers=1))
    try:
        runner = setup.runner
        assert isinstance(runner, ThreadRunner) and isinstance(runner, Admits)
        assert runner.admission == CpuAdmissionPolicy() and runner.load is not None
    finally:
        await setup.close()
    plain = ThreadRunner(workers=1)  # no policy: admits, measures nothing
    assert plain.admit().admitted and plain.load is None
    plain.close()


def test_the_runner_spreads_retry_hints() -> None:
    """Clients refused together are told to come back at different times (up to half again
    the decision's hint)."""

    class _Top(random.Random):
        def random(self) -> float:
            return 0.999

    policy = CpuAdmissionPolicy(min_streams_per_core=0, prior_work_s=10.0)  # all refused
    top = ThreadRunner(workers=1, admission=policy, cores=1, rng=_Top())
    spread = ThreadRunner(workers=1, admission=policy, cores=1, rng=random.Random(7))
    try:
        d = top.admit()
        assert d.reason == "utilization" and d.retry_after_s == pytest.approx(1.0 * 1.4995)
        hints = {spread.admit().retry_after_s for _ in range(5)}
        assert len(hints) == 5 and all(1.0 <= h <= 1.5 for h in hints)
    finally:
        top.close()
        spread.close()


# -- the service over a thread runner whose calls take wall time -------------------------
HOP = 256
FRAMES = 172  # 2 s of audio at 22,050 Hz
SEGMENTS = 30  # an utterance: 30 x (20 ms + its windows x 10 ms) of the one worker


class _SlowVoice:
    """Each acoustic call takes 20 ms, each decode window 10 ms (sleeping: wall time, as a
    model waiting for a core would), whatever else runs on the machine."""

    info = VoiceInfo("slow", "t", "en", 22050, ())
    hop_length = HOP
    context_frames = 8

    def acoustic(self, text: str, controls: Controls) -> Latent:
        time.sleep(0.02)
        return Latent(np.zeros((80, FRAMES), np.float32))

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        time.sleep(0.01)
        return np.zeros(frames.shape[1] * HOP, np.float32)


async def _texts(n: int) -> AsyncIterator[str]:
    for i in range(n):
        yield f"Segment {i}."


async def _speak(service: SpeechService, stream_id: str, segments: int, slot: Any) -> int:
    """An admitted utterance read to its end: the audio samples it gave."""
    request = UtteranceRequest(
        voice=_SlowVoice(),
        fmt=OutputFormat(codec="pcm_s16le", sample_rate=24000),
        stream_id=stream_id,
    )
    samples = 0
    async with service.utterance(request, _texts(segments), transport="ws", slot=slot) as (out, _):
        async for item in out:
            if isinstance(item, Packet):
                samples += item.samples
    return samples


async def test_past_capacity_new_starts_get_busy_while_admitted_ones_finish() -> None:
    policy = CpuAdmissionPolicy(window_s=1.0, max_utilization=0.6, prior_work_s=0.01,
                                first_audio_bound_s=10.0, loop_lag_bound_s=10.0,
                                min_streams_per_core=1)  # fmt: skip
    runner = ThreadRunner(workers=1, admission=policy, cores=1)
    service = SpeechService(Settings(), VoiceCatalog(), runner=runner)
    try:
        first, second = service.admit(), service.admit()  # an idle runner admits
        speaking = [
            asyncio.create_task(_speak(service, f"s{i}", SEGMENTS, slot))
            for i, slot in enumerate((first, second))
        ]
        await asyncio.sleep(1.2)  # the one worker has been busy for the whole window
        assert runner.load is not None
        assert runner.load.snapshot(time.monotonic()).busy_fraction > 0.5
        with pytest.raises(Busy, match="utilization") as refused:
            service.admit()  # synchronous: refused before any model work (no wall-clock bound:
            # one failed at 11 ms on a loaded 2-core CI machine)
        assert 0.1 <= refused.value.retry_after_s <= 1.0
        assert service.active == 2  # the refused start took no slot
        samples = await asyncio.gather(*speaking)
        expected = SEGMENTS * FRAMES * HOP * 24000 // 22050
        assert all(abs(s - expected) <= SEGMENTS * 2 for s in samples), samples  # all whole
        refusals = service.metrics.refusals.labels("utilization")._value.get()
        assert refusals == 1
        await asyncio.sleep(1.05)  # the load leaves the window: admitted again
        service.admit().release()
    finally:
        service.close()
