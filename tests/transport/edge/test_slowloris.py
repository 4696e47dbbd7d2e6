"""Slowloris against a real ``emostream serve`` with a 1 s header and 2 s body deadline:
sockets that never finish their request are answered 408 ``request_timeout`` (headers) or closed
(body); honest clients (keep-alive HTTP, a WebSocket idle past the header deadline) are not."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
import websockets

from loadtest.procstats import sample
from tests.transport.served import Served

HEADER_S, BODY_S = 1.0, 2.0
UPGRADE = (
    b"GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
)
BODY = (
    b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)
SLOW = 100  # slowloris sockets at once

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("slowloris")
    env = {
        "EMOSTREAM_ACOUSTIC": "off",
        "EMOSTREAM_DATA_DIR": str(tmp / "data"),
        "EMOSTREAM_HEADER_TIMEOUT_S": str(HEADER_S),
        "EMOSTREAM_BODY_TIMEOUT_S": str(BODY_S),
    }
    with Served(tmp / "server.log", env) as served:
        yield served
    assert "Traceback" not in served.log.read_text()


def held(
    port: int, chunks: list[bytes], *, drip_s: float = 0.0, wait_s: float = 10
) -> tuple[float, bytes]:
    """Send ``chunks`` (``drip_s`` apart) and read until the server closes: (seconds, reply)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        t0 = time.monotonic()
        try:
            for chunk in chunks:
                s.sendall(chunk)
                time.sleep(drip_s)
        except OSError:  # closed by the server while dripping
            pass
        s.settimeout(wait_s)
        reply = b""
        try:
            while data := s.recv(4096):
                reply += data
        except TimeoutError:
            return float("inf"), reply
        except ConnectionResetError:
            pass
        return time.monotonic() - t0, reply


@pytest.mark.parametrize(
    ("name", "chunks", "drip_s"),
    [
        ("nothing sent", [], 0.0),
        ("half a request line", [b"GET /heal"], 0.0),
        ("headers without the blank line", [b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n"], 0.0),
        ("a WebSocket upgrade never finished", [UPGRADE], 0.0),
        (
            "headers dripped a byte at a time",
            [bytes([c]) for c in b"GET /healthz HTTP/1.1\r\n"],
            0.1,
        ),
    ],
)
def test_headers_never_finished_get_408(
    srv: Served, name: str, chunks: list[bytes], drip_s: float
) -> None:
    took, reply = held(srv.port, chunks, drip_s=drip_s)
    assert reply.startswith(b"HTTP/1.1 408"), (name, reply)
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_timeout"
    assert HEADER_S * 0.9 <= took < HEADER_S + 2, (name, took)


def test_body_never_finished_is_closed(srv: Served) -> None:
    took, _ = held(srv.port, [BODY])
    assert BODY_S * 0.9 <= took < BODY_S + HEADER_S + 2, took


def test_many_slow_sockets_closed_and_fds_back(srv: Served) -> None:
    before = sample(srv.pid)
    socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(SLOW)]
    for i, s in enumerate(socks):
        s.sendall([b"GET /", UPGRADE, BODY][i % 3])
    time.sleep(0.3)
    during = sample(srv.pid)
    deadline = time.monotonic() + BODY_S + 5
    closed = 0
    for s in socks:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except TimeoutError:
            pass
        except ConnectionResetError:
            closed += 1
        s.close()
    time.sleep(0.3)
    after = sample(srv.pid)
    assert closed == SLOW
    assert during.fds >= before.fds + SLOW * 0.9 and after.fds <= before.fds, (
        before,
        during,
        after,
    )


async def test_honest_clients_are_not_cut(srv: Served) -> None:
    async with httpx.AsyncClient(base_url=srv.url) as client:  # one keep-alive connection
        assert (await client.get("/healthz")).status_code == 200
        await asyncio.sleep(HEADER_S + 0.5)
        assert (await client.get("/healthz")).status_code == 200
        r = await client.post("/v1/audio/speech", json={"input": "Hi.", "response_format": "pcm"})
        assert r.status_code == 200 and len(r.content) > 1000
    async with websockets.connect(srv.ws_url) as ws:
        await asyncio.sleep(HEADER_S + BODY_S + 0.5)  # past both deadlines, before the idle one
        await ws.send(json.dumps({"type": "start"}))
        assert json.loads(await ws.recv())["type"] == "started"
