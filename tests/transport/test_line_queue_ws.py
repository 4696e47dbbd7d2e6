"""Queued lines (``line``, ``clear``: the danmaku queue) over the real WebSocket, voice joe.

A normal utterance left open (``start`` + ``text``, no ``end``) holds the socket busy while
lines queue behind it; ``end`` releases them. ``queued`` is unpaced (``line_pace_lead_ms`` 0:
the queue's order, TTL, bound and rate alone); ``paced`` paces lines to the listener."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from emostream.transport.websocket.protocol import EnqueueLine, SendError, SessionProtocol
from emostream.voices.base import VoiceInfo
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect

LONG = "This sentence keeps the socket busy for a while. " * 3


@pytest.fixture(scope="module")
def queued(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("lines")), line_queue_max=6, max_text_chars=2000,
        line_pace_lead_ms=0,
    )  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


PACE_LEAD_S = 0.3


@pytest.fixture(scope="module")
def paced(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("paced")), line_pace_lead_ms=1000 * PACE_LEAD_S,
        line_hear_delay_ms=250, phrase_cache_bytes=0,
    )  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def hold(ws: Any) -> None:
    """Start a normal utterance and leave it open."""
    await ws.send(json.dumps({"type": "start", "voice": "joe"}))
    events, _ = await collect(ws, until="started")
    assert events[-1]["type"] == "started" and "id" not in events[-1]


async def release(ws: Any) -> None:
    await ws.send(json.dumps({"type": "text", "text": "Done holding."}))
    await ws.send(json.dumps({"type": "end"}))


async def line(ws: Any, text: str, **fields: Any) -> None:
    await ws.send(json.dumps({"type": "line", "text": text, **fields}))


async def until_quiet(ws: Any, quiet_s: float = 1.5) -> list[dict[str, Any]]:
    """Every event until nothing arrives for ``quiet_s``."""
    events: list[dict[str, Any]] = []
    while True:
        try:
            msg = await asyncio.wait_for(ws.recv(), quiet_s)
        except TimeoutError:
            return events
        if isinstance(msg, str):
            events.append(json.loads(msg))


def spoken(events: list[dict[str, Any]]) -> list[str]:
    return [e["id"] for e in events if e["type"] == "started" and "id" in e]


def test_lines_are_spoken_in_priority_order_each_a_whole_utterance(queued: ServerThread) -> None:
    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            await hold(ws)
            await line(ws, "Low line.", id="low")
            await line(ws, "High line.", id="high", priority=5)
            await line(ws, "Middle line.", id="mid", priority=1)
            await release(ws)
            return await until_quiet(ws)

    events = asyncio.run(go())
    assert spoken(events) == ["high", "mid", "low"]
    depths = [e["depth"] for e in events if e["type"] == "queue"]
    assert depths[:3] == [1, 2, 3] and depths[-1] == 0
    dones = [e for e in events if e["type"] == "done"]
    assert [d.get("id") for d in dones] == [None, "high", "mid", "low"]
    assert all(not d["cancelled"] and d["audio_ms"] > 0 for d in dones)
    # Each line is started ... done before the next starts.
    kinds = [e["type"] for e in events if e["type"] in ("started", "done")]
    assert kinds == ["done"] + ["started", "done"] * 3
    assert not [e for e in events if e["type"] in ("error", "line_dropped")]


def test_a_line_whose_ttl_passes_while_waiting_is_dropped_promptly_never_spoken(
    queued: ServerThread,
) -> None:
    async def go() -> tuple[list[dict[str, Any]], float, list[dict[str, Any]]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            await hold(ws)
            await line(ws, "Too late.", id="late", ttl_ms=300)
            await line(ws, "In time.", id="kept", ttl_ms=60000)
            t0 = time.monotonic()
            first, _ = await collect(ws, until="line_dropped", timeout=10)
            waited = time.monotonic() - t0
            await ws.send(json.dumps({"type": "text", "text": LONG}))
            await ws.send(json.dumps({"type": "end"}))
            return first, waited, await until_quiet(ws)

    first, waited, rest = asyncio.run(go())
    dropped = first[-1]
    assert dropped["id"] == "late" and dropped["reason"] == "expired"
    assert dropped["waited_ms"] >= 300 and waited < 2.0  # a timer, not the next dequeue
    assert first[-2:] == [first[-2], dropped] and all(e["type"] == "queue" for e in first[:-1])
    queue_after = next(e for e in rest if e["type"] == "queue")
    assert queue_after["depth"] == 1
    assert spoken(rest) == ["kept"]


def test_overflow_drops_are_reported(queued: ServerThread) -> None:
    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            await hold(ws)
            for i in range(7):  # line_queue_max=6
                await line(ws, f"Line {i}.", id=f"l{i}", priority=1 if i == 0 else 0)
            await release(ws)
            return await until_quiet(ws)

    events = asyncio.run(go())
    drops = [e for e in events if e["type"] == "line_dropped"]
    assert [(d["id"], d["reason"]) for d in drops] == [("l1", "overflow")]  # lowest, oldest
    assert max(e["depth"] for e in events if e["type"] == "queue") == 6
    assert spoken(events) == ["l0", "l2", "l3", "l4", "l5", "l6"]
    started = {e["id"]: e for e in events if e["type"] == "started" and "id" in e}
    # Backlog 5 after the first pop: 15% faster (joe takes speed); backlog 4 (1.10) rounds
    # down to a step (1.0), as does every later one.
    assert started["l0"]["speed"] == pytest.approx(1.15)
    assert {started[f"l{i}"]["speed"] for i in range(2, 7)} == {1.0}


def test_clear_drops_every_waiting_line(queued: ServerThread) -> None:
    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            await hold(ws)
            await line(ws, "One.", id="a")
            await line(ws, "Two.", id="b", priority=2)
            await ws.send(json.dumps({"type": "clear"}))
            await release(ws)
            return await until_quiet(ws)

    events = asyncio.run(go())
    drops = [(e["id"], e["reason"]) for e in events if e["type"] == "line_dropped"]
    assert drops == [("a", "cleared"), ("b", "cleared")]
    assert [e for e in events if e["type"] == "queue"][-1]["depth"] == 0
    assert spoken(events) == [] and [e["type"] for e in events].count("done") == 1


def test_a_client_that_never_sends_line_sees_no_queue_events(server: ServerThread) -> None:
    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(server.ws_url, compression=None) as ws:
            await ws.send(json.dumps({"type": "start", "voice": "joe"}))
            await ws.send(json.dumps({"type": "text", "text": "Hello there."}))
            await ws.send(json.dumps({"type": "end"}))
            events, _ = await collect(ws)
            return events + await until_quiet(ws, 0.5)

    events = asyncio.run(go())
    assert [e["type"] for e in events if e["type"] in ("started", "done", "error")] == [
        "started",
        "done",
    ]
    assert not {"queue", "line_dropped"} & {e["type"] for e in events}
    assert all("id" not in e for e in events)


BAD_LINES = [
    ({}, "bad_value"),
    ({"text": ""}, "bad_value"),
    ({"text": "  "}, "bad_value"),
    ({"text": 5}, "bad_value"),
    ({"text": "x" * 2001}, "text_too_long"),
    ({"text": "Hi.", "id": 5}, "bad_value"),
    ({"text": "Hi.", "id": ""}, "bad_value"),
    ({"text": "Hi.", "id": "x" * 129}, "bad_value"),
    ({"text": "Hi.", "priority": 1.5}, "bad_value"),
    ({"text": "Hi.", "priority": "1"}, "bad_value"),
    ({"text": "Hi.", "priority": True}, "bad_value"),
    ({"text": "Hi.", "priority": 10**6}, "bad_value"),
    ({"text": "Hi.", "ttl_ms": 0}, "bad_value"),
    ({"text": "Hi.", "ttl_ms": "100"}, "bad_value"),
    ({"text": "Hi.", "ttl_ms": 1e12}, "bad_value"),
    ({"text": "Hi.", "speed": 5}, "bad_value"),
    ({"text": "Hi.", "voice": "nobody"}, "unknown_voice"),
    ({"text": "Hi.", "emotion": "happy"}, "unsupported_control"),
    ({"text": "Hi.", "format": {"codec": "mp3"}}, "bad_format"),
    ({"text": "Hi.", "reference_audio": "UklGRg=="}, "bad_value"),
]


def test_invalid_lines_get_errors_and_the_socket_keeps_working(queued: ServerThread) -> None:
    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            for fields, _ in BAD_LINES:
                await ws.send(json.dumps({"type": "line", **fields}))
            await line(ws, "Still here.", id="ok", speed=1.2, format={"codec": "pcm_s16le"})
            return await until_quiet(ws)

    events = asyncio.run(go())
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == [code for _, code in BAD_LINES]
    assert all(e["message"] for e in errors)
    assert spoken(events) == ["ok"]
    started = next(e for e in events if e["type"] == "started")
    assert started["codec"] == "pcm_s16le" and started["speed"] == 1.2
    assert [e.get("id") for e in events if e["type"] == "done"] == ["ok"]


# ------------------------------------------------------------------ protocol (sans I/O)
NOSPEED = VoiceInfo("flat", "test", "en", 22050, ())
JOEISH = VoiceInfo("joe", "test", "en", 22050, ("speed",))


def test_start_line_scales_speed_capped_and_only_for_voices_with_speed() -> None:
    p = SessionProtocol(lookup_voice={"joe": JOEISH, "flat": NOSPEED}.get, default_voice="joe")
    (queued,) = p.receive_text(json.dumps({"type": "line", "text": "Hi.", "speed": 1.8}))
    assert isinstance(queued, EnqueueLine) and queued.id == "line_1" and queued.ttl_s == 8.0
    begin = p.start_line(queued.id, queued.text, queued.fields, 1.5)[0]
    assert begin.started_event["speed"] == 2.0  # type: ignore[union-attr]
    assert p.state == "ending"
    (refused,) = p.receive_text(json.dumps({"type": "text", "text": "sneaky"}))
    assert isinstance(refused, SendError) and refused.code == "already_ended"
    p.utterance_finished()
    begin = p.start_line("x", "Hi.", {"voice": "flat"}, 1.5)[0]
    assert begin.started_event["speed"] == 1.0  # type: ignore[union-attr]
    assert begin.request.controls.speed == 1.0  # type: ignore[union-attr]


def test_an_error_refusing_a_line_carries_its_id(queued: ServerThread) -> None:
    """Every refusal of a line names it when the client gave a well-formed id: those of the
    protocol (BAD_LINES) and of the connection (a frame over max_message_bytes)."""
    sent = [{"id": f"bad{k}", **fields} for k, (fields, _) in enumerate(BAD_LINES)]
    huge = {"text": "x" * (1 << 20), "id": "huge"}

    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(queued.ws_url, compression=None) as ws:
            for fields in [*sent, huge]:
                await ws.send(json.dumps({"type": "line", **fields}))
            return await until_quiet(ws, 1.0)

    errors = [e for e in asyncio.run(go()) if e["type"] == "error"]
    assert len(errors) == len(sent) + 1
    well_formed = [f["id"] if isinstance(f["id"], str) and 0 < len(f["id"]) <= 128 else None
                   for f in sent]  # fmt: skip
    assert [e.get("id") for e in errors[:-1]] == well_formed
    assert well_formed.count(None) == 3  # the three malformed ids are not echoed
    assert errors[-1]["code"] == "too_large" and errors[-1]["id"] == "huge"


class Listener:
    """The client's own playout clock: every binary frame (20 ms of Opus) plays from its
    arrival, after the audio before it."""

    def __init__(self) -> None:
        self.end = float("-inf")

    def ahead(self, now: float) -> float:
        return max(0.0, self.end - now)


async def listen(ws: Any, ids: set[str]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Events until every id is done or dropped; how far the audio received was ahead of a
    real-time listener when each line's ``started`` arrived."""
    clock = Listener()
    events: list[dict[str, Any]] = []
    ahead_at_start: dict[str, float] = {}
    left = set(ids)
    async with asyncio.timeout(60):
        while left:
            msg = await ws.recv()
            now = time.monotonic()
            if isinstance(msg, bytes):
                clock.end = max(clock.end, now) + 0.020
                continue
            ev = json.loads(msg)
            events.append(ev)
            if ev["type"] == "started":
                ahead_at_start[ev["id"]] = clock.ahead(now)
            if ev["type"] in ("done", "line_dropped", "error"):
                left.discard(ev.get("id", ""))
    return events, ahead_at_start


