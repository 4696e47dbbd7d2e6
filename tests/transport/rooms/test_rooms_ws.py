"""Rooms on the real server (voice joe): one synthesis heard by every listener, the same
frames and events for each, counted once; refusals; late joiners; a slow listener dropped
alone; lines with their queue; the owner's HTTP API and the /live page."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.protocol_schema import check_event, check_room_event
from tests.transport.conftest import collect

OPUS = {"codec": "opus", "sample_rate": 48000}
PCM48 = {"codec": "pcm_s16le", "sample_rate": 48000}


@pytest.fixture(scope="module")
def served(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("rooms")), max_text_chars=3000,
        room_listener_queue_bytes=96 << 10, slow_reader_timeout_s=2.0, phrase_cache_bytes=0,
    )  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


def open_room(server: ServerThread, name: str) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/v1/rooms", json={"name": name})
    assert response.status_code in (200, 201), response.text
    room: dict[str, Any] = response.json()
    return room


def listen_url(server: ServerThread, room: dict[str, Any], token: str | None = None) -> str:
    token = room["token"] if token is None else token
    return f"ws://127.0.0.1:{server.port}/v1/rooms/{room['room']}/listen?token={token}"


def metric(server: ServerThread, name: str, labels: str = "") -> float:
    text = httpx.get(f"{server.url}/metrics").text
    pattern = re.escape(name + (f"{{{labels}}}" if labels else "")) + r" ([0-9.e+-]+)"
    found = re.search(r"^" + pattern + "$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def say(ws: Any, text: str, **fields: Any) -> tuple[list[dict[str, Any]], list[bytes]]:
    await ws.send(json.dumps({"type": "start", "format": OPUS, **fields}))
    await ws.send(json.dumps({"type": "text", "text": text}))
    await ws.send(json.dumps({"type": "end"}))
    return await collect(ws)


async def hello(ws: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert event["type"] == "room"
    check_room_event(event)
    return event


async def test_two_listeners_hear_the_same_audio_from_one_synthesis(served: ServerThread) -> None:
    room = open_room(served, "main")
    assert room["listen_url"] == (f"{served.url}/live?room=main&token={room['token']}")
    ok = 'outcome="ok",transport="ws"'
    before = metric(served, "emostream_utterances_total", ok)
    frames_before = metric(served, "emostream_room_frames_total")
    async with (
        websockets.connect(listen_url(served, room)) as a,
        websockets.connect(listen_url(served, room)) as b,
        websockets.connect(served.ws_url) as publisher,
    ):
        assert (await hello(a))["listeners"] == 1 and (await hello(b))["listeners"] == 2
        assert metric(served, "emostream_room_listeners") == 2
        own, sent = await say(publisher, "Hello room, one voice for everyone.", room="main")
        (ev_a, au_a), (ev_b, au_b) = await asyncio.gather(collect(a), collect(b))
    assert own[0]["type"] == "started" and own[0]["room"] == "main"
    assert {e["type"] for e in own} == {"started", "segment", "done"}  # no words/mouth unasked
    assert au_a == au_b == sent and len(sent) > 50  # the very same Opus packets
    assert ev_a == ev_b
    for event in ev_a:
        check_room_event(event)
    types = [e["type"] for e in ev_a]
    assert types[0] == "started" and types[-1] == "done" and {"words", "mouth"} <= set(types)
    assert ev_a[0]["utterance"] >= 1 and ev_a[0]["codec_delay_ms"] == 6.5
    mouth = sum(len(e["open"]) for e in ev_a if e["type"] == "mouth")
    assert mouth == len(sent)  # a mouth frame per audio frame
    words = [w["word"] for e in ev_a if e["type"] == "words" for w in e["words"]]
    assert words == ["Hello", "room", "one", "voice", "for", "everyone"]
    assert metric(served, "emostream_utterances_total", ok) == before + 1  # one synthesis
    assert metric(served, "emostream_room_frames_total") == frames_before + 2 * len(sent)


async def test_refused_tokens_and_rooms(served: ServerThread) -> None:
    room = open_room(served, "refusals")
    async with websockets.connect(listen_url(served, room, token="wrong")) as ws:
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert event["type"] == "error" and event["code"] == "room_refused"
    check_room_event(event)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    async with websockets.connect(served.ws_url) as ws:
        await ws.send(json.dumps({"type": "start", "room": "nobody-made-this"}))
        refused, _ = await collect(ws, until="error")
        await ws.send(json.dumps({"type": "start", "room": "bad name!"}))
        bad, _ = await collect(ws, until="error")
    assert refused[-1]["code"] == "unknown_room" and bad[-1]["code"] == "bad_value"
    check_event(refused[-1])


async def test_a_late_listener_starts_at_the_next_utterance(served: ServerThread) -> None:
    room = open_room(served, "late")
    long_text = "This one is long enough to be joined while it plays. " * 3
    async with (
        websockets.connect(listen_url(served, room)) as early,
        websockets.connect(served.ws_url) as publisher,
    ):
        await hello(early)
        await publisher.send(json.dumps({"type": "start", "format": OPUS, "room": "late"}))
        await publisher.send(json.dumps({"type": "text", "text": long_text}))
        await publisher.send(json.dumps({"type": "end"}))
        first = json.loads(await asyncio.wait_for(early.recv(), 30))
        assert first["type"] == "started"
        async with websockets.connect(listen_url(served, room)) as late:
            assert (await hello(late))["speaking"] is True
            await collect(publisher)
            await collect(early)
            await say(publisher, "And now the next one.", room="late")
            events, audio = await collect(late)
    assert events[0]["type"] == "started" and events[0]["utterance"] == first["utterance"] + 1
    assert audio and not any(e["type"] == "done" for e in events[:-1])


async def test_a_slow_listener_is_dropped_and_nobody_else_waits(served: ServerThread) -> None:
    room = open_room(served, "slow")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
    sock.connect(("127.0.0.1", served.port))
    sock.setblocking(False)
    dropped_before = metric(served, "emostream_room_listeners_dropped_total",
                            'reason="slow_listener"')  # fmt: skip
    text = " ".join(["A long reading that nobody slow may hold up, sentence after sentence."] * 20)
    async with (
        websockets.connect(listen_url(served, room), sock=sock, max_size=None,
                           max_queue=1) as slow,
        websockets.connect(listen_url(served, room)) as fast,
        websockets.connect(served.ws_url) as publisher,
    ):
        await hello(slow)
        await hello(fast)
        (own, sent), (events, audio) = await asyncio.gather(  # 5.6 MB of PCM a minute
            say(publisher, text, room="slow", format=PCM48), collect(fast, timeout=120)
        )
        for _ in range(100):  # the slow one is cut within slow_reader_timeout_s
            if metric(served, "emostream_room_listeners_dropped_total",
                      'reason="slow_listener"') > dropped_before:  # fmt: skip
                break
            await asyncio.sleep(0.1)
    assert own[-1]["type"] == "done" and not own[-1]["cancelled"]
    assert audio == sent and events[-1]["type"] == "done"
    after = metric(served, "emostream_room_listeners_dropped_total", 'reason="slow_listener"')
    assert after == dropped_before + 1


async def test_lines_into_a_room_with_their_queue(served: ServerThread) -> None:
    room = open_room(served, "lines")
    async with (
        websockets.connect(listen_url(served, room)) as listener,
        websockets.connect(served.ws_url) as publisher,
    ):
        await hello(listener)
        for i in range(2):
            await publisher.send(json.dumps({"type": "line", "text": f"Chat line {i}.",
                                             "id": f"m{i}", "room": "lines", "format": OPUS}))  # fmt: skip
        seen: list[dict[str, Any]] = []
        for _ in range(2):
            events, _ = await collect(listener)
            seen += events
    for event in seen:
        check_room_event(event)
    assert [e["id"] for e in seen if e["type"] == "started"] == ["m0", "m1"]
    assert any(e["type"] == "queue" for e in seen)


async def test_the_owners_api_and_the_live_page(served: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        made = await http.post("/v1/rooms", json={"name": "api"})
        again = await http.post("/v1/rooms", json={"name": "api"})
        assert made.status_code == 201 and again.status_code == 200
        assert again.json()["token"] == made.json()["token"]
        rotated = (await http.post("/v1/rooms", json={"name": "api", "rotate": True})).json()
        assert rotated["token"] != made.json()["token"]
        listed = (await http.get("/v1/rooms")).json()["rooms"]
        assert "api" in {r["room"] for r in listed}
        assert (await http.post("/v1/rooms", content=b"[1]")).status_code == 400
        assert (await http.post("/v1/rooms", json={"name": "x" * 65})).status_code == 400
        async with websockets.connect(listen_url(served, rotated)) as ws:
            await hello(ws)
            assert (await http.delete("/v1/rooms/api")).status_code == 204
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert event["code"] == "room_closed"
        assert (await http.get("/v1/rooms/api")).status_code == 404
        page = await http.get("/live?room=api&token=x")
        assert page.status_code == 200 and "js/live.js" in page.text


@pytest.fixture(scope="module")
def keyed(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(data_dir=str(tmp_path_factory.mktemp("keyed-rooms")),
                        api_keys="alice-key-0123456789,bob-key-0123456789")  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def test_with_keys_the_room_is_its_keys_and_the_token_lets_listeners_in(
    keyed: ServerThread,
) -> None:
    alice = {"Authorization": "Bearer alice-key-0123456789"}
    bob = {"Authorization": "Bearer bob-key-0123456789"}
    async with httpx.AsyncClient(base_url=keyed.url) as http:
        assert (await http.post("/v1/rooms", json={"name": "show"})).status_code == 401
        made = await http.post("/v1/rooms", json={"name": "show"}, headers=alice)
        assert made.status_code == 201
        assert (await http.post("/v1/rooms", json={"name": "show"}, headers=bob)).status_code == 409
        assert (await http.get("/v1/rooms/show", headers=bob)).status_code == 404
        assert (await http.get("/v1/rooms", headers=bob)).json() == {"rooms": []}
    room = made.json()
    async with (
        websockets.connect(listen_url(keyed, room)) as listener,  # no key: the token
        websockets.connect(keyed.ws_url, additional_headers=bob) as intruder,
        websockets.connect(keyed.ws_url, additional_headers=alice) as owner,
    ):
        await hello(listener)
        await intruder.send(json.dumps({"type": "start", "room": "show"}))
        refused, _ = await collect(intruder, until="error")
        assert refused[-1]["code"] == "unknown_room"
        await say(owner, "Only the owner speaks here.", room="show")
        events, audio = await collect(listener)
    assert events[0]["type"] == "started" and audio
    async with websockets.connect(
        f"ws://127.0.0.1:{keyed.port}/v1/rooms/show/listen?token=nope"
    ) as ws:
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert event["code"] == "room_refused"
