"""The connection's bounded sender: every frame to the client goes through it, one at a time.

Sends are serialised with a lock (the receive loop and every utterance's task write to the
socket). A send that waits more than ``slow_reader_timeout_s`` for a client that stopped
reading marks the connection *stalled*: later sends are dropped, and the connection is told
(``on_stall``) so that it cuts the stream (``slow_reader``). Sends wait for the transport's
buffer to drain below its high-water mark (uvicorn), so what the server holds for one stream is
bounded by that mark (64 KiB) plus one frame, never the whole utterance.

An audio frame is sent without a timer of its own (50 frames a second a stream: an
``asyncio.timeout`` each was the larger half of a frame's CPU, ``bench/ws_send_cost.py``): the
watchdog (:meth:`BoundedSender.watch`, waking every quarter of ``slow_reader_timeout_s``) cuts
the utterance whose frame has waited longer than that (so after 1-1.25 times it), cancelling
its task; other sends, and a frame queued behind another, keep their own timeout.
:class:`FrameWatch` is the watchdog's sans-I/O part: which frame is in flight, since when.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

log = logging.getLogger(__name__)


class FrameWatch:
    """The audio frame being sent without a timer: who sends it (the task to cancel), since
    when; and whether it has waited past the limit. No clock, no task of its own."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self._pending: tuple[asyncio.Task[Any], float] | None = None

    @property
    def period_s(self) -> float:
        """How often to look: a quarter of the limit, never a busy loop whatever the setting."""
        return max(self.limit_s / 4, 0.05)

    def begin(self, sender: asyncio.Task[Any], now: float) -> None:
        self._pending = (sender, now)

    def end(self) -> None:
        self._pending = None

    def overdue(self, now: float) -> asyncio.Task[Any] | None:
        """The task whose frame has waited ``limit_s`` or more, else None."""
        pending = self._pending
        if pending is not None and now - pending[1] >= self.limit_s:
            return pending[0]
        return None


class BoundedSender:
    """Frames to one WebSocket, each bounded in time (module docs)."""

    def __init__(self, ws: WebSocket, *, timeout_s: float, on_stall: Callable[[], None]) -> None:
        self.ws = ws
        self.timeout_s = timeout_s  # slow_reader_timeout_s
        self.stalled = False  # the client stopped reading: sends are dropped
        self._on_stall = on_stall
        self._lock = asyncio.Lock()
        self._frames = FrameWatch(timeout_s)

    def sendable(self) -> bool:
        """The connection is up on both sides and not cut as a slow reader."""
        return (
            not self.stalled
            and self.ws.client_state == WebSocketState.CONNECTED
            and self.ws.application_state == WebSocketState.CONNECTED
        )

    async def send_json(self, body: dict[str, Any], *, timeout: float | None = None) -> None:
        await self.send(text=json.dumps(body, ensure_ascii=False), timeout=timeout)

    async def send_frame(self, data: bytes | str) -> bool:
        """One audio frame, from an utterance's task (``str``: audio inside a text message, as
        the compatible APIs send it). With nothing queued before it, no timer of its own:
        :meth:`watch` bounds the wait (and cancels the task)."""
        task = asyncio.current_task()
        if self._lock.locked() or task is None:
            if isinstance(data, str):
                return await self.send(text=data)
            return await self.send(data=data)
        if not self.sendable():
            return False
        self._frames.begin(task, time.monotonic())
        try:
            async with self._lock:
                if isinstance(data, str):
                    await self.ws.send_text(data)
                else:
                    await self.ws.send_bytes(data)
            return True
        except (WebSocketDisconnect, RuntimeError, OSError):
            log.debug("send after disconnect dropped")
            return False
        finally:
            self._frames.end()

    async def watch(self) -> None:
        """Cut the utterance whose audio frame waits longer than ``slow_reader_timeout_s``
        for a client that does not read (as :meth:`send`'s timeout does for other sends).
        Runs until cancelled (one task per connection)."""
        while True:
            await asyncio.sleep(self._frames.period_s)
            task = self._frames.overdue(time.monotonic())
            if task is not None:
                self._stall(self.timeout_s)
                task.cancel()

    async def send(
        self, *, text: str | None = None, data: bytes | None = None, timeout: float | None = None
    ) -> bool:
        """One frame; waits at most ``slow_reader_timeout_s`` for a client that does not read,
        then marks the connection stalled (later sends are dropped; the connection ends it).
        ``timeout``: a bound of its own that stalls nothing (the last words on a closing
        connection). True when the frame was handed to the connection."""
        if not self.sendable():
            return False
        limit = self.timeout_s if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                async with self._lock:
                    if text is not None:
                        await self.ws.send_text(text)
                    else:
                        await self.ws.send_bytes(data or b"")
            return True
        except TimeoutError:
            if timeout is None:
                self._stall(limit)
        except (WebSocketDisconnect, RuntimeError, OSError):
            log.debug("send after disconnect dropped")
        return False

    async def close(self, code: int, reason: str, *, timeout: float) -> None:
        """The close frame, waiting at most ``timeout`` on a stalled socket."""
        if self.ws.application_state != WebSocketState.CONNECTED:
            return
        try:
            async with asyncio.timeout(timeout):
                await self.ws.close(code, reason)
        except (TimeoutError, WebSocketDisconnect, RuntimeError, OSError):
            log.debug("close not sent")

    async def deny(self, response: Response, code: int) -> None:
        """Refuse the upgrade: ``response`` where the server can send one, else close ``code``."""
        if "websocket.http.response" in self.ws.scope.get("extensions", {}):
            await self.ws.send_denial_response(response)
        else:
            await self.ws.close(code)

    def _stall(self, limit: float) -> None:
        log.info("client stopped reading for %.1f s; cutting its stream", limit)
        self.stalled = True
        self._on_stall()
