"""The danmaku bridge's core, alone: input parsing, the outbox's ledger, backoff."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from emostream.bridge.lines import Backoff, ChatLine, InputError, LineParser, Outbox, Playout

FIELDS = {"voice": "joe", "format": {"codec": "pcm_s16le", "sample_rate": 24000}}


def parse_all(*raw: str, **kw: Any) -> list[ChatLine | InputError | None]:
    parser = LineParser(**kw)
    return [parser.parse(r) for r in raw]


def test_json_and_plain_text_lines() -> None:
    a, b, c = parse_all(
        json.dumps({"text": " Hi! ", "priority": 3, "ttl_ms": 2000, "id": "m1", "user": "ann"}),
        "thanks for the follow!\n",
        json.dumps({"text": "no id", "extra": [1, 2]}),
    )
    assert a == ChatLine("m1", "Hi!", 3, 2000.0, "ann")
    assert b == ChatLine("b1", "thanks for the follow!", 0, 8000.0, None)
    assert c == ChatLine("b2", "no id", 0, 8000.0, None)  # unknown keys are ignored


def test_blank_lines_are_skipped_silently_and_counted() -> None:
    parser = LineParser()
    assert parser.parse("\n") is None and parser.parse("   \t") is None
    bad = parser.parse("{oops")
    assert isinstance(bad, InputError) and bad.line_no == 3


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", None),  # not starting with '{': spoken as it is
        ('{"text": ""}', "'text' must be a non-empty string"),
        ('{"text": 5}', "'text' must be a non-empty string"),
        ('{"priority": 1}', "'text'"),
        ('{"text": "x", "priority": 1.5}', "'priority' must be a whole number"),
        ('{"text": "x", "priority": 1001}', "from -1000 to 1000"),
        ('{"text": "x", "priority": true}', "'priority' must be a whole number"),
        ('{"text": "x", "ttl_ms": 0}', "'ttl_ms' must be from 1"),
        ('{"text": "x", "ttl_ms": "5"}', "'ttl_ms' must be a number"),
        ('{"text": "x", "id": ""}', "'id' must be a non-empty string"),
        ('{"text": "x", "id": 7}', "'id' must be a non-empty string"),
        ('{"text": "x", "user": 7}', "'user' must be a string"),
        ('"just a string"', None),
        ("{}", "'text'"),
        ('{"text": "' + "a" * 501 + '"}', "at most 500"),
    ],
)
def test_malformed_lines_say_what_is_wrong(raw: str, says: str | None) -> None:
    (out,) = parse_all(raw)
    if says is None:
        assert isinstance(out, ChatLine) and out.text == raw
    else:
        assert isinstance(out, InputError), out
        assert says in out.message
        assert out.event == {"type": "input_error", "line": 1, "message": out.message}


def test_json_array_after_brace_is_an_error() -> None:
    (out,) = parse_all('{"a": 1} trailing')
    assert isinstance(out, InputError) and "not valid JSON" in out.message


def test_template_applies_to_lines_with_a_user() -> None:
    a, b = parse_all(
        json.dumps({"text": "hello {x}", "user": "bo"}), "no user", template="{user} says {text}"
    )
    assert isinstance(a, ChatLine) and a.text == "bo says hello {x}"
    assert isinstance(b, ChatLine) and b.text == "no user"
    with pytest.raises(ValueError, match="template"):
        LineParser(template="{who}: {text}")
    with pytest.raises(ValueError, match="template"):
        LineParser(template="{user}")


def line(i: int, **kw: Any) -> ChatLine:
    return ChatLine(f"l{i}", f"line {i}", **kw)


def test_lines_are_sent_with_the_fields_and_the_ttl_left() -> None:
    box = Outbox(fields=FIELDS)
    box.add(line(1, ttl_ms=8000.0), now=10.0)
    box.add(line(2, priority=5), now=11.0)
    messages, events = box.to_send(now=12.0)
    assert events == []
    assert [m["id"] for m in messages] == ["l2", "l1"]  # highest priority first
    assert messages[1] == {**FIELDS, "type": "line", "id": "l1", "text": "line 1",
                           "priority": 0, "ttl_ms": 6000.0}  # fmt: skip
    assert box.to_send(now=12.5) == ([], [])  # sent once
    assert len(box) == 2 and not box.drained


def test_a_line_with_no_voice_gets_its_languages() -> None:
    """``emostream danmaku`` with no --voice: Mandarin lines name the Mandarin default, English
    lines name none (the server's default)."""
    box = Outbox(fields={"speed": 1.2}, language_voices={"zh": "zf_xiaoxiao"})
    box.add(ChatLine("a", "hello chat"), now=0.0)
    box.add(ChatLine("b", "谢谢大家的关注"), now=0.0)
    sent = {m["id"]: m for m in box.to_send(now=0.1)[0]}
    assert "voice" not in sent["a"] and sent["b"]["voice"] == "zf_xiaoxiao"
    assert sent["b"]["speed"] == 1.2
    named = Outbox(fields={"voice": "bm_george"}, language_voices={"zh": "zf_xiaoxiao"})
    named.add(ChatLine("c", "谢谢"), now=0.0)
    assert named.to_send(now=0.1)[0][0]["voice"] == "bm_george"  # a voice asked for stays


def test_every_line_is_settled_once_by_the_server_events() -> None:
    box = Outbox()
    for i in range(1, 6):
        box.add(line(i), now=0.0)
    box.to_send(now=0.0)
    assert box.on_event({"type": "started", "id": "l1"}, 0.1) == []
    assert box.on_audio(960) == "l1" and box.entry("l1").audio_bytes == 960  # type: ignore[union-attr]
    box.on_event({"type": "done", "id": "l1"}, 0.5)
    assert box.on_audio(10) is None
    box.on_event({"type": "line_dropped", "id": "l2", "reason": "overflow"}, 0.5)
    box.on_event({"type": "line_dropped", "id": "l3", "reason": "expired"}, 0.5)
    box.on_event({"type": "error", "id": "l4", "code": "unknown_voice"}, 0.6)
    box.on_event({"type": "queue", "depth": 1}, 0.6)
    box.on_event({"type": "started", "id": "l5"}, 0.7)
    box.on_event({"type": "done", "id": "l5", "cancelled": True}, 0.8)
    t = box.tally
    assert (t.spoken, t.interrupted, dict(t.dropped), dict(t.refused)) == (
        1, 1, {"overflow": 1, "expired": 1}, {"unknown_voice": 1},
    )  # fmt: skip
    assert t.received == 5 == t.settled and box.drained
    # events about lines it does not hold (another client's, or repeated) change nothing
    box.on_event({"type": "done", "id": "l1"}, 1.0)
    box.on_event({"type": "line_dropped", "id": "zz", "reason": "expired"}, 1.0)
    assert box.tally.settled == 5


def test_a_reconnect_sends_again_what_was_not_started_with_the_ttl_left() -> None:
    box = Outbox()
    for i in range(1, 4):
        box.add(line(i, ttl_ms=5000.0), now=0.0)
    box.to_send(now=0.0)
    box.on_event({"type": "started", "id": "l1"}, 0.1)
    box.on_audio(100)
    events = box.disconnected(now=1.0)
    assert events == [{"type": "line_interrupted", "id": "l1", "audio_bytes": 100}]
    messages, _ = box.to_send(now=2.0)
    assert [(m["id"], m["ttl_ms"]) for m in messages] == [("l2", 3000.0), ("l3", 3000.0)]
    assert box.speaking is None


def test_a_line_cut_before_any_audio_is_held_again() -> None:
    box = Outbox()
    box.add(line(1), now=0.0)
    box.to_send(now=0.0)
    box.on_event({"type": "started", "id": "l1"}, 0.1)
    assert box.disconnected(now=0.2) == []
    assert [m["id"] for m in box.to_send(now=0.3)[0]] == ["l1"]


def test_held_lines_expire_in_the_bridge() -> None:
    box = Outbox()
    box.add(line(1, ttl_ms=1000.0), now=0.0)
    box.add(line(2, ttl_ms=3000.0), now=0.0)
    assert box.expire_held(now=0.99) == []
    (gone,) = box.expire_held(now=1.0)
    assert gone["id"] == "l1" and gone["reason"] == "expired" and gone["where"] == "bridge"
    messages, events = box.to_send(now=3.5)
    assert messages == [] and [e["id"] for e in events] == ["l2"]
    assert box.drained and box.tally.dropped == {"expired": 2}


def test_the_server_clearing_its_queue_on_shutdown_keeps_the_line() -> None:
    box = Outbox()
    box.add(line(1), now=0.0)
    box.to_send(now=0.0)
    (note,) = box.on_event({"type": "line_dropped", "id": "l1", "reason": "cleared"}, 0.1)
    assert note["type"] == "line_held"
    box.disconnected(now=0.2)
    assert [m["id"] for m in box.to_send(now=0.3)[0]] == ["l1"]
    # a clear the bridge asked for is final
    box.clear_sent()
    box.on_event({"type": "line_dropped", "id": "l1", "reason": "cleared"}, 0.4)
    assert box.drained and box.tally.dropped == {"cleared": 1}


def test_busy_is_retried_while_the_ttl_lasts() -> None:
    box = Outbox(retry_busy_s=0.5)
    box.add(line(1, ttl_ms=2000.0), now=0.0)
    box.to_send(now=0.0)
    (note,) = box.on_event({"type": "error", "id": "l1", "code": "busy"}, 0.1)
    assert note["type"] == "line_held"
    assert box.to_send(now=0.3) == ([], [])
    assert [m["id"] for m in box.to_send(now=0.6)[0]] == ["l1"]
    box.on_event({"type": "error", "id": "l1", "code": "busy"}, 2.5)  # TTL gone: refused
    assert box.drained and box.tally.refused == {"busy": 1}


def test_a_line_the_server_never_reports_is_given_up_after_its_ttl() -> None:
    box = Outbox(grace_s=2.0)
    box.add(line(1, ttl_ms=1000.0), now=0.0)
    box.to_send(now=0.0)
    assert box.give_up(now=2.9) == []
    (gone,) = box.give_up(now=3.0)
    assert gone["type"] == "line_unconfirmed" and box.tally.unconfirmed == 1 and box.drained


def test_held_backlog_is_bounded_lowest_priority_oldest_first() -> None:
    box = Outbox(max_held=2)
    assert box.add(line(1, priority=1), now=0.0) == []
    assert box.add(line(2), now=1.0) == []
    (gone,) = box.add(line(3), now=2.0)
    assert gone["id"] == "l2" and gone["reason"] == "overflow"
    (gone,) = box.add(line(4, priority=-1), now=3.0)  # the new line itself ranks lowest
    assert gone["id"] == "l4"
    assert [m["id"] for m in box.to_send(now=3.0)[0]] == ["l1", "l3"]
    # sent lines do not count against the bound
    assert box.add(line(5), now=4.0) == [] and box.add(line(6), now=4.0) == []


def test_duplicate_open_id_is_an_input_error() -> None:
    box = Outbox()
    box.add(line(1), now=0.0)
    (err,) = box.add(line(1), now=0.1)
    assert err["type"] == "input_error" and "already waiting" in err["message"]
    assert box.tally.received == 1 and box.tally.input_errors == 1


def test_backoff_doubles_to_its_bound_and_resets() -> None:
    b = Backoff(initial_s=0.5, max_s=4.0, jitter=0.0, rng=random.Random(1))
    assert [b.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    b.reset()
    assert b.next_delay() == 0.5
    j = Backoff(initial_s=1.0, jitter=0.2, rng=random.Random(1))
    assert all(1.0 <= j.next_delay() / 2**k <= 1.2 for k in range(3))


def test_to_send_takes_at_most_the_limit_highest_priority_first() -> None:
    box = Outbox()
    box.add(line(1), now=0.0)
    box.add(line(2, priority=2), now=0.1)
    box.add(line(3), now=0.2)
    assert box.to_send(now=0.3, limit=0) == ([], [])
    assert [m["id"] for m in box.to_send(now=0.3, limit=1)[0]] == ["l2"]
    assert box.at_server == 1
    assert [m["id"] for m in box.to_send(now=0.4)[0]] == ["l1", "l3"]
    assert box.at_server == 3


def test_playout_queues_audio_behind_what_still_plays() -> None:
    p = Playout()
    assert p.ahead_s(5.0) == 0.0
    p.audio(2.0, now=10.0)  # two seconds arrive at once
    p.audio(1.0, now=10.1)
    assert p.ahead_s(10.1) == pytest.approx(2.9)
    assert p.ahead_s(12.5) == pytest.approx(0.5) and p.ahead_s(20.0) == 0.0
    p.audio(0.02, now=20.0)  # after silence it starts again from now
    assert p.ahead_s(20.0) == pytest.approx(0.02)
