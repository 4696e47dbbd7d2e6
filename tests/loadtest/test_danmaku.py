"""The danmaku pattern's bookkeeping alone: lines, outcomes, checks, the room's listener."""

from __future__ import annotations

import random

import pytest

from loadtest.danmaku import (
    REPEATED,
    LineRecord,
    RoomLedger,
    RoomPlayout,
    danmaku_summary,
    make_lines,
)


def rec(i: int, sent_ms: float = 0.0, ttl_ms: float = 8000.0, repeated: bool = False) -> LineRecord:
    return LineRecord(id=f"l{i}", room=0, text=f"line {i}", repeated=repeated, priority=0,
                      ttl_ms=ttl_ms, sent_ms=sent_ms)  # fmt: skip


def speak(led: RoomLedger, line_id: str, at: float, packets: int = 5, cached: bool = False,
          step: float = 1.0) -> float:  # fmt: skip
    led.event({"type": "started", "id": line_id, "frame_ms": 20, "speed": 1.0}, at)
    t = at
    for _ in range(packets):
        t += step
        led.packet(t)
    led.event({"type": "done", "id": line_id, "cached": cached, "first_audio_ms": 1.0,
               "audio_ms": 20.0 * packets}, t)  # fmt: skip
    return t


def test_make_lines_mixes_repeated_phrases_with_unique_fresh_ones() -> None:
    lines = make_lines(random.Random(3), 400, first=0, repeat_fraction=0.5)
    repeated = [t for t, r in lines if r]
    fresh = [t for t, r in lines if not r]
    assert 150 < len(repeated) < 250 and set(repeated) <= set(REPEATED)
    assert len(set(fresh)) == len(fresh)  # never the same fresh line twice
    assert all(not r for _, r in make_lines(random.Random(0), 20, first=0, repeat_fraction=0))


def test_every_outcome_is_counted_and_the_checks_pass() -> None:
    led = RoomLedger(0)
    for i in range(5):
        led.sent(rec(i, repeated=i == 1))
    led.event({"type": "queue", "depth": 5, "wait_ms": 0.0, "speed": 1.0}, 0.5)
    t = speak(led, "l0", 100.0)
    speak(led, "l1", t + 1, cached=True)
    led.event({"type": "line_dropped", "id": "l2", "reason": "overflow", "waited_ms": 0.0}, 1.0)
    led.event({"type": "line_dropped", "id": "l3", "reason": "expired", "waited_ms": 8000.0}, 8000)
    led.event({"type": "error", "id": "l4", "code": "busy"}, 200.0)
    assert led.settled
    s = danmaku_summary([led], queue_max=5)
    acc = s["checks"]["accounting"]
    assert acc["ok"] and acc["sent"] == 5 and acc["spoken"] == 2
    assert acc["dropped"] == {"expired": 1, "overflow": 1} and acc["refused"] == {"busy": 1}
    assert s["ok"] and s["checks"]["backlog"]["max_depth"] == 5
    assert s["first_audio_ms"]["live"]["n"] == 1 and s["first_audio_ms"]["cached"]["n"] == 1
    assert s["first_audio_ms"]["live"]["p50"] == 1.0
    assert s["repeated_phrases"] == {"sent": 1, "spoken": 1, "spoken_from_cache": 1}
    assert s["expired_waited_ms"]["max"] == 8000.0


def test_a_line_never_reported_fails_the_accounting() -> None:
    led = RoomLedger(0)
    led.sent(rec(0))
    led.sent(rec(1))
    speak(led, "l0", 10.0)
    led.event({"type": "started", "id": "l1"}, 50.0)  # started, never done
    assert not led.settled
    s = danmaku_summary([led], queue_max=32)
    assert not s["checks"]["accounting"]["ok"] and s["checks"]["accounting"]["unreported"] == 1
    assert not s["ok"]


def test_a_line_started_past_its_ttl_fails_both_ttl_checks() -> None:
    led = RoomLedger(0)
    led.sent(rec(0, sent_ms=0.0, ttl_ms=1000.0))
    led.sent(rec(1, sent_ms=0.0, ttl_ms=1000.0))
    t = speak(led, "l0", 999.0)
    speak(led, "l1", max(t, 1000.5))
    checks = danmaku_summary([led], queue_max=32)["checks"]
    started = checks["ttl_started"]
    assert not started["ok"] and started["lines_started_past_ttl"] == 1
    assert started["worst_ms_past_ttl"] > 0
    assert not checks["ttl"]["ok"] and checks["ttl"]["lines_heard_past_ttl"] == 2


def test_backlog_over_its_bound_fails() -> None:
    led = RoomLedger(0)
    led.sent(rec(0))
    speak(led, "l0", 1.0)
    led.event({"type": "queue", "depth": 33, "wait_ms": 10.0, "speed": 1.5}, 2.0)
    s = danmaku_summary([led], queue_max=32)
    assert not s["checks"]["backlog"]["ok"] and s["queue"]["speed_max"] == 1.5


def test_events_for_lines_never_sent_are_counted_not_credited() -> None:
    led = RoomLedger(0)
    led.sent(rec(0))
    led.event({"type": "started", "id": "zz"}, 1.0)
    led.packet(2.0)  # audio of a line not ours: not played, not counted
    led.event({"type": "done", "id": "zz"}, 3.0)
    led.event({"type": "error", "code": "bad_value"}, 3.0)
    s = danmaku_summary([led], queue_max=32)
    acc = s["checks"]["accounting"]
    assert acc["events_for_unknown_ids"] == 2 and acc["errors_without_id"] == {"bad_value": 1}
    assert acc["unreported"] == 1 and not acc["ok"]


def test_the_listener_plays_lines_back_to_back() -> None:
    play = RoomPlayout(jitter_buffer_ms=60.0, frame_ms=20.0)
    a, b = rec(0), rec(1, sent_ms=0.0)
    play.begin(a)
    for k in range(10):  # 200 ms of audio arriving at once at t=100
        play.packet(100.0 + 0.1 * k)
    assert a.heard_ms == 160.0 and play.played_out_ms == 360.0
    play.begin(b)
    play.packet(120.0)  # arrives while a is still playing: heard after a
    assert b.heard_ms == 360.0 and b.heard_delay_ms == 360.0 and b.underruns == 0
    play.packet(500.0)  # its second packet was due at 380: an underrun of 120 ms
    assert b.underruns == 1 and b.underrun_ms == 120.0
    c = rec(2, sent_ms=1000.0)
    play.begin(c)
    play.packet(2000.0)  # after silence: not an underrun, heard after the jitter buffer
    assert c.heard_ms == 2060.0 and c.underruns == 0


def test_a_line_heard_past_its_ttl_is_reported_for_the_listener() -> None:
    led = RoomLedger(0)
    led.sent(rec(0, ttl_ms=1000.0))
    led.sent(rec(1, ttl_ms=1000.0))
    speak(led, "l0", 10.0, packets=100, step=0.1)  # 2 s of audio arriving in 10 ms
    speak(led, "l1", 30.0, packets=5, step=0.1)
    s = danmaku_summary([led], queue_max=32)
    assert s["checks"]["ttl_started"]["ok"]  # both started in time ...
    assert s["listener"]["lines_heard_past_ttl"] == 1  # ... the second is heard 2 s later
    ttl = s["checks"]["ttl"]  # which fails the TTL check, judged at the listener
    assert not ttl["ok"] and ttl["judged"] == "listener" and ttl["lines_heard_past_ttl"] == 1
    assert ttl["worst_ms_past_ttl"] == pytest.approx(10.1 + 60 + 2000 - 1000, abs=0.1)
    assert not s["ok"]
