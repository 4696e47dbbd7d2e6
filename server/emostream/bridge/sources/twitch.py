"""Twitch chat, read anonymously (the asyncio layer around
:mod:`~emostream.bridge.sources.twitch_irc`).

Each session connects to ``wss://irc-ws.chat.twitch.tv:443``, sends the opening lines (tags,
``NICK justinfanNNNNN``, ``JOIN``), answers every ``PING`` with ``PONG``, and ends on
``RECONNECT`` (connected again at once), on the server closing, or after ``idle_s`` without a
line (Twitch pings about every five minutes). A malformed line is logged (``input_error``)
and skipped; a ``NOTICE`` (e.g. a channel that does not exist or is suspended) is logged.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable

from emostream.bridge.chat.events import ChatEvent
from emostream.bridge.sources.connect import Emit, OnEvent, SourceError, closed_reason
from emostream.bridge.sources.twitch_irc import NOT_CHAT, TwitchSession

URL = "wss://irc-ws.chat.twitch.tv:443"
MAX_MESSAGE_BYTES = 1 << 20
MAX_IGNORED_LOGGED = 64


class TwitchSource:
    platform = "twitch"

    def __init__(self, channel: str, *, url: str | None = None, idle_s: float = 360.0) -> None:
        TwitchSession(channel)  # checks the name
        self.channel = channel
        self.url = url or URL
        self.idle_s = idle_s
        self.stats: Counter[str] = Counter()
        self._ignored: set[str] = set()

    async def session(self, on_event: OnEvent, emit: Emit, connected: Callable[[], None]) -> str:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        irc = TwitchSession(self.channel, nick=f"justinfan{random.randint(10000, 99999)}")
        async with connect(self.url, max_size=MAX_MESSAGE_BYTES, compression=None,
                           open_timeout=10) as ws:  # fmt: skip
            for line in irc.opening():
                await ws.send(line + "\r\n")
            while True:
                try:
                    async with asyncio.timeout(self.idle_s):
                        data = await ws.recv()
                except TimeoutError:
                    raise SourceError(f"nothing from the server for {self.idle_s:g} s") from None
                except ConnectionClosed as exc:
                    return closed_reason(exc)
                if isinstance(data, bytes):
                    try:
                        data = data.decode("utf-8")
                    except UnicodeDecodeError:
                        self._bad(emit, "a binary message that is not UTF-8 text")
                        continue
                for action, value in irc.receive(data):
                    if action == "chat" and isinstance(value, ChatEvent):
                        self.stats["events"] += 1
                        on_event(value)
                    elif action == "joined":
                        connected()
                    elif action == "reconnect":
                        return "reconnect"
                    elif action == "notice" and isinstance(value, str):
                        if value.startswith("malformed: "):
                            self._bad(emit, value.removeprefix("malformed: "))
                        else:
                            emit({"type": "source", "event": "notice", "platform": self.platform,
                                  "message": value[:300]})  # fmt: skip
                    elif action == "ignored":
                        self._ignore(emit, str(value))
                while irc.outgoing:
                    await ws.send(irc.outgoing.pop(0) + "\r\n")

    def _ignore(self, emit: Emit, what: str) -> None:
        self.stats["ignored"] += 1
        if what not in self._ignored and len(self._ignored) < MAX_IGNORED_LOGGED:
            self._ignored.add(what)
            if what in NOT_CHAT:
                return  # server bookkeeping (CAP, ROOMSTATE ...): not worth a line
            emit({"type": "source", "event": "unknown_message", "platform": self.platform,
                  "cmd": what[:64], "message": "not chat; skipped (logged once)"})  # fmt: skip

    def _bad(self, emit: Emit, reason: str) -> None:
        self.stats["malformed"] += 1
        emit({"type": "input_error", "source": self.platform, "message": reason[:300]})
