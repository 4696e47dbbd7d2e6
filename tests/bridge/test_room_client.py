"""Opening a room from the command line (``emostream room``, ``danmaku --room``) against the
real server: the link, the same token again, refusals said plainly, lines published; and the
streamer's setup, a platform's chat answered into a room (local fakes of Bilibili and of a
chat model)."""

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
from tests.bridge import fakes
from tests.bridge.fake_chat_model import FakeChatModel
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


async def test_the_streamers_setup_bilibili_chat_answered_into_a_room(
    server: ServerThread,
) -> None:
    """The whole command as a streamer runs it: ``--source bilibili:ROOM --room NAME`` with the
    reply step: a danmaku from the platform is answered by the chat model, and the reply is
    what the room's page hears (``--source`` and ``--reply-*`` from live_options, ``--room``
    from the room client, in one parser and one run)."""
    scripts: list[list[fakes.Step]] = [
        [fakes.bili_msg(fakes.danmu("hello streamer", 1, "ming", "d1")), ("hold",)]
    ]
    model = FakeChatModel([["[happy]", " Hi ming,", " welcome to the stream."]])
    room = open_room(server.ws_url, "stream-room", api_key=None)
    url = f"ws://127.0.0.1:{server.port}/v1/rooms/stream-room/listen?token={room['token']}"
    listening = asyncio.create_task(_listen(url, 1))
    await asyncio.sleep(0.5)
    with ServerThread(model.app) as endpoint:
        async with fakes.FakeBilibili(scripts) as fake:
            bridge = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "emostream", "danmaku", "--url", server.ws_url,
                "--source", "bilibili:7", "--source-url", fake.api, "--room", "stream-room",
                "--reply-url", f"{endpoint.url}/v1", "--reply-model", "fake-1", "-o", "none",
                stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
                env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
            )  # fmt: skip
            try:
                events = await asyncio.wait_for(listening, 120)
            finally:
                bridge.terminate()
                _, stderr = await asyncio.wait_for(bridge.communicate(), 60)
    assert bridge.returncode == 0, stderr.decode()
    log = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    assert log[0] == {"type": "bridge", "event": "room", "room": "stream-room",
                      "listen_url": room["listen_url"]}  # fmt: skip
    assert model.requests[0]["messages"][-1]["content"] == "ming: hello streamer"
    (spoken,) = [e for e in log if e["type"] == "reply" and e["event"] == "spoken"]
    assert spoken["text"] == "Hi ming, welcome to the stream."
    started = [e for e in log if e["type"] == "started"]
    assert started and all(e["room"] == "stream-room" for e in started)
    # the page heard the reply, whole: its words, one utterance not cut short
    heard = " ".join(e["text"] for e in events if e["type"] == "segment")
    assert "welcome to the stream" in heard
    (done,) = [e for e in events if e["type"] == "done"]
    assert not done["cancelled"] and done["audio_ms"] > 500
