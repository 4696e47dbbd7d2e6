"""Opening a room from the command line (``emostream room``, ``danmaku --room``) against the
real server: the link, the same token again, refusals said plainly, lines published."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import websockets

from emostream.bridge.room_client import RoomRefused, open_room, rooms_url
from emostream.cli import main
from tests.conftest import ServerThread

ROOT = Path(__file__).resolve().parents[2]


def test_rooms_url_follows_the_stream_url() -> None:
    assert rooms_url("ws://127.0.0.1:8000/v1/stream") == "http://127.0.0.1:8000/v1/rooms"
    assert rooms_url("wss://tts.example/v1/stream?x=1") == "https://tts.example/v1/rooms"


def test_emostream_room_prints_the_same_link_each_time(
    server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["room", "cli-room", "--url", server.ws_url]) == 0
    first = capsys.readouterr().out.strip()
    assert main(["room", "cli-room", "--url", server.ws_url]) == 0
    assert capsys.readouterr().out.strip() == first
    assert first.startswith(f"{server.url}/live?room=cli-room&token=")
    assert main(["room", "no spaces", "--url", server.ws_url]) == 2
    assert "HTTP 400" in capsys.readouterr().err
    with pytest.raises(RoomRefused, match="cannot reach"):
        open_room("ws://127.0.0.1:9/v1/stream", "x", api_key=None, timeout_s=2)


async def _listen(url: str, until: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with websockets.connect(url) as ws:
        done = 0
        async with asyncio.timeout(120):
            while done < until:
                msg = await ws.recv()
                if isinstance(msg, str):
                    events.append(json.loads(msg))
                    done += events[-1]["type"] == "done"
    return events


async def test_danmaku_publishes_its_lines_into_the_room(server: ServerThread) -> None:
    room = open_room(server.ws_url, "bridge-room", api_key=None)
    url = f"ws://127.0.0.1:{server.port}/v1/rooms/bridge-room/listen?token={room['token']}"
    listening = asyncio.create_task(_listen(url, 1))
    await asyncio.sleep(0.5)
    bridge = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "emostream", "danmaku", "--url", server.ws_url, "--room",
        "bridge-room", "-o", "none", stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(
        bridge.communicate(b'{"text": "Hello room from the bridge.", "id": "c1"}\n'), 120
    )
    assert bridge.returncode == 0, stderr.decode()
    log = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    assert log[0] == {"type": "bridge", "event": "room", "room": "bridge-room",
                      "listen_url": room["listen_url"]}  # fmt: skip
    started = next(e for e in log if e["type"] == "started")
    assert started["room"] == "bridge-room" and started["codec"] == "opus"
    assert started["sample_rate"] == 48000  # no audio output here: Opus 48 kHz for the pages
    events = await listening
    assert [e["type"] for e in events if e["type"] in ("started", "done")] == ["started", "done"]
    assert next(e for e in events if e["type"] == "started")["id"] == "c1"
