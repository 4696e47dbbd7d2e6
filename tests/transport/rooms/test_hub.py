"""Rooms without sockets: fan-out of the same objects, late joiners, a newer utterance taking
the room, slow listeners dropped alone, the registry (owners, tokens, rotation, the file)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from emostream.transport.rooms.hub import Listener, Room, RoomError, RoomTap
from emostream.transport.rooms.registry import RoomHub
from emostream.transport.websocket.protocol import EnqueueLine
from emostream.transport.websocket.start_request import StartRequest


def drain(listener: Listener) -> list[Any]:
    out = []
    while (msg := listener.take()) is not None:
        out.append(json.loads(msg) if isinstance(msg, str) else msg)
    return out


def started(**extra: Any) -> dict[str, Any]:
    return {"type": "started", "stream_id": "s-1", "sample_rate": 48000, "codec": "opus",
            "frame_ms": 20, "voice": "joe", "controls": {}, **extra}  # fmt: skip


def speak(tap: RoomTap, frames: int = 3) -> None:
    tap.started(started(context_id="c1", channel=4, room="main"))
    tap.event({"type": "segment", "index": 0, "text": "Hi.", "start_ms": 0.0, "context_id": "c1"})
    tap.event({"type": "timestamps", "index": 0, "units": []})  # the publisher's only
    for i in range(frames):
        tap.frame(bytes([i]) * 10)
    tap.done({"type": "done", "audio_ms": 60.0, "first_audio_ms": 5.0, "rtf": 0.1,
              "cancelled": False, "segments": 1, "sent_ms": 60.0, "context_id": "c1"})  # fmt: skip


def test_every_listener_gets_the_very_same_objects_once() -> None:
    room = Room("main", "", "t")
    a, b = room.join(lambda: None), room.join(lambda: None)
    assert drain(a)[0] == {"type": "room", "room": "main", "listeners": 1, "speaking": False}
    assert drain(b)[0]["listeners"] == 2
    tap = RoomTap(room, "s-1", codec_delay_ms=6.5)
    speak(tap)
    assert all(x is y for x, y in zip(a.items, b.items, strict=True))  # one object for all
    got_a, got_b = drain(a), drain(b)
    assert got_a == got_b
    assert [m["type"] if isinstance(m, dict) else "frame" for m in got_a] == [
        "started",
        "segment",
        "frame",
        "frame",
        "frame",
        "done",
    ]
    first = got_a[0]
    assert "context_id" not in first and "channel" not in first
    assert first["room"] == "main" and first["utterance"] == 1 and first["codec_delay_ms"] == 6.5
    assert got_a[-1] == {"type": "done", "audio_ms": 60.0, "first_audio_ms": 5.0, "rtf": 0.1,
                         "cancelled": False, "segments": 1}  # fmt: skip
    assert room.counts.frames == 6 and room.counts.utterances == 1


def test_a_late_listener_starts_at_the_next_utterance() -> None:
    room = Room("main", "", "t")
    early = room.join(lambda: None)
    tap = RoomTap(room, "s-1", codec_delay_ms=0.0)
    tap.started(started())
    tap.frame(b"x" * 10)
    late = room.join(lambda: None)
    assert drain(late) == [{"type": "room", "room": "main", "listeners": 2, "speaking": True}]
    tap.frame(b"y" * 10)
    tap.done({"type": "done", "audio_ms": 40, "first_audio_ms": 1, "rtf": 0.1,
              "cancelled": False, "segments": 1})  # fmt: skip
    assert drain(late) == []  # nothing of the utterance it joined in
    assert len(drain(early)) == 5
    speak(RoomTap(room, "s-2", codec_delay_ms=0.0))
    assert [m["type"] for m in drain(late) if isinstance(m, dict)] == ["started", "segment", "done"]


def test_a_newer_utterance_takes_the_room() -> None:
    room = Room("main", "", "t")
    listener = room.join(lambda: None)
    drain(listener)
    old, new = RoomTap(room, "s-1", codec_delay_ms=0.0), RoomTap(room, "s-2", codec_delay_ms=0.0)
    old.started(started())
    old.frame(b"a")
    new.started(started(stream_id="s-2"))
    old.frame(b"b")  # dropped: the room moved on
    old.done({"type": "done", "audio_ms": 40, "cancelled": False})
    new.frame(b"c")
    got = drain(listener)
    assert got[1] == b"a" and got[-1] == b"c" and b"b" not in got
    cut = got[2]
    assert (
        cut["type"] == "done" and cut["cancelled"] and cut["superseded"] and cut["audio_ms"] == 20
    )
    assert got[3]["type"] == "started" and got[3]["stream_id"] == "s-2"
    assert room.speaking


def test_a_slow_listener_is_dropped_and_the_others_hear_everything() -> None:
    woken: list[str] = []
    room = Room("main", "", "t", queue_bytes=300)
    slow = room.join(lambda: woken.append("slow"))
    fast = room.join(lambda: None)
    tap = RoomTap(room, "s-1", codec_delay_ms=0.0)
    tap.started(started())
    got: list[Any] = []
    for i in range(40):  # the fast one reads as it goes, the slow one never
        tap.frame(bytes([i]) * 50)
        got += drain(fast)
    assert slow.closing is not None and slow.closing[0] == "slow_listener"
    assert slow not in room.listeners and slow.take() is None
    assert [m for m in got if isinstance(m, bytes)] == [bytes([i]) * 50 for i in range(40)]
    assert room.counts.dropped == {"slow_listener": 1} and woken


def test_a_closed_room_closes_its_listeners() -> None:
    room = Room("main", "", "t")
    listener = room.join(lambda: None)
    room.close("room_closed", "deleted")
    assert listener.closing == ("room_closed", "deleted") and not room.listeners


def test_listeners_are_bounded() -> None:
    room = Room("main", "", "t", max_listeners=2)
    room.join(lambda: None), room.join(lambda: None)
    with pytest.raises(RoomError) as refused:
        room.join(lambda: None)
    assert refused.value.code == "too_many_listeners"


# ------------------------------------------------------------------ the registry
def test_owners_tokens_and_rotation(tmp_path: Path) -> None:
    hub = RoomHub(path=tmp_path / "rooms.json")
    room, created = hub.open("ann", "main")
    again, created_again = hub.open("ann", "main")
    assert created and not created_again and again is room
    with pytest.raises(RoomError) as taken:
        hub.open("bob", "main")
    assert taken.value.status == 409
    assert hub.publish_refusal("main", "ann") is None
    assert "POST /v1/rooms" in (hub.publish_refusal("main", "bob") or "")
    assert hub.publish_refusal("other", "ann") is not None
    _, listener = hub.listen("main", room.token, lambda: None)
    for name, token in (("main", room.token + "x"), ("main", ""), ("nope", room.token)):
        with pytest.raises(RoomError) as refused:
            hub.listen(name, token, lambda: None)
        assert refused.value.code == "room_refused"
    old = room.token
    hub.open("ann", "main", rotate=True)
    assert room.token != old and listener.closing is not None
    assert listener.closing[0] == "room_closed"


def test_rooms_survive_a_restart_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / "rooms.json"
    room, _ = RoomHub(path=path).open("ann", "main")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    back = RoomHub(path=path)
    assert back.rooms["main"].token == room.token and back.rooms["main"].owner == "ann"
    back.delete("main", "ann")
    assert RoomHub(path=path).rooms == {}


def test_a_bad_file_or_name_is_refused_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "rooms.json"
    path.write_text("{not json")
    hub = RoomHub(path=path)
    assert hub.rooms == {}
    with pytest.raises(RoomError) as bad:
        hub.open("ann", "no spaces")
    assert bad.value.code == "bad_value"
    made, _ = hub.open("ann")
    assert made.name.startswith("room-")
    with pytest.raises(RoomError) as gone:
        hub.delete("main", "ann")
    assert gone.value.status == 404


def test_limits_and_a_process_that_cannot_hold_rooms() -> None:
    hub = RoomHub(max_rooms=1)
    hub.open("ann", "a")
    with pytest.raises(RoomError) as full:
        hub.open("ann", "b")
    assert full.value.code == "too_many_rooms"
    with pytest.raises(RoomError) as off:
        RoomHub(why_not="several workers").open("ann", "a")
    assert off.value.status == 501


async def test_publishing_taps_and_the_queue_shown_in_the_lines_rooms() -> None:
    from emostream.transport.rooms.publishing import Publishing

    hub = RoomHub()
    room, _ = hub.open("ann", "main")
    listener = room.join(lambda: None)
    drain(listener)
    sent: list[dict[str, Any]] = []

    async def send(body: dict[str, Any]) -> None:
        sent.append(body)

    pub = Publishing(hub, "ann", send, codec_delay_ms=6.5)
    assert pub.access("main") is None and Publishing(hub, "bob", send, codec_delay_ms=0).access(
        "main") is not None  # fmt: skip
    request = StartRequest(None, None, None, False, "s-9", room="main")  # type: ignore[arg-type]
    tap = pub.tap(request)
    assert tap is not None and tap.source == "s-9" and tap.codec_delay_ms == 6.5
    pub.line(EnqueueLine("m1", "hi", 0, 8.0, {"room": "main"}))
    queue = {"type": "queue", "depth": 1, "wait_ms": 0.0, "speed": 1.0}
    await pub.send(queue)
    await pub.send({"type": "line_dropped", "id": "m1", "reason": "expired"})
    assert sent == [queue, {"type": "line_dropped", "id": "m1", "reason": "expired"}]
    assert drain(listener) == [queue]  # the queue shown in the room; drops stay private
