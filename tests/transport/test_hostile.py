"""A careless or hostile client against the real server: malformed WebSocket messages and HTTP
bodies are clear errors that keep the connection, ``cancel`` races never lose ``done``, and the
stream limit refuses before ``started`` (WebSocket) or before the response begins (HTTP)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect

BIG = "1" * 400


@pytest.fixture(scope="module")
def one_stream_server(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    """A server whose stream limit is one utterance (``EMOSTREAM_MAX_STREAMS=1``)."""
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(max_streams=1, data_dir=str(tmp_path_factory.mktemp("one-stream")))
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


def connect(url: str) -> Any:
    return websockets.connect(url, compression=None, max_size=None)


async def next_event(ws: Any, timeout: float = 10) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            msg = await ws.recv()
            if isinstance(msg, str):
                event: dict[str, Any] = json.loads(msg)
                return event


HOSTILE_WS = [
    ('{"type": "start", "speed": ' + BIG + "}", "bad_value"),
    ('{"type": "start", "speed": -' + "9" * 5000 + "}", "bad_value"),
    ('{"type": "start", "format": {"sample_rate": Infinity}}', "bad_format"),
    ('{"type": "start", "format": {"sample_rate": 1e400}}', "bad_format"),
    ("[" * 1100 + "]" * 1100, "bad_message"),
    ('{"type": "start", "voice": "\\ud800"}', "bad_value"),
    ('{"type": "start", "reference_audio": "\u00e9\u00e9\u00e9\u00e9"}', "unsupported_control"),
    ('{"type": "start", "timestamps": "false"}', "bad_value"),
    ('{"type": "start", "voice": ""}', "bad_value"),
    ('{"type": "start", "context_id": "' + "c" * 5000 + '"}', "bad_value"),
    ('{"type": "start", "context_id": {"id": "a"}}', "bad_value"),
    ('{"type": "cancel", "context_id": "a\\u0000"}', "bad_value"),
    # The first start above (refused or not) made this a v1 connection: no contexts here.
    ('{"type": "end", "context_id": "nobody"}', "protocol_mismatch"),
]


async def test_malformed_messages_keep_the_connection(
    server: ServerThread, server_log: list[logging.LogRecord]
) -> None:
    async with connect(server.ws_url) as ws:
        for raw, code in HOSTILE_WS:
            await ws.send(raw)
            event = await next_event(ws)
            assert event["type"] == "error" and event["code"] == code, (raw[:60], event)
        await ws.send(json.dumps({"type": "start"}))
        assert (await next_event(ws))["type"] == "started"
        await ws.send(json.dumps({"type": "text", "text": "\ud83d\ude00 still \udfff here"}))
        assert (await next_event(ws))["code"] == "bad_value"
        await ws.send(json.dumps({"type": "text", "text": "Still here."}))
        await ws.send(json.dumps({"type": "end"}))
        events, packets = await collect(ws, timeout=30)
        assert events[-1]["type"] == "done" and packets
    assert [r.getMessage() for r in server_log] == []


async def test_cancel_right_after_start_always_gets_done(server: ServerThread) -> None:
    async with connect(server.ws_url) as ws:
        for i in range(20):
            await ws.send(json.dumps({"type": "start"}))
            if i % 2:
                await ws.send(json.dumps({"type": "text", "text": "Cut me off. Right now."}))
            await ws.send(json.dumps({"type": "cancel"}))
            events, _ = await collect(ws, until=("done", "error"), timeout=5)
            assert [e["type"] for e in events if e["type"] != "segment"] == ["started", "done"]
            assert events[-1]["cancelled"] is True
        # Exactly one done per start: nothing else is pending before the next start's reply.
        await ws.send(json.dumps({"type": "start"}))
        assert (await next_event(ws))["type"] == "started"
        await ws.send(json.dumps({"type": "cancel"}))
        assert (await next_event(ws))["type"] == "done"


async def test_stream_limit_refuses_before_started(one_stream_server: ServerThread) -> None:
    for _ in range(3):
        async with (
            connect(one_stream_server.ws_url) as a,
            connect(one_stream_server.ws_url) as b,
            connect(one_stream_server.ws_url) as c,
            connect(one_stream_server.ws_url) as d,
        ):
            conns = [a, b, c, d]
            await asyncio.gather(*(ws.send(json.dumps({"type": "start"})) for ws in conns))
            first = [await next_event(ws) for ws in conns]
            kinds = sorted(e.get("code", e["type"]) for e in first)
            assert kinds == ["busy", "busy", "busy", "started"], first
            for ws, event in zip(conns, first, strict=True):
                if event["type"] == "started":
                    await ws.send(json.dumps({"type": "cancel"}))
                    events, _ = await collect(ws, until=("done", "error"), timeout=5)
                    assert [e["type"] for e in events] == ["done"] and events[0]["cancelled"]
        await wait_idle(one_stream_server)


async def wait_idle(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        for _ in range(100):
            if (await client.get("/healthz")).json()["active_streams"] == 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("streams still active")


@pytest.mark.parametrize(
    "body,code",
    [
        (b'{"input": "hi", "response_format": ["wav"]}', "bad_format"),
        (b'{"input": "hi", "response_format": {"x": 1}}', "bad_format"),
        (b'{"input": "hi", "speed": ' + BIG.encode() + b"}", "bad_value"),
        (b'{"input": "hi", "speed": 1e400}', "bad_value"),
        (b'{"input": "hi", "pitch_shift": -Infinity}', "bad_value"),
        (b'{"input": "hi", "sample_rate": 1e400}', "bad_format"),
        (b'{"input": "hi", "sample_rate": ' + BIG.encode() + b"}", "bad_format"),
        (b'{"input": "hi", "sample_rate": "24000", "response_format": "wav"}', "bad_format"),
        (b'{"input": "Hello \\ud800 there."}', "bad_value"),
        (b'{"input": "hi", "voice": ""}', "bad_value"),
        (b'{"input": "hi", "voice": ["joe"]}', "bad_value"),
        (b'{"input": "hi", "emotion": ""}', "bad_value"),
        (b"[" * 1100 + b"]" * 1100, "bad_message"),
        (b'{"input": "\xff\xfe"}', "bad_json"),
    ],
)
async def test_bad_speech_requests_are_4xx_json(
    server: ServerThread, server_log: list[logging.LogRecord], body: bytes, code: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post(
            "/v1/audio/speech", content=body, headers={"content-type": "application/json"}
        )
    assert r.status_code == 400, r.content[:80]
    assert r.headers["content-type"] == "application/json"
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]
    assert [rec.getMessage() for rec in server_log] == []


async def test_speech_at_the_stream_limit_is_503_before_any_byte(
    one_stream_server: ServerThread,
) -> None:
    async def one(client: httpx.AsyncClient) -> tuple[int, bytes]:
        body = {"input": "One at a time, please.", "response_format": "wav"}
        async with client.stream("POST", "/v1/audio/speech", json=body) as r:
            return r.status_code, b"".join([c async for c in r.aiter_bytes()])

    for _ in range(3):
        async with httpx.AsyncClient(base_url=one_stream_server.url, timeout=60) as client:
            results = await asyncio.gather(*(one(client) for _ in range(8)))
        ok = [data for status, data in results if status == 200]
        refused = [json.loads(data) for status, data in results if status == 503]
        assert len(ok) + len(refused) == 8 and ok, [(s, d[:60]) for s, d in results]
        assert all(len(data) > 44 + 24000 for data in ok), [len(d) for d in ok]  # > 0.5 s audio
        assert all(e["error"]["code"] == "busy" for e in refused)
        await wait_idle(one_stream_server)


async def test_busy_says_when_to_retry_and_its_text_and_end_get_no_answer(
    one_stream_server: ServerThread,
) -> None:
    """A start refused busy gets one error, with retry_after_ms (HTTP: Retry-After); the
    text and end its client had already sent are dropped quietly, not answered not_started."""
    async with connect(one_stream_server.ws_url) as a, connect(one_stream_server.ws_url) as b:
        await a.send(json.dumps({"type": "start"}))
        assert (await next_event(a))["type"] == "started"  # a holds the one slot
        await b.send(json.dumps({"type": "start"}))
        await b.send(json.dumps({"type": "text", "text": "Hello there."}))
        await b.send(json.dumps({"type": "end"}))
        await b.send(json.dumps({"type": "no_such_type"}))  # answered: marks the end
        busy = await next_event(b)
        assert busy["code"] == "busy" and busy["retry_after_ms"] == 1000, busy
        assert (await next_event(b))["code"] == "unknown_type"  # nothing between the two
        async with httpx.AsyncClient(base_url=one_stream_server.url) as client:
            r = await client.post("/v1/audio/speech", json={"input": "Hi."})
        assert r.status_code == 503 and r.headers["Retry-After"] == "1"
        assert r.json()["error"]["code"] == "busy" and r.json()["error"]["retry_after_ms"] == 1000
        await a.send(json.dumps({"type": "cancel"}))
        assert (await next_event(a))["type"] == "done"
        await wait_idle(one_stream_server)
        await b.send(json.dumps({"type": "start"}))
        assert (await next_event(b))["type"] == "started"
        await b.send(json.dumps({"type": "cancel"}))
        assert (await next_event(b))["type"] == "done"
