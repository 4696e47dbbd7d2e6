from __future__ import annotations

import pytest

from loadtest.playback import PlaybackClock


def feed(clock: PlaybackClock, times: list[float]) -> list[bool]:
    return [clock.on_packet(t) for t in times]


def test_real_time_delivery_has_no_underruns() -> None:
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=60)
    assert not any(feed(c, [100 + 20 * k for k in range(50)]))
    assert c.underruns == 0 and c.underrun_ms == 0
    assert c.first_underrun_audio_ms is None
    assert c.audio_ms == 1000
    assert c.playback_end_ms == pytest.approx(100 + 60 + 1000)
    assert c.jitter.quantile(0.99) == pytest.approx(0.0)


def test_burst_then_gap_within_buffer_is_fine() -> None:
    # 5 packets at once (100 ms of audio), next burst 150 ms later: buffer 60 + 100 covers it
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=60)
    feed(c, [0, 0, 0, 0, 0, 150, 150, 150])
    assert c.underruns == 0


def test_late_packet_counts_once_and_shifts_the_clock() -> None:
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=60)
    # packet 0 at 0 plays at 60; packet 1 due at 80 arrives at 200: 120 ms stall
    late = feed(c, [0, 200, 201, 202])
    assert late == [False, True, False, False]
    assert c.underruns == 1
    assert c.underrun_ms == pytest.approx(120)
    assert c.first_underrun_audio_ms == pytest.approx(20)
    # after the stall, packet 1 plays 200-220, 2 at 220, 3 at 240 -> end 260
    assert c.playback_end_ms == pytest.approx(260)


def test_repeated_starvation() -> None:
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=0)
    feed(c, [0, 40, 80, 120])  # each packet 20 ms late
    assert c.underruns == 3
    assert c.underrun_ms == pytest.approx(60)


def test_jitter_buffer_absorbs_lateness() -> None:
    times = [0, 50, 100, 150]  # 30 ms late per packet, cumulative 90 ms by the last
    small, big = PlaybackClock(jitter_buffer_ms=20), PlaybackClock(jitter_buffer_ms=100)
    feed(small, times)
    feed(big, times)
    assert small.underruns > 0 and big.underruns == 0


def test_rebuffer_adds_to_stall() -> None:
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=0, rebuffer_ms=40)
    feed(c, [0, 100])
    assert c.underrun_ms == pytest.approx(80 + 40)


def test_gaps_and_jitter_histograms() -> None:
    c = PlaybackClock(frame_ms=20, jitter_buffer_ms=1000)
    feed(c, [0, 0, 0, 100])
    assert c.gaps.count == 3
    assert c.gaps.quantile(1.0) == pytest.approx(100)
    assert c.jitter.quantile(1.0) == pytest.approx(80)
    assert c.rfc3550_jitter_ms > 0
