"""Admission: whether one more utterance fits on the engine (sans-I/O).

The engine's scheduler knows every queued call's deadline and how busy the device was
(:class:`~emostream.engine.scheduling.load.LoadSnapshot`). A device near saturation does not
slow down gently: queues grow without bound, so past a point one more stream makes every
stream's first audio late (and then its later chunks). :func:`decide` refuses the next
utterance before that point, so that the ones admitted keep their bound (unless the policy
is not ``enabled``: benchmarks of the raw ceiling, ``EMOSTREAM_ENGINE_ADMISSION=0``):

* **utilization**: the device share the streams need at full batches: the larger of
  what the recent calls took (``demand_fraction``; the busy share overstates it at low
  load, where the device runs small batches because it is free) and what the streams
  started recently commit to (``committed_fraction``: starts x a stream's work, which
  sees a burst of new streams before their calls run), plus one stream's share for this
  one and for each of ``reserved`` (admitted by this front end, not yet seen by the
  engine), must stay below ``max_utilization``;
* **lateness**: a non-urgent call delivered late within the window refuses until the
  window has none. Late is after the call's ``need_by``, when its listener ran out of
  audio for want of it (a server-side underrun), not after its scheduling due: a later
  segment's acoustic call is due :data:`~emostream.stream.streamer.LOOKAHEAD_LEAD_S`
  before that, and arriving within the lead starves no one
  (:class:`~emostream.engine.scheduling.work.WorkItem`'s ``need_by``);
* **first audio**: the engine's p95 latency of urgent calls (first chunks) grows as
  ``1 / (1 - u)`` (a queue's waiting time); scaled to the utilization after admission it
  must stay within ``first_audio_bound_s``.

A refusal is :attr:`Verdict.LITE` when the policy has a lighter path to offer
(``lite``), else :attr:`Verdict.REFUSE`; the service turns a refusal into the same ``busy``
error as its stream limit (:class:`emostream.stream.service.Busy`). The CPU path's own
admission (:mod:`emostream.engine.cpu_admission`) gives the same :class:`Decision`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from emostream.engine.scheduling.load import LoadSnapshot


class Verdict(StrEnum):
    ADMIT = "admit"
    LITE = "lite"  # refused here; a lighter path (e.g. the CPU voice) may serve it
    REFUSE = "refuse"


@dataclass(frozen=True)
class AdmissionPolicy:
    first_audio_bound_s: float = 0.1  # the engine's share of the 200 ms first-audio bound
    max_utilization: float = 0.85
    prior_stream_load: float = 0.001  # device share of one more stream (as on the H200)
    lite: bool = False  # a lighter path exists: refusals say LITE
    enabled: bool = True  # False: admit everything (the figures are still computed)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str  # "" when admitted, else "utilization", "late" or "first_audio"
    utilization_after: float
    first_audio_after_s: float
    retry_after_s: float = 0.0  # a refusal: when a new start may be admitted (0: not said)

    @property
    def admitted(self) -> bool:
        return self.verdict is Verdict.ADMIT


def decide(load: LoadSnapshot, policy: AdmissionPolicy, *, reserved: int = 0) -> Decision:
    """Admit one more utterance under ``load``? (see the module docs)."""
    u = max(load.demand_fraction, load.committed_fraction)
    one = load.work_per_stream_s / load.window_s if load.work_per_stream_s > 0 else 0.0
    after = u + max(one, policy.prior_stream_load) * (1 + max(0, reserved))
    # Waiting time of an M/D/1-like queue grows as 1 / (1 - u).
    u_now = min(u, 0.99)
    u_after = min(after, 0.999)
    first = load.urgent_p95_s * (1.0 - u_now) / (1.0 - u_after)
    if not policy.enabled:
        return Decision(Verdict.ADMIT, "", after, first)
    if after > policy.max_utilization:
        reason = "utilization"
    elif load.late_recent > 0:
        reason = "late"
    elif first > policy.first_audio_bound_s:
        reason = "first_audio"
    else:
        return Decision(Verdict.ADMIT, "", after, first)
    verdict = Verdict.LITE if policy.lite else Verdict.REFUSE
    return Decision(verdict, reason, after, first)


@runtime_checkable
class Admits(Protocol):
    """A runner that can refuse work (the engine client); :class:`SpeechService` asks it
    before taking a stream slot."""

    def admit(self) -> Decision: ...
