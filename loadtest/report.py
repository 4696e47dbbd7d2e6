"""Per-utterance records and the report built from them (sans-I/O)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest.stats import Histogram, summary


@dataclass
class UtteranceRecord:
    """What one simulated listener saw of one utterance (client clock, ms)."""

    stream: int  # which simulated stream (connection) it ran on
    text_chars: int = 0
    error: str | None = None  # error code (server's, or a client-side one) when it failed
    started: bool = False  # the server answered its start with ``started`` (admitted)
    refused_ms: float | None = None  # refused before started: start sent -> the error
    retry_after_ms: float | None = None  # what the refusal said to wait (busy)
    first_audio_ms: float | None = None  # first packet - moment the first segment was complete
    request_to_done_ms: float | None = None
    delivery_ms: float | None = None  # last packet - request sent
    audio_ms: float = 0.0  # packets x frame_ms
    packets: int = 0
    underruns: int = 0
    underrun_ms: float = 0.0
    rfc3550_jitter_ms: float = 0.0
    first_underrun_audio_ms: float | None = None  # audio position of the first stall
    server_first_audio_ms: float | None = None  # from the server's ``done``
    started_s: float | None = None  # closed loop: seconds after the level's measured start
    server_rtf: float | None = None  # server compute / audio, from ``done``
    server_audio_ms: float | None = None
    cached: bool = False  # the server's ``done`` said the phrase cache answered
    playback_end_ms: float | None = None  # client clock: when the listener heard it all
    gaps: Histogram = field(default_factory=Histogram)
    jitter: Histogram = field(default_factory=Histogram)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def delivery_rtf(self) -> float | None:
        """Wall time to deliver the audio / its duration (< 1: faster than real time)."""
        if self.delivery_ms is None or self.audio_ms <= 0:
            return None
        return self.delivery_ms / self.audio_ms


@dataclass(frozen=True)
class Targets:
    """What a good level means for ``--find-max``."""

    p95_first_audio_ms: float = 200.0
    max_underruns_per_min: float = 0.0
    max_error_rate: float = 0.0


STEADY_AFTER_S = 5.0  # see build_report's first_audio_ms_after_5s


def _vals(xs: list[float | None]) -> list[float]:
    return [x for x in xs if x is not None and not math.isnan(x)]


def build_report(
    records: list[UtteranceRecord],
    *,
    wall_s: float,
    concurrency: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Aggregate figures for one load level. ``wall_s`` is the measured window."""
    ok = [r for r in records if r.ok]
    gaps, jitter = Histogram(), Histogram()
    for r in records:
        gaps.merge(r.gaps)
        jitter.merge(r.jitter)
    audio_ms = sum(r.audio_ms for r in records)
    audio_min = audio_ms / 60_000.0
    underruns = sum(r.underruns for r in records)
    underrun_ms = sum(r.underrun_ms for r in records)
    errors = Counter(r.error for r in records if r.error is not None)
    refused = Counter(r.error for r in records if r.refused_ms is not None and r.error)
    streams = sorted({r.stream for r in records})
    per_stream_rtf: list[float] = []
    for s in streams:
        mine = [r for r in ok if r.stream == s and r.delivery_ms is not None and r.audio_ms > 0]
        if mine:
            per_stream_rtf.append(
                sum(r.delivery_ms or 0.0 for r in mine) / sum(r.audio_ms for r in mine)
            )
    # the level's utterances that started STEADY_AFTER_S or later (see below)
    steady = [
        r.first_audio_ms for r in ok if r.started_s is not None and r.started_s >= STEADY_AFTER_S
    ]
    report: dict[str, Any] = {
        "concurrency": concurrency,
        "utterances": len(records),
        "utterances_ok": len(ok),
        "streams": len(streams),
        "wall_s": round(wall_s, 2),
        "first_audio_ms": summary(_vals([r.first_audio_ms for r in ok])),
        "server_first_audio_ms": summary(_vals([r.server_first_audio_ms for r in ok])),
        # the same, less each level's start (the staggered start over ramp_s and the
        # warm-up's tail): the steady state apart from the start burst. Not in "good".
        f"first_audio_ms_after_{STEADY_AFTER_S:g}s": summary(_vals(steady)),
        "rtf": {
            "delivery_per_utterance": summary(_vals([r.delivery_rtf for r in ok]), digits=3),
            "delivery_per_stream": summary(per_stream_rtf, digits=3),
            "server_compute_per_utterance": summary(_vals([r.server_rtf for r in ok]), digits=3),
            "aggregate_audio_s_per_wall_s": round(audio_ms / 1000.0 / wall_s, 3)
            if wall_s > 0
            else None,
        },
        "audio_s": round(audio_ms / 1000.0, 2),
        "underruns": {
            "count": underruns,
            "total_ms": round(underrun_ms, 1),
            "per_stream_minute": round(underruns / audio_min, 3) if audio_min else None,
            "ms_per_stream_minute": round(underrun_ms / audio_min, 1) if audio_min else None,
            "utterances_with_underrun": sum(1 for r in records if r.underruns),
            "first_stall_at_audio_ms": summary(_vals([r.first_underrun_audio_ms for r in records])),
        },
        "interarrival_gap_ms": gaps.summary(),
        "jitter_ms": {
            **jitter.summary(),
            "rfc3550_mean": round(sum(r.rfc3550_jitter_ms for r in ok) / len(ok), 2)
            if ok
            else None,
        },
        "errors": dict(sorted(errors.items())),
        "error_rate": round(sum(errors.values()) / len(records), 4) if records else None,
        # admission: starts answered started vs refused (busy, ...) before it, how fast the
        # refusal came (client clock, start sent -> error) and the wait it asked for
        "admission": {
            "started": sum(1 for r in records if r.started),
            "refused": sum(1 for r in records if r.refused_ms is not None),
            "refused_by_code": dict(sorted(refused.items())),
            "time_to_refusal_ms": summary(_vals([r.refused_ms for r in records])),
            "retry_after_ms": summary(_vals([r.retry_after_ms for r in records])),
        },
    }
    if extra:
        report.update(extra)
    return report


def is_good(report: dict[str, Any], targets: Targets) -> bool:
    """True when a level meets ``targets`` (and produced some audio at all)."""
    if not report.get("utterances_ok"):
        return False
    p95 = report["first_audio_ms"]["p95"]
    per_min = report["underruns"]["per_stream_minute"]
    rate = report["error_rate"] or 0.0
    return (
        p95 is not None
        and p95 <= targets.p95_first_audio_ms
        and (per_min or 0.0) <= targets.max_underruns_per_min
        and rate <= targets.max_error_rate
    )
