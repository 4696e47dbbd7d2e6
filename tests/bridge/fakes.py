"""Local stand-ins for the platforms, speaking their wire protocols on loopback (no network):
Bilibili's live API and danmaku WebSocket, Twitch's IRC WebSocket, and an OpenAI-compatible
chat endpoint. Each plays a script per connection and records what the client did.

Packets and lines are built here by hand (struct, zlib, string formatting) from the
platforms' documented formats, not with the bridge's own codecs, so that a mistake in a codec
is not repeated on both sides of a test."""

from __future__ import annotations

import asyncio
import json
import struct
import zlib
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlparse

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

# A script step: bytes/str to send, ("sleep", s), ("drop",) abrupt close, ("close",) a clean
# close, ("wait_close",) until the client closes, ("ping",) Twitch PING, ("hold",) forever.
Step = bytes | str | tuple[Any, ...]


def bili_packet(op: int, body: bytes, ver: int = 0) -> bytes:
    return struct.pack(">IHHII", 16 + len(body), 16, ver, op, 1) + body


def bili_msg(obj: dict[str, Any]) -> bytes:
    return bili_packet(5, json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def bili_batch(*messages: dict[str, Any]) -> bytes:
    """Several messages in one zlib-compressed packet (protocol version 2)."""
    return bili_packet(5, zlib.compress(b"".join(bili_msg(m) for m in messages)), ver=2)


def danmu(text: str, uid: int, name: str, id_str: str) -> dict[str, Any]:
    meta = [0, 1, 25, 16777215, 1700000000000 + uid, 0, 0, "h", 0, 0, 0, "", 0, "{}", "{}",
            {"mode": 0, "extra": json.dumps({"id_str": id_str})}]  # fmt: skip
    return {"cmd": "DANMU_MSG", "info": [meta, text, [uid, name, 0, 0, 0, 10000, 1, ""]]}


def gift(uid: int, name: str, gift_name: str, num: int, tid: str) -> dict[str, Any]:
    return {"cmd": "SEND_GIFT", "data": {"uid": uid, "uname": name, "giftName": gift_name,
            "num": num, "price": 1000, "coin_type": "gold", "tid": tid}}  # fmt: skip


def superchat(sc_id: int, uid: int, name: str, text: str, price: int) -> dict[str, Any]:
    return {"cmd": "SUPER_CHAT_MESSAGE", "data": {"id": sc_id, "uid": uid, "price": price,
            "message": text, "user_info": {"uname": name}}}  # fmt: skip


class _Fake:
    def __init__(self, scripts: Sequence[Sequence[Step]]) -> None:
        self.scripts = list(scripts)
        self.connections = 0
        self.port = 0
        self.received: list[list[Any]] = []  # per connection, what the client sent
        self._server: Any = None
        self._handlers: list[asyncio.Task[Any]] = []

    async def __aenter__(self) -> Any:
        self._server = await serve(self._handle, "127.0.0.1", 0, compression=None,
                                   max_size=None, process_request=self._http)  # fmt: skip
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in self._handlers:
            task.cancel()
        await self._server.wait_closed()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        return None

    def script(self) -> Sequence[Step]:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.append(task)
        n = self.connections
        self.connections += 1
        self.received.append([])
        return self.scripts[n] if n < len(self.scripts) else [("hold",)]

    async def _handle(self, ws: ServerConnection) -> None:
        raise NotImplementedError

    async def _play(self, ws: ServerConnection, steps: Sequence[Step]) -> None:
        for step in steps:
            if isinstance(step, bytes | str):
                await ws.send(step)
            elif step[0] == "sleep":
                await asyncio.sleep(step[1])
            elif step[0] == "drop":
                ws.transport.abort()
                return
            elif step[0] == "close":
                await ws.close()
                return
            elif step[0] == "wait_close":
                await ws.wait_closed()
                return
            elif step[0] == "hold":
                await asyncio.Future()
            else:
                await self._step(ws, step)

    async def _step(self, ws: ServerConnection, step: tuple[Any, ...]) -> None:
        raise ValueError(f"unknown step {step}")


class FakeBilibili(_Fake):
    """The live API (room_init, getDanmuInfo) and the danmaku WebSocket on one port.
    ``room`` maps to ``real_room``; the auth must name the real room and the token."""

    def __init__(self, scripts: Sequence[Sequence[Step]], *, room: int = 7,
                 real_room: int = 7007, token: str = "tok-123") -> None:  # fmt: skip
        super().__init__(scripts)
        self.room, self.real_room, self.token = room, real_room, token
        self.heartbeats = 0
        self.auths: list[dict[str, Any]] = []
        self.api_calls: list[str] = []

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlparse(request.path)
        query = parse_qs(url.query)
        if url.path == "/sub":
            return None
        self.api_calls.append(url.path)
        if url.path == "/room/v1/Room/room_init":
            ok = query.get("id") == [str(self.room)]
            body = ({"code": 0, "data": {"room_id": self.real_room}} if ok
                    else {"code": 60004, "msg": "直播间不存在"})  # fmt: skip
        elif url.path == "/xlive/web-room/v1/index/getDanmuInfo":
            body = {
                "code": 0,
                "data": {
                    "token": self.token,
                    "host_list": [
                        {"host": "127.0.0.1", "port": 2243, "wss_port": 0, "ws_port": self.port}
                    ],
                },
            }
        else:
            return connection.respond(HTTPStatus.NOT_FOUND, "no such API\n")
        return connection.respond(HTTPStatus.OK, json.dumps(body, ensure_ascii=False))

    async def _handle(self, ws: ServerConnection) -> None:
        steps = self.script()
        auth = await ws.recv()
        assert isinstance(auth, bytes)
        length, _header, _ver, op, _seq = struct.unpack(">IHHII", auth[:16])
        body = json.loads(auth[16:length])
        self.auths.append(body)
        if op != 7 or body.get("roomid") != self.real_room or body.get("key") != self.token:
            await ws.send(bili_packet(8, b'{"code":-101}', ver=1))
            return
        await ws.send(bili_packet(8, b'{"code":0}', ver=1))
        reader = asyncio.create_task(self._beats(ws))
        try:
            await self._play(ws, steps)
        finally:
            reader.cancel()

    async def _beats(self, ws: ServerConnection) -> None:
        async for data in ws:
            if isinstance(data, bytes) and struct.unpack(">IHHII", data[:16])[3] == 2:
                self.heartbeats += 1
                await ws.send(bili_packet(3, struct.pack(">I", 4321), ver=1))


def privmsg(text: str, user: str, msg_id: str, channel: str = "chan", **tags: str) -> str:
    all_tags = {"badge-info": "", "badges": "", "color": "", "display-name": user.title(),
                "emotes": "", "id": msg_id, "mod": "0", "user-id": str(zlib.crc32(user.encode()) % 10**6),
                **tags}  # fmt: skip
    head = ";".join(f"{k}={v}" for k, v in all_tags.items())
    return f"@{head} :{user}!{user}@{user}.tmi.twitch.tv PRIVMSG #{channel} :{text}"


def usernotice(msg_id_kind: str, user: str, msg_id: str, text: str = "", channel: str = "chan",
               **tags: str) -> str:  # fmt: skip
    all_tags = {"display-name": user.title(), "id": msg_id, "login": user, "msg-id": msg_id_kind,
                "user-id": str(zlib.crc32(user.encode()) % 10**6), **tags}  # fmt: skip
    head = ";".join(f"{k}={v}" for k, v in all_tags.items())
    tail = f" :{text}" if text else ""
    return f"@{head} :tmi.twitch.tv USERNOTICE #{channel}{tail}"


class FakeTwitch(_Fake):
    """IRC over WebSocket: expects CAP REQ, NICK justinfan…, JOIN #channel; acknowledges
    them, then plays the script. ``("ping",)`` sends a PING and waits for the PONG;
    ``("reconnect",)`` sends RECONNECT and waits for the client to go."""

    def __init__(self, scripts: Sequence[Sequence[Step]], channel: str = "chan") -> None:
        super().__init__(scripts)
        self.channel = channel
        self.pongs = 0
        self.nicks: list[str] = []
        self._pong = asyncio.Event()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def _handle(self, ws: ServerConnection) -> None:
        steps = self.script()
        got: list[str] = self.received[-1]
        while not any(line.startswith("JOIN") for line in got):
            data = await ws.recv()
            got += [ln for ln in str(data).split("\r\n") if ln]
        nick = next(ln.split(" ", 1)[1] for ln in got if ln.startswith("NICK"))
        self.nicks.append(nick)
        assert any(ln.startswith("CAP REQ :twitch.tv/tags") for ln in got), got
        assert f"JOIN #{self.channel}" in got, got
        await ws.send(":tmi.twitch.tv CAP * ACK :twitch.tv/tags twitch.tv/commands\r\n"
                      f":tmi.twitch.tv 001 {nick} :Welcome, GLHF!\r\n"
                      f":{nick}!{nick}@{nick}.tmi.twitch.tv JOIN #{self.channel}\r\n")  # fmt: skip
        reader = asyncio.create_task(self._read(ws, got))
        try:
            await self._play(ws, steps)
        finally:
            reader.cancel()

    async def _read(self, ws: ServerConnection, got: list[str]) -> None:
        async for data in ws:
            for line in str(data).split("\r\n"):
                if line:
                    got.append(line)
                if line.startswith("PONG"):
                    self.pongs += 1
                    self._pong.set()

    async def _step(self, ws: ServerConnection, step: tuple[Any, ...]) -> None:
        if step[0] == "ping":
            self._pong.clear()
            await ws.send("PING :tmi.twitch.tv\r\n")
            async with asyncio.timeout(5):
                await self._pong.wait()
        elif step[0] == "reconnect":
            await ws.send(":tmi.twitch.tv RECONNECT\r\n")
            async with asyncio.timeout(10):
                await ws.wait_closed()
        else:
            raise ValueError(f"unknown step {step}")
