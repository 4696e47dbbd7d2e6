"""The danmaku line queue (sans-I/O): order, TTL, backlog bound, every drop reported, rate."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.transport.websocket.line_queue import Line, LineQueue, Playout


def _line(i: int, priority: int = 0, ttl_s: float = 10.0) -> Line:
    return Line(f"l{i}", f"line {i}", priority=priority, ttl_s=ttl_s)


def test_priority_first_then_oldest() -> None:
    q = LineQueue()
    for i, prio in enumerate([0, 2, 0, 2, 1]):
        assert q.push(_line(i, prio), now=float(i)) == []
    order = []
    while (got := q.pop(now=5.0)[0]) is not None:
        order.append(got.id)
    assert order == ["l1", "l3", "l4", "l0", "l2"]


def test_expired_lines_are_dropped_not_spoken() -> None:
    q = LineQueue()
    q.push(_line(0, ttl_s=1.0), now=0.0)
    q.push(_line(1, ttl_s=5.0), now=0.5)
    assert q.next_expiry() == 1.0
    line, dropped = q.pop(now=1.0)  # l0's TTL runs out exactly now
    assert line is not None and line.id == "l1"
    assert [(d.line.id, d.reason) for d in dropped] == [("l0", "expired")]
    assert dropped[0].event == {
        "type": "line_dropped", "id": "l0", "reason": "expired", "priority": 0, "waited_ms": 1000.0,
    }  # fmt: skip
    q.push(_line(2, ttl_s=0), now=2.0)  # no time at all: dropped at once
    assert len(q) == 0


def test_overflow_drops_lowest_priority_then_oldest() -> None:
    q = LineQueue(max_lines=3)
    q.push(_line(0, 1), 0.0)
    q.push(_line(1, 0), 1.0)
    q.push(_line(2, 0), 2.0)
    dropped = q.push(_line(3, 0), 3.0)  # full: the oldest of the lowest priority goes
    assert [(d.line.id, d.reason) for d in dropped] == [("l1", "overflow")]
    dropped = q.push(_line(4, -1), 4.0)  # outranked by everything waiting: itself
    assert [d.line.id for d in dropped] == ["l4"]
    dropped = q.push(_line(5, 5), 5.0)
    assert [d.line.id for d in dropped] == ["l2"]
    assert [ln.id for ln in q.lines] == ["l5", "l0", "l3"]


def test_rate_rises_with_backlog_within_its_bound_in_a_few_steps() -> None:
    q = LineQueue(max_lines=64, speedup_from=2, speedup_per_line=0.1, max_speed=1.5)
    assert q.speed(0) == q.speed(2) == 1.0
    assert q.speed(4) == 1.15  # 1.2 rounded down to a step: a repeat finds its cached rate
    assert q.speed(5) == 1.3 and q.speed(6) == 1.3
    assert q.speed(60) == 1.5
    default = LineQueue()  # 1 + 0.05 per line past 2
    assert [default.speed(n) for n in range(2, 15)] == [
        1.0, 1.0, 1.0, 1.15, 1.15, 1.15, 1.3, 1.3, 1.3, 1.3, 1.5, 1.5, 1.5,
    ]  # fmt: skip
    assert {LineQueue(max_speed=1.4).speed(n) for n in range(40)} == {1.0, 1.15, 1.3, 1.4}
    assert {LineQueue(max_speed=1.0).speed(n) for n in range(40)} == {1.0}
    for i in range(10):
        q.push(_line(i), 0.0)
    assert q.status(now=2.0) == {"type": "queue", "depth": 10, "wait_ms": 2000.0, "speed": 1.5}
    assert [d.reason for d in q.clear(3.0)] == ["cleared"] * 10 and len(q) == 0


def test_playout_clock_queues_audio_behind_audio_and_resets_once_caught_up() -> None:
    p = Playout()
    assert p.ahead(0.0) == 0.0
    p.sent(2.0, now=10.0)  # 2 s of audio at once
    p.sent(1.0, now=10.5)  # queues behind it
    assert p.end == 13.0 and p.ahead(10.5) == 2.5 and p.ahead(14.0) == 0.0
    p.sent(0.5, now=20.0)  # after idle: a new run from now
    assert p.end == 20.5


def test_paced_lines_wait_until_the_listener_is_within_the_lead() -> None:
    play = Playout()
    q = LineQueue(lead_s=1.0, hear_delay_s=0.25, playout=play)
    q.push(_line(0, ttl_s=60.0), now=0.0)
    q.push(_line(1, ttl_s=60.0), now=0.0)
    first, _ = q.pop(now=0.0)  # nothing sent yet: at once
    assert first is not None and first.id == "l0"
    play.sent(3.0, now=0.1)  # its 3 s of audio, made in a tenth of that
    assert q.ready_at() == 2.1
    assert q.pop(now=0.2) == (None, []) and q.pop(now=2.09)[0] is None
    assert q.heard_at(2.1) == 3.1 + 0.25  # after the audio before it, plus the delay
    second, _ = q.pop(now=2.1)
    assert second is not None and second.id == "l1"


def test_wake_at_names_the_ready_time_even_once_it_has_passed() -> None:
    """The I/O layer sleeps until wake_at: a ready time that passed while it was busy (after a
    pop found the listener too far ahead) must still wake it, or the queue stalls until the
    next expiry (seen on uvloop: its timers may fire a little early)."""
    play = Playout()
    q = LineQueue(lead_s=1.0, hear_delay_s=0.25, playout=play)
    assert q.wake_at(may_start=True) is None  # nothing waits
    q.push(_line(0, ttl_s=60.0), now=0.0)
    play.sent(3.0, now=0.0)
    assert q.pop(now=1.9995)[0] is None  # woken a little early: not ready yet ...
    assert q.wake_at(may_start=True) == 2.0  # ... and by now (2.001) it is: look again at once
    assert q.wake_at(may_start=False) == 60.0 - 0.25  # busy: the expiry, and the end's wake-up
    line, _ = q.pop(now=2.001)
    assert line is not None and line.id == "l0"
    unpaced = LineQueue()
    unpaced.push(_line(1, ttl_s=5.0), now=0.0)
    assert unpaced.wake_at(may_start=True) == 5.0


def test_unpaced_lines_go_at_once_and_their_ttl_is_judged_at_the_start() -> None:
    play = Playout()
    q = LineQueue(lead_s=0.0, hear_delay_s=0.25, playout=play)  # the delay applies only paced
    play.sent(100.0, now=0.0)
    q.push(_line(0, ttl_s=1.0), now=0.0)
    assert q.heard_at(0.5) == 0.5 and q.next_expiry() == 1.0
    line, dropped = q.pop(now=0.5)
    assert line is not None and dropped == []


def test_a_line_that_would_be_heard_past_its_ttl_expires_before_its_ttl() -> None:
    play = Playout()
    q = LineQueue(lead_s=1.0, hear_delay_s=0.25, playout=play)
    play.sent(5.0, now=0.0)  # the listener has 5 s to hear before anything new
    q.push(_line(0, ttl_s=5.5), now=0.0)  # heard at 5.25 at the earliest: in time, so far
    q.push(_line(1, ttl_s=8.0), now=1.0)
    assert q.expire(now=1.0) == [] and q.next_expiry() == 5.5 - 0.25
    # Nothing more is sent: l0 expires at 5.25, when it could no longer be heard by 5.5.
    assert q.expire(now=5.2) == []
    assert [(d.line.id, d.reason) for d in q.expire(now=5.25)] == [("l0", "expired")]
    q = LineQueue(lead_s=1.0, hear_delay_s=0.25, playout=play)
    q.push(_line(1, ttl_s=8.0), now=1.0)
    assert q.next_expiry() == 9.0 - 0.25
    line, dropped = q.pop(now=4.0)  # ready (5 - 4 <= 1 s ahead); heard at 5.25 < 9
    assert line is not None and line.id == "l1" and dropped == []
    # Audio keeps coming: a waiting line expires as soon as it can no longer be heard in time.
    q.push(_line(2, ttl_s=8.0), now=4.0)
    play.sent(8.0, now=4.1)  # l1's audio: heard out at 13
    dropped = q.expire(now=4.2)
    assert [(d.line.id, d.reason) for d in dropped] == [("l2", "expired")]
    assert dropped[0].event["waited_ms"] == 200.0  # dropped long before its 8 s


def test_a_line_pushed_that_cannot_be_heard_in_time_is_dropped_at_once() -> None:
    play = Playout()
    q = LineQueue(lead_s=1.0, hear_delay_s=0.25, playout=play)
    play.sent(3.0, now=0.0)
    dropped = q.push(_line(0, ttl_s=2.0), now=0.0)
    assert [(d.line.id, d.reason) for d in dropped] == [("l0", "expired")] and len(q) == 0


ops = st.lists(
    st.tuples(
        st.sampled_from(["push", "pop", "expire"]),
        st.floats(0.0, 2.0),  # time step
        st.integers(-2, 2),  # priority
        st.floats(0.0, 5.0),  # ttl
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(1, 6))
def test_invariants(steps: list[tuple[str, float, int, float]], max_lines: int) -> None:
    """No line older than its TTL is ever handed out; the backlog bound holds; every line
    pushed is handed out, dropped (and reported once) or still waiting; the rate stays
    within its bound."""
    q = LineQueue(max_lines=max_lines, max_speed=1.4)
    now = 0.0
    pushed: set[str] = set()
    out: list[str] = []
    for i, (op, step, prio, ttl) in enumerate(steps):
        now += step
        if op == "push":
            pushed.add(f"l{i}")
            dropped = q.push(_line(i, prio, ttl), now)
        elif op == "pop":
            line, dropped = q.pop(now)
            if line is not None:
                assert line.age(now) < line.ttl_s
                out.append(line.id)
        else:
            dropped = q.expire(now)
        for d in dropped:
            if d.reason == "expired":
                assert d.line.age(now) >= d.line.ttl_s
            out.append(d.line.id)
        assert len(q) <= max_lines
        assert 1.0 <= q.speed() <= 1.4
    waiting = [ln.id for ln in q.lines]
    assert sorted(out + waiting) == sorted(pushed)  # each exactly once


paced_ops = st.lists(
    st.tuples(
        st.sampled_from(["push", "pop", "expire", "audio"]),
        st.floats(0.0, 2.0),  # time step
        st.integers(-2, 2),  # priority
        st.floats(0.0, 12.0),  # ttl, or seconds of audio sent
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(paced_ops, st.integers(1, 6), st.floats(0.1, 2.0), st.floats(0.0, 0.5))
def test_paced_invariants(
    steps: list[tuple[str, float, int, float]], max_lines: int, lead: float, delay: float
) -> None:
    """Paced: a line is handed out only when the listener is within the lead, and only if it
    is heard within its TTL (the playout clock counted independently here); a line dropped as
    expired could not have been; every line pushed is accounted for exactly once."""
    play = Playout()
    q = LineQueue(max_lines=max_lines, lead_s=lead, hear_delay_s=delay, playout=play)
    now, end = 0.0, float("-inf")  # end: this test's own playout clock
    pushed: set[str] = set()
    out: list[str] = []
    for i, (op, step, prio, x) in enumerate(steps):
        now += step
        dropped = []
        if op == "push":
            pushed.add(f"l{i}")
            dropped = q.push(_line(i, prio, x), now)
        elif op == "pop":
            line, dropped = q.pop(now)
            if line is not None:
                assert end - now <= lead
                assert max(now, end) + delay - line.enqueued_at < line.ttl_s
                out.append(line.id)
        elif op == "expire":
            dropped = q.expire(now)
        else:
            play.sent(x, now)
            end = max(end, now) + x
        for d in dropped:
            if d.reason == "expired":
                assert max(now, end) + delay - d.line.enqueued_at >= d.line.ttl_s
            out.append(d.line.id)
        assert len(q) <= max_lines
    assert sorted(out + [ln.id for ln in q.lines]) == sorted(pushed)
