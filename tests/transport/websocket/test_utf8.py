"""A WebSocket text message that is not UTF-8: close 1007 with a reason, one WARNING line per
connection (no traceback, no ERROR), counted as ``invalid_utf8``; other connections and the
server go on."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import re
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.transport.websocket.utf8 import INVALID_UTF8_REASON, Utf8CheckedProtocol, is_utf8
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect

BAD = b'{"type":"text","text":"caf\xe9"}'  # Latin-1, not UTF-8


def _frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One masked client frame (payloads under 126 bytes)."""
    mask = os.urandom(4)
    head = bytes([(0x80 if fin else 0) | opcode, 0x80 | len(payload)])
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _open(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        .encode()
    )  # fmt: skip
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _close_frame(sock: socket.socket) -> tuple[int, str]:
    """The server's close frame (code, reason), skipping anything before it."""
    data = b""
    while True:
        chunk = sock.recv(4096)
        assert chunk, f"closed without a close frame: {data!r}"
        data += chunk
        while len(data) >= 2:
            opcode, size = data[0] & 0x0F, data[1] & 0x7F
            if len(data) < 2 + size:
                break
            payload, data = data[2 : 2 + size], data[2 + size :]
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0]
                return code, payload[2:].decode()


@pytest.fixture
def served(joe: PiperVoice, tmp_path: Path) -> Iterator[ServerThread]:
    app = create_app(Settings(data_dir=str(tmp_path)), catalog=VoiceCatalog([joe]))
    with ServerThread(app, ws=Utf8CheckedProtocol) as srv:
        yield srv


def test_is_utf8() -> None:
    assert is_utf8(b'{"a":1}') and is_utf8("café 你好".encode()) and is_utf8(b"")
    assert not is_utf8(BAD) and not is_utf8(b"\xed\xa0\x80")  # a surrogate's bytes


async def test_invalid_utf8_is_closed_1007_and_logged_once_per_connection(
    served: ServerThread, server_log: list[logging.LogRecord]
) -> None:
    for split in (False, True):  # one frame; a fragmented message (text + continuation)
        sock = await asyncio.to_thread(_open, served.port)
        if split:
            burst = _frame(0x1, BAD[:20], fin=False) + _frame(0x0, BAD[20:])
        else:
            burst = _frame(0x1, BAD) * 5  # five bad messages in one packet
        sock.sendall(burst)
        code, reason = await asyncio.to_thread(_close_frame, sock)
        assert (code, reason) == (1007, INVALID_UTF8_REASON)
        sock.close()
    await asyncio.sleep(0.2)
    assert all(r.exc_info is None and r.levelno < logging.ERROR for r in server_log), [
        r.getMessage() for r in server_log
    ]
    warned = [r for r in server_log if "not UTF-8" in r.getMessage()]
    assert len(warned) == 2 and all(r.levelno == logging.WARNING for r in warned)

    # the server goes on: a good connection speaks, and the refusals were counted
    async with websockets.connect(served.ws_url, compression=None) as ws:
        await ws.send('{"type":"start","voice":"joe"}')
        await ws.send('{"type":"text","text":"Caf\u00e9 au lait."}')
        await ws.send('{"type":"end"}')
        events, audio = await collect(ws)
        assert events[-1]["type"] == "done" and audio
    async with httpx.AsyncClient(base_url=served.url) as client:
        metrics = (await client.get("/metrics")).text
    found = re.search(r'emostream_errors_total\{code="invalid_utf8"\} (\S+)', metrics)
    assert found is not None and float(found.group(1)) == 2
