"""Contexts on one socket (protocol v1.1), sans I/O: the router in front of the v1 protocol
state machine, and the binary frame codec."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest

from emostream.transport.websocket.contexts import ContextRouter, Routed, tagged
from emostream.transport.websocket.frames import (
    HEADER_BYTES,
    ChannelAllocator,
    FrameError,
    decode_frame,
    encode_frame,
)
from emostream.transport.websocket.protocol import (
    BeginUtterance,
    CancelUtterance,
    Dropped,
    EndOfInput,
    EnqueueLine,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.voices.base import VoiceInfo

JOE = VoiceInfo(
    id="joe", model="piper-vits", language="en-US", sample_rate=22050, controls=("speed",)
)


def make_protocol() -> SessionProtocol:
    ids = iter(range(1000))
    return SessionProtocol(lookup_voice={"joe": JOE}.get, new_stream_id=lambda: f"s{next(ids)}")


def router(max_contexts: int = 8) -> ContextRouter:
    return ContextRouter(make_protocol, max_contexts=max_contexts)


def send(r: ContextRouter, **msg: Any) -> list[Routed]:
    return r.receive_message(json.loads(json.dumps(msg)))


def codes(routed: list[Routed]) -> list[tuple[str | None, str]]:
    return [(x.context, x.action.code) for x in routed if isinstance(x.action, SendError)]


def begin(routed: list[Routed]) -> BeginUtterance:
    (only,) = routed
    assert isinstance(only.action, BeginUtterance), only
    return only.action


V1_SESSION: list[dict[str, Any]] = [
    {"type": "text", "text": "early"},
    {"type": "start", "speed": 1.2},
    {"type": "text", "text": "Hello there, "},
    {"type": "flush"},
    {"type": "start"},
    {"type": "text", "text": "my friend. Bye"},
    {"type": "end"},
    {"type": "text", "text": "late"},
    {"type": "cancel"},
    {"type": "cancel"},
    {"type": "line", "text": "A line.", "priority": 2},
    {"type": "clear"},
    {"type": "dance"},
]


def test_a_v1_session_is_routed_untouched() -> None:
    """Without context_id every message reaches one SessionProtocol, and every action comes
    back as it would from that protocol alone, with no context."""
    r, alone = router(), make_protocol()
    for msg in V1_SESSION:
        routed = send(r, **msg)
        assert all(x.context is None for x in routed)
        assert [x.action for x in routed] == alone.receive_message(dict(msg)), msg
    assert r.mode == "v1" and r.live == 0
    assert r.default.state == alone.state


def test_two_contexts_each_with_its_own_voice_controls_and_text() -> None:
    r = router()
    a = begin(send(r, type="start", context_id="turn-1", speed=0.8,
                   format={"codec": "pcm_s16le", "sample_rate": 24000}))  # fmt: skip
    b = begin(send(r, type="start", context_id="turn-2", speed=1.5))
    assert r.mode == "v1.1" and r.live == 2
    assert a.started_event["context_id"] == "turn-1" and b.started_event["context_id"] == "turn-2"
    assert list(a.started_event)[:3] == ["type", "context_id", "channel"]
    assert {a.started_event["channel"], b.started_event["channel"]} == {1, 2}
    assert (a.request.controls.speed, b.request.controls.speed) == (0.8, 1.5)
    assert (a.request.fmt.codec, b.request.fmt.codec) == ("pcm_s16le", "opus")
    assert send(r, type="text", context_id="turn-1", text="Hello there, ") == [
        Routed("turn-1", QueueSegments(["Hello there,"]))
    ]
    assert send(r, type="text", context_id="turn-2", text="Two") == []
    assert send(r, type="flush", context_id="turn-2") == [Routed("turn-2", QueueSegments(["Two"]))]
    assert send(r, type="end", context_id="turn-1", text="ignored") == [
        Routed("turn-1", EndOfInput())
    ]
    assert codes(send(r, type="text", context_id="turn-1", text="x")) == [
        ("turn-1", "already_ended")
    ]
    assert send(r, type="text", context_id="turn-2", text="more.") == []
    assert send(r, type="end", context_id="turn-2") == [
        Routed("turn-2", QueueSegments(["more."])),
        Routed("turn-2", EndOfInput()),
    ]
    assert r.state_of({"context_id": "turn-1"}) == "ending"
    assert r.state_of({"context_id": "turn-2"}) == "ending"
    assert r.state_of({"context_id": "turn-3"}) == "idle" and r.state_of({}) == "idle"


def test_unknown_context_is_refused_and_harms_nothing() -> None:
    r = router()
    begin(send(r, type="start", context_id="a"))
    for kind in ("text", "flush", "end", "cancel"):
        assert codes(send(r, type=kind, context_id="zzz", text="x")) == [("zzz", "unknown_context")]
    assert r.live == 1 and r.state_of({"context_id": "a"}) == "open"
    assert send(r, type="text", context_id="a", text="Still fine.") == []
    assert send(r, type="flush", context_id="a") == [Routed("a", QueueSegments(["Still fine."]))]


def test_limit_on_live_contexts_and_reuse_after_done() -> None:
    r = router(max_contexts=2)
    first = begin(send(r, type="start", context_id="a"))
    begin(send(r, type="start", context_id="b"))
    assert codes(send(r, type="start", context_id="c")) == [("c", "too_many_contexts")]
    assert codes(send(r, type="start", context_id="a")) == [("a", "already_started")]
    # A cancelled context stays live (its done is owed) until the I/O layer finishes it.
    assert send(r, type="cancel", context_id="a") == [Routed("a", CancelUtterance())]
    assert send(r, type="cancel", context_id="a") == []  # again: done is on its way
    assert codes(send(r, type="text", context_id="a", text="x")) == [("a", "already_ended")]
    assert codes(send(r, type="start", context_id="c")) == [("c", "too_many_contexts")]
    r.finished("a", first.request)
    assert r.live == 1
    again = begin(send(r, type="start", context_id="a"))
    assert again.started_event["channel"] == 3  # channels are not reused at once
    assert codes(send(r, type="cancel", context_id="gone")) == [("gone", "unknown_context")]


def test_finished_ignores_a_request_that_is_not_the_contexts() -> None:
    r = router()
    old = begin(send(r, type="start", context_id="a"))
    r.finished("a", old.request)
    new = begin(send(r, type="start", context_id="a"))
    r.finished("a", old.request)  # a late report about the old utterance
    assert r.live == 1
    r.finished("a", new.request)
    assert r.live == 0 and r.idle


def test_a_refused_start_opens_no_context() -> None:
    r = router(max_contexts=1)
    assert codes(send(r, type="start", context_id="a", voice="nobody")) == [("a", "unknown_voice")]
    assert codes(send(r, type="start", context_id="a", pitch_shift=3)) == [
        ("a", "unsupported_control")
    ]
    assert r.live == 0 and r.mode == "v1.1"
    begin(send(r, type="start", context_id="a"))


def test_the_first_start_fixes_the_protocol() -> None:
    v1 = router()
    assert codes(send(v1, type="cancel", context_id="a")) == [("a", "unknown_context")]
    assert v1.mode == "unset"
    begin(send(v1, type="start"))
    assert codes(send(v1, type="start", context_id="a")) == [("a", "protocol_mismatch")]
    assert codes(send(v1, type="text", context_id="a", text="x")) == [("a", "protocol_mismatch")]
    assert send(v1, type="text", text="Still v1.") == []
    assert send(v1, type="flush") == [Routed(None, QueueSegments(["Still v1."]))]

    v11 = router()
    begin(send(v11, type="start", context_id="a"))
    for kind in ("start", "text", "flush", "end", "cancel", "line"):
        assert codes(send(v11, type=kind, text="x")) == [(None, "protocol_mismatch")], kind
    assert v11.default.state == "idle" and v11.live == 1
    assert send(v11, type="clear") != [] and send(v11, type="clear", context_id="a") != []


@pytest.mark.parametrize(
    "value",
    ["", "a" * 65, "a b", "a\n", "é", "a/b", '"', 5, 1.5, True, ["a"], {"a": 1}, "\u0661"],
)
def test_malformed_context_ids_are_bad_value(value: object) -> None:
    r = router()
    for kind in ("start", "text", "cancel", "line"):
        assert codes(send(r, type=kind, context_id=value, text="x")) == [(None, "bad_value")]
    assert r.mode == "unset" and r.live == 0


def test_context_ids_that_are_taken() -> None:
    r = router()
    for ok in ["a", "A-Z.0_9:x", "x" * 64, "550e8400-e29b-41d4-a716-446655440000"]:
        assert begin(send(r, type="start", context_id=ok)).started_event["context_id"] == ok
    # null is the same as no context_id, which a v1.1 connection refuses.
    assert codes(send(r, type="start", context_id=None)) == [(None, "protocol_mismatch")]


def test_a_v11_line_is_queued_then_spoken_as_its_context() -> None:
    r = router()
    (queued,) = send(r, type="line", context_id="chat-7", text="Thanks for the follow!", id="m1")
    assert queued.context == "chat-7" and isinstance(queued.action, EnqueueLine)
    assert queued.action.fields["context_id"] == "chat-7" and r.mode == "v1.1"
    assert r.live == 0  # waiting lines are not live contexts
    started, *rest = r.start_line("m1", "Thanks for the follow!", queued.action.fields)
    assert isinstance(started.action, BeginUtterance) and started.context == "chat-7"
    event = started.action.started_event
    assert (event["context_id"], event["channel"], event["id"]) == ("chat-7", 1, "m1")
    assert [x.context for x in rest] == ["chat-7", "chat-7"]
    assert isinstance(rest[-1].action, EndOfInput) and r.live == 1
    assert send(r, type="cancel", context_id="chat-7") == [Routed("chat-7", CancelUtterance())]
    # The same context id started by the client meanwhile: the line is refused.
    assert codes(r.start_line("m2", "x", {"context_id": "chat-7"})) == [
        ("chat-7", "already_started")
    ]


def test_tagged_puts_the_context_after_the_type() -> None:
    body = {"type": "done", "audio_ms": 1.0}
    assert tagged(body, None) is body
    assert list(tagged(body, "c")) == ["type", "context_id", "audio_ms"]


# ------------------------------------------------------------------------- frames
def test_frame_round_trip_and_layout() -> None:
    data = encode_frame(513, 7, b"\x01\x02\x03")
    assert data == bytes([1, 0, 2, 1, 0, 0, 0, 7, 1, 2, 3]) and HEADER_BYTES == 8
    frame = decode_frame(data)
    assert (frame.channel, frame.sequence, frame.payload, frame.flags) == (513, 7, b"\1\2\3", 0)
    assert decode_frame(encode_frame(65535, 2**32 + 5, b"")).sequence == 5  # wraps


@pytest.mark.parametrize(
    "data", [b"", b"\x01\x00\x00", bytes([2, 0, 0, 1, 0, 0, 0, 0]), bytes([1, 0, 0, 0, 0, 0, 0, 0])]
)
def test_bad_frames(data: bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(data)


def test_encode_refuses_channels_out_of_range() -> None:
    for channel in (0, 65536, -1):
        with pytest.raises(FrameError):
            encode_frame(channel, 0, b"")


def test_channels_are_never_live_twice_and_reused_late() -> None:
    alloc = ChannelAllocator(limit=4)
    assert [alloc.take() for _ in range(3)] == [1, 2, 3]
    alloc.release(2)
    assert alloc.take() == 4  # the freed 2 waits for the wrap
    assert alloc.take() == 2
    with pytest.raises(FrameError):
        alloc.take()
    alloc.release(3)
    assert alloc.take() == 3 and len(alloc) == 4
    taken = []
    big = ChannelAllocator(limit=5)
    for _ in range(12):
        channel = big.take()
        taken.append(channel)
        big.release(channel)
    assert all(b == a % 5 + 1 for a, b in pairwise(taken))


@pytest.mark.parametrize("codec,delay", [("opus", 2.5), ("pcm_s16le", 0.0)])
def test_v1_1_started_says_the_codec_delay(codec: str, delay: float) -> None:
    """v1.1's ``started`` carries the Opus encoder's look-ahead as the server set it (its
    word times and a fresh decoder's output differ by it); PCM has none; v1 never says it."""

    def make() -> ContextRouter:
        return ContextRouter(
            lambda: SessionProtocol(lookup_voice={"joe": JOE}.get, opus_delay_ms=2.5),
            max_contexts=2,
        )

    fmt = {"codec": codec}
    started = begin(send(make(), type="start", context_id="a", format=fmt)).started_event
    assert started["codec_delay_ms"] == delay
    assert "codec_delay_ms" not in begin(send(make(), type="start", format=fmt)).started_event


def test_a_refused_contexts_messages_are_dropped_quietly() -> None:
    """A context whose start was refused busy: its text, flush, end and cancel get no
    answer (not one unknown_context per message); its id may start again."""
    r = router(max_contexts=2)
    refused = begin(send(r, type="start", context_id="a"))
    r.refused("a", refused.request)
    assert r.live == 0 and r.idle
    for kind in ("text", "flush", "end"):
        assert send(r, type=kind, context_id="a", text="x") == [Routed("a", Dropped(kind))]
    assert codes(send(r, type="text", context_id="a", text="x")) == [("a", "unknown_context")]
    again = begin(send(r, type="start", context_id="a"))
    r.refused("a", again.request)
    assert send(r, type="cancel", context_id="a") == [Routed("a", Dropped("cancel"))]
    third = begin(send(r, type="start", context_id="a"))
    r.refused("a", third.request)
    begin(send(r, type="start", context_id="a"))  # started again before its end came
    assert send(r, type="text", context_id="a", text="Now spoken.") == []
    assert send(r, type="flush", context_id="a") == [Routed("a", QueueSegments(["Now spoken."]))]


def test_a_refused_v1_start_leaves_the_router_idle_and_quiet() -> None:
    r = router()
    refused = begin(send(r, type="start"))
    r.refused(None, refused.request)
    assert r.idle and r.may_start({"type": "start"}) and r.state_of({}) == "refused"
    assert send(r, type="text", text="x") == [Routed(None, Dropped("text"))]
    assert send(r, type="end") == [Routed(None, Dropped("end"))]
    assert codes(send(r, type="end")) == [(None, "not_started")]
