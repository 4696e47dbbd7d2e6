from __future__ import annotations

import pytest

from loadtest.playback import PlaybackClock
from loadtest.report import Targets, UtteranceRecord, build_report, is_good


def rec(
    stream: int, first: float, *, late: bool = False, error: str | None = None
) -> UtteranceRecord:
    c = PlaybackClock()
    times = [0.0, 20.0, 500.0] if late else [20.0 * k for k in range(150)]  # 3 s of audio
    for t in times:
        c.on_packet(t)
    return UtteranceRecord(
        stream=stream, first_audio_ms=first, delivery_ms=times[-1] + first, audio_ms=c.audio_ms,
        packets=c.packets, underruns=c.underruns, underrun_ms=c.underrun_ms, gaps=c.gaps,
        first_underrun_audio_ms=c.first_underrun_audio_ms,
        jitter=c.jitter, server_rtf=0.2, error=error,
    )  # fmt: skip


def test_report_aggregates() -> None:
    records = [rec(s, 100.0 + 10 * s) for s in range(4)] + [rec(0, 150.0, late=True)]
    r = build_report(records, wall_s=6.0, concurrency=4)
    assert r["utterances"] == 5 and r["streams"] == 4 and r["utterances_ok"] == 5
    assert r["first_audio_ms"]["p50"] == pytest.approx(120.0)
    assert r["underruns"]["count"] == 1
    assert r["underruns"]["first_stall_at_audio_ms"]["max"] == pytest.approx(40.0)
    audio_min = (4 * 3.0 + 0.06) / 60
    assert r["underruns"]["per_stream_minute"] == pytest.approx(1 / audio_min, rel=1e-3)
    assert r["rtf"]["aggregate_audio_s_per_wall_s"] == pytest.approx((12.06) / 6.0, rel=1e-3)
    assert r["interarrival_gap_ms"]["p50"] == pytest.approx(20.0)
    assert r["errors"] == {} and r["error_rate"] == 0
    assert r["rtf"]["delivery_per_stream"]["n"] == 4
    assert not is_good(r, Targets())  # one underrun


def test_errors_and_targets() -> None:
    records = [rec(0, 100.0), rec(1, 120.0), rec(2, 0.0, error="busy")]
    records[2].first_audio_ms = None
    r = build_report(records, wall_s=3.0)
    assert r["errors"] == {"busy": 1}
    assert r["error_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert not is_good(r, Targets())
    assert is_good(r, Targets(max_error_rate=0.5))
    assert not is_good(r, Targets(p95_first_audio_ms=50, max_error_rate=0.5))


def test_empty_report_is_not_good() -> None:
    r = build_report([], wall_s=1.0)
    assert r["first_audio_ms"]["p95"] is None and r["error_rate"] is None
    assert not is_good(r, Targets())


def test_first_audio_after_the_level_start_leaves_out_the_start_burst() -> None:
    early = [UtteranceRecord(stream=i, first_audio_ms=900.0, audio_ms=3000.0, started_s=1.0)
             for i in range(4)]  # fmt: skip
    steady = [UtteranceRecord(stream=i, first_audio_ms=40.0, audio_ms=3000.0, started_s=8.0)
              for i in range(4)]  # fmt: skip
    r = build_report(early + steady, wall_s=15.0, concurrency=4)
    assert r["first_audio_ms"]["p95"] == 900.0  # every utterance: the bar's figure
    assert r["first_audio_ms_after_5s"]["n"] == 4
    assert r["first_audio_ms_after_5s"]["p95"] == 40.0


def test_admission_counts_started_and_refused_starts_and_how_fast_refusals_came() -> None:
    admitted = [rec(s, 100.0) for s in range(3)]
    for r in admitted:
        r.started = True
    refused = [
        UtteranceRecord(stream=3, error="busy", refused_ms=2.0, retry_after_ms=1000.0),
        UtteranceRecord(stream=4, error="busy", refused_ms=4.0, retry_after_ms=500.0),
        UtteranceRecord(stream=5, error="timeout"),  # not a refusal: no answer at all
    ]
    a = build_report(admitted + refused, wall_s=6.0)["admission"]
    assert (a["started"], a["refused"], a["refused_by_code"]) == (3, 2, {"busy": 2})
    assert a["time_to_refusal_ms"]["n"] == 2 and a["time_to_refusal_ms"]["max"] == 4.0
    assert (a["retry_after_ms"]["n"], a["retry_after_ms"]["max"]) == (2, 1000.0)
