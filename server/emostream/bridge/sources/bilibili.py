"""Bilibili live chat, read anonymously (the asyncio layer around
:mod:`~emostream.bridge.sources.bilibili_wire` and
:mod:`~emostream.bridge.sources.bilibili_cmds`).

Each session asks the live API for the room's real id (``/room/v1/Room/room_init?id=ROOM``:
a short room number maps to a long one) and the danmaku servers with their token
(``/xlive/web-room/v1/index/getDanmuInfo?id=REAL``), connects to ``wss://HOST:PORT/sub``,
sends the auth packet within 5 s (``uid`` 0: anonymous), waits for the auth reply, then sends
a heartbeat every 30 s and reads messages. If getDanmuInfo refuses (it may want a signed or
logged-in request), the session goes on without a token to the public host
``broadcastlv.chat.bilibili.com``; ``BILIBILI_COOKIE`` in the environment is sent with the API
requests for a logged-in token. Bilibili shows anonymous readers masked user names.

A malformed packet or message is logged (``input_error``) and skipped; a server that sends
nothing for ``idle_s`` (no heartbeat reply) is dropped and connected again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any

from emostream.bridge.sources import bilibili_cmds as cmds
from emostream.bridge.sources import bilibili_wire as wire
from emostream.bridge.sources.connect import (
    Emit,
    FatalSource,
    OnEvent,
    SourceError,
    closed_reason,
)  # fmt: skip

API = "https://api.live.bilibili.com"
DEFAULT_WS = "wss://broadcastlv.chat.bilibili.com/sub"
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) emostream-danmaku"
MAX_API_BYTES = 1 << 20
MAX_MESSAGE_BYTES = 4 << 20  # one WebSocket message; past it the connection is dropped
MAX_UNKNOWN_LOGGED = 64  # distinct unknown cmds named in the log (all are counted)


class BilibiliSource:
    platform = "bilibili"

    def __init__(
        self,
        room: int,
        *,
        api: str | None = None,
        heartbeat_s: float = 30.0,
        idle_s: float = 70.0,
        auth_timeout_s: float = 10.0,
        cookie: str | None = None,
    ) -> None:
        self.room = room
        self.api = (api or API).rstrip("/")
        self.heartbeat_s = heartbeat_s
        self.idle_s = idle_s
        self.auth_timeout_s = auth_timeout_s
        self.cookie = cookie if cookie is not None else os.environ.get("BILIBILI_COOKIE")
        self.stats: Counter[str] = Counter()
        self.popularity: int | None = None
        self._unknown: set[str] = set()
        self._sessions = 0

    # -- the live API ------------------------------------------------------------------------
    def _get_json(self, path: str, **query: Any) -> dict[str, Any]:
        url = f"{self.api}{path}?{urllib.parse.urlencode(query)}"
        headers = {"User-Agent": USER_AGENT, "Referer": "https://live.bilibili.com/"}
        if self.cookie:
            headers["Cookie"] = self.cookie
        req = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(req, timeout=10) as resp:  # http(s) only: checked in _resolve
            body = resp.read(MAX_API_BYTES + 1)
        if len(body) > MAX_API_BYTES:
            raise SourceError(f"{path}: an answer over {MAX_API_BYTES} bytes")
        try:
            parsed = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}: not JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise SourceError(f"{path}: not a JSON object")
        return parsed

    def _resolve(self) -> tuple[int, str, list[str]]:
        """(the real room id, the token or "", the WebSocket URLs to try)."""
        if not self.api.startswith(("http://", "https://")):
            raise FatalSource(f"the Bilibili API URL must be http(s), not {self.api!r}")
        init = self._get_json("/room/v1/Room/room_init", id=self.room)
        data = init.get("data")
        if init.get("code") != 0 or not isinstance(data, dict):
            raise FatalSource(f"Bilibili has no live room {self.room} "
                              f"(room_init: {init.get('code')} {init.get('msg', '')})")  # fmt: skip
        real = data.get("room_id")
        if not isinstance(real, int) or real <= 0:
            raise SourceError("room_init gave no room_id")
        try:
            info = self._get_json("/xlive/web-room/v1/index/getDanmuInfo", id=real, type=0)
        except (OSError, SourceError):
            info = {}
        idata = info.get("data") if info.get("code") == 0 else None
        if not isinstance(idata, dict):
            return real, "", [DEFAULT_WS]
        token = idata.get("token") if isinstance(idata.get("token"), str) else ""
        urls = [
            f"wss://{h['host']}:{h.get('wss_port', 443)}/sub" if h.get("wss_port")
            else f"ws://{h['host']}:{h.get('ws_port', 2244)}/sub"
            for h in idata.get("host_list") or []
            if isinstance(h, dict) and isinstance(h.get("host"), str)
        ]  # fmt: skip
        return real, str(token), urls or [DEFAULT_WS]

    # -- one connection ------------------------------------------------------------------------
    async def session(self, on_event: OnEvent, emit: Emit, connected: Callable[[], None]) -> str:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        try:
            room, token, urls = await asyncio.to_thread(self._resolve)
        except urllib.error.HTTPError as exc:
            raise SourceError(f"the live API answered HTTP {exc.code}") from None
        url = urls[self._sessions % len(urls)]
        self._sessions += 1
        async with connect(url, max_size=MAX_MESSAGE_BYTES, compression=None,
                           open_timeout=10, ping_interval=None,
                           user_agent_header=USER_AGENT) as ws:  # fmt: skip
            await ws.send(wire.auth(room, key=token))
            async with asyncio.timeout(self.auth_timeout_s):
                reply = await ws.recv()
            self._check_auth(reply)
            connected()
            beat = asyncio.create_task(self._heartbeat(ws))
            try:
                while True:
                    try:
                        async with asyncio.timeout(self.idle_s):
                            data = await ws.recv()
                    except TimeoutError:
                        raise SourceError(
                            f"nothing from the server for {self.idle_s:g} s"
                        ) from None
                    except ConnectionClosed as exc:
                        return closed_reason(exc)
                    self._message(data, on_event, emit)
            finally:
                beat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beat

    def _check_auth(self, reply: bytes | str) -> None:
        if isinstance(reply, str):
            raise SourceError("the auth reply is text, not a packet")
        packets = wire.decode(reply)
        first = packets[0] if packets else None
        if not isinstance(first, wire.Packet) or first.op != wire.OP_AUTH_REPLY:
            raise SourceError(f"the first packet is not the auth reply: {first}")
        code = first.body.get("code") if isinstance(first.body, dict) else None
        if code != 0:
            raise SourceError(f"auth refused (code {code})")

    async def _heartbeat(self, ws: Any) -> None:
        while True:
            await ws.send(wire.heartbeat())
            await asyncio.sleep(self.heartbeat_s)

    def _message(self, data: bytes | str, on_event: OnEvent, emit: Emit) -> None:
        if isinstance(data, str):
            self._bad(emit, "a text message where packets were expected")
            return
        for packet in wire.decode(data):
            if isinstance(packet, wire.Malformed):
                self._bad(emit, packet.reason)
            elif packet.op == wire.OP_HEARTBEAT_REPLY:
                self.popularity = packet.body
            elif packet.op == wire.OP_MESSAGE:
                self._command(packet.body, on_event, emit)

    def _command(self, message: dict[str, Any], on_event: OnEvent, emit: Emit) -> None:
        cmd = cmds.cmd_of(message) or "?"
        try:
            event = cmds.parse(message)
        except cmds.BadMessage as exc:
            self._bad(emit, str(exc))
            return
        if event is not None:
            self.stats["events"] += 1
            on_event(event)
        elif cmd not in cmds.IGNORED:
            self.stats["unknown"] += 1
            if cmd not in self._unknown and len(self._unknown) < MAX_UNKNOWN_LOGGED:
                self._unknown.add(cmd)
                emit({"type": "source", "event": "unknown_message", "platform": self.platform,
                      "cmd": cmd[:64], "message": "not chat; skipped (logged once)"})  # fmt: skip

    def _bad(self, emit: Emit, reason: str) -> None:
        self.stats["malformed"] += 1
        emit({"type": "input_error", "source": self.platform, "message": reason[:300]})
