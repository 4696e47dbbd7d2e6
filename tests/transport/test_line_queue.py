"""The danmaku line queue (sans-I/O): order, TTL, backlog bound, every drop reported, rate."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.transport.line_queue import Line, LineQueue


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


def test_rate_rises_with_backlog_within_its_bound() -> None:
    q = LineQueue(max_lines=64, speedup_from=2, speedup_per_line=0.1, max_speed=1.5)
    assert q.speed(0) == q.speed(2) == 1.0
    assert q.speed(4) == 1.2
    assert q.speed(60) == 1.5
    for i in range(10):
        q.push(_line(i), 0.0)
    assert q.status(now=2.0) == {"type": "queue", "depth": 10, "wait_ms": 2000.0, "speed": 1.5}
    assert [d.reason for d in q.clear(3.0)] == ["cleared"] * 10 and len(q) == 0


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