def test_paced_lines_start_only_when_the_listener_is_within_the_lead(paced: ServerThread) -> None:
    """Joe speaks many times faster than real time: unpaced, each line would start while the
    one before still had seconds left to play."""
    texts = [
        "The first line is long enough to take a few seconds to say out loud.",
        "The second line follows it, also taking a few seconds to be heard.",
        "And the third line closes the burst, a little shorter.",
    ]

    async def go() -> tuple[list[dict[str, Any]], dict[str, float]]:
        async with websockets.connect(paced.ws_url, compression=None) as ws:
            for k, text in enumerate(texts):
                await line(ws, text, id=f"p{k}", ttl_ms=60000)
            return await listen(ws, {f"p{k}" for k in range(len(texts))})

    events, ahead = asyncio.run(go())
    assert spoken(events) == ["p0", "p1", "p2"]
    assert not [e for e in events if e["type"] in ("error", "line_dropped")]
    assert ahead["p0"] == 0.0
    # Each later line waited until the audio before it was within the lead of being heard
    # (plus what the loopback and the event loops add: the server counts from its sends).
    assert ahead["p1"] <= PACE_LEAD_S + 0.3 and ahead["p2"] <= PACE_LEAD_S + 0.3


def test_a_paced_line_that_would_be_heard_past_its_ttl_expires_unspoken(
    paced: ServerThread,
) -> None:
    """A long line first: the next one, TTL 3 s, would be heard only after its seconds of
    audio, so it is dropped as expired, before its TTL has even passed. (Unpaced it would
    start within a second, its TTL judged at the server.)"""

    async def go() -> tuple[list[dict[str, Any]], dict[str, float]]:
        async with websockets.connect(paced.ws_url, compression=None) as ws:
            await line(ws, LONG, id="long", ttl_ms=60000)
            await line(ws, "Am I too late?", id="short", ttl_ms=3000)
            return await listen(ws, {"long", "short"})

    events, _ = asyncio.run(go())
    assert spoken(events) == ["long"]
    (dropped,) = [e for e in events if e["type"] == "line_dropped"]
    assert dropped["id"] == "short" and dropped["reason"] == "expired"
    assert dropped["waited_ms"] < 3000
    done = next(e for e in events if e["type"] == "done")
    assert done["audio_ms"] > 3000 + PACE_LEAD_S * 1000  # (the premise: a long line)
