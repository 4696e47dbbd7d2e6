"""Admission on the CPU path: whether one more utterance fits (sans-I/O).

The CPU path (:class:`~emostream.engine.runner.ThreadRunner`: ONNX Runtime on a few worker
threads, Opus on the event loop) does not slow down gently either: past its capacity every
stream's chunks come late together, and ``max_streams`` refused none of them. A fixed stream
count cannot say where that point is (another program on the machine moves it), so
:func:`decide` reads what the process measures live
(:class:`~emostream.engine.cpu_load.CpuLoad`) and refuses the next utterance when it would
break the bound for the ones already admitted:

* **utilization**: the workers' busy share (wall time: it grows when calls wait for a core,
  whoever holds it), or the share the pending starts commit to when that is larger (a burst
  of starts whose work has not run yet), plus one utterance's share, must stay within
  ``max_utilization``. One utterance's share is its measured work over the window; before any
  utterance has ended, ``prior_work_s`` on the cores the workers can use;
* **late**: a call finished after its listener ran out of audio (a server-side underrun)
  within the window refuses until the window has none;
* **loop lag**: the event loop's p95 delay in taking results (it also encodes and sends every
  packet) within ``loop_lag_bound_s``;
* **first audio**: the p95 latency of first calls (acoustic + first window), scaled to the
  utilization after admission as a queue's wait grows (``1 / (1 - u)``), within
  ``first_audio_bound_s``; and, for a burst, the first calls of the utterances started within
  that bound run ahead of this one's (earliest deadline first): their median run time each,
  shared by the workers, plus its own, within the bound too (``prior_first_s`` before any
  was measured).

Nothing is refused while fewer than ``min_streams_per_core`` utterances per core the
workers can use are live (2 on the 2-core default install: 4): so few streams are not what
makes a machine slow, and refusing them would leave a machine loaded by other programs
serving no one; nor while the policy is not ``enabled`` (benchmarks of the raw ceiling; the
figures are still computed). A refusal says when to try again (``retry_after_s``): when
the evidence behind it leaves the window, as far as that is known (the runner spreads it by up
to ``retry_spread`` more). The service turns it into its ``busy`` error
(:class:`emostream.stream.service.Busy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from emostream.config import Settings
from emostream.engine.admission import Decision, Verdict
from emostream.engine.cpu_load import CpuLoad

MIN_RETRY_S = 0.1


@dataclass(frozen=True)
class CpuAdmissionPolicy:
    max_utilization: float = 0.8
    first_audio_bound_s: float = 0.15  # the server's share of a 250 ms first-audio bound
    loop_lag_bound_s: float = 0.05
    # Worker seconds of one utterance before one has been measured (af_heart's reply, doubled
    # for joe and contention: docs/measurements.md, "Figures behind the code").
    prior_work_s: float = 0.3
    # Run time of an utterance's first calls (acoustic + first window) before measured.
    prior_first_s: float = 0.05
    window_s: float = 2.0  # what the load is measured over
    min_samples: int = 5  # first-audio and loop-lag figures need this many samples
    min_streams_per_core: int = 2  # fewer live utterances than this per core: always admit
    retry_spread: float = 0.5  # the runner lengthens each retry hint by up to this share
    enabled: bool = True  # False: admit everything (the figures are still computed)

    @classmethod
    def from_settings(cls, settings: Settings) -> CpuAdmissionPolicy:
        return cls(
            max_utilization=settings.cpu_max_utilization,
            first_audio_bound_s=settings.cpu_first_audio_bound_ms / 1000.0,
            enabled=settings.cpu_admission,
        )


def stream_share(load: CpuLoad, policy: CpuAdmissionPolicy) -> float:
    """One more utterance's share of the workers over the window (measured, else the prior
    on the cores the workers can use)."""
    if load.work_per_utterance_s > 0:
        return load.work_per_utterance_s / (load.window_s * load.workers)
    return policy.prior_work_s / (load.window_s * max(1, min(load.workers, load.cores)))


def decide(load: CpuLoad, policy: CpuAdmissionPolicy) -> Decision:
    """Admit one more utterance under ``load``? (see the module docs)."""
    one = stream_share(load, policy)
    committed = load.pending_starts * one
    u = max(load.busy_fraction, committed)
    after = u + one
    first = load.first_audio_p95_s * (1.0 - min(u, 0.99)) / (1.0 - min(after, 0.999))
    first_run = load.first_service_s if load.urgent_calls else policy.prior_first_s
    since = load.now - policy.first_audio_bound_s
    recent = [t for t in load.start_times if t > since]  # their first calls go first
    ahead = len(recent)
    burst = first_run * (1.0 + ahead / max(1, min(load.workers, load.cores)))
    floor = policy.min_streams_per_core * max(1, min(load.workers, load.cores))
    if not policy.enabled or load.live_streams < floor:
        return Decision(Verdict.ADMIT, "", after, max(first, burst))
    window = load.window_s
    retry = window / 2
    if after > policy.max_utilization:
        reason = "utilization"
        if committed >= load.busy_fraction and load.oldest_pending_at is not None:
            retry = load.oldest_pending_at + window - load.now
    elif load.late_recent > 0:
        reason = "late"
        if load.last_late_at is not None:
            retry = load.last_late_at + window - load.now
    elif load.lag_samples >= policy.min_samples and load.loop_lag_p95_s > policy.loop_lag_bound_s:
        reason = "loop_lag"
    elif load.urgent_calls >= policy.min_samples and first > policy.first_audio_bound_s:
        reason = "first_audio"
    elif recent and burst > policy.first_audio_bound_s:
        reason = "first_audio"
        retry = recent[0] + policy.first_audio_bound_s - load.now  # the oldest leaves
    else:
        return Decision(Verdict.ADMIT, "", after, max(first, burst))
    retry = min(max(retry, MIN_RETRY_S), window)
    return Decision(Verdict.REFUSE, reason, after, max(first, burst), retry_after_s=retry)
