"""A publisher's connection and its rooms: which rooms it may name, a tap per published
utterance, and its line queue's status shown in the rooms its lines go to.

The WebSocket connection (:mod:`emostream.transport.websocket.connection`) holds one
:class:`Publishing`: the protocol asks :meth:`Publishing.access` whether a ``start`` or
``line`` may name a room (the caller's own, created with ``POST /v1/rooms``), each utterance
published gets its :class:`~emostream.transport.rooms.hub.RoomTap` from :meth:`Publishing.tap`,
and the connection's ``queue`` events (the line queue's depth) go through :meth:`Publishing.send`
to the rooms its lines named as well, for a page that shows the queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from emostream.transport.rooms.hub import RoomTap
from emostream.transport.rooms.registry import RoomHub
from emostream.transport.websocket.protocol import EnqueueLine
from emostream.transport.websocket.start_request import StartRequest

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Publishing:
    def __init__(
        self, hub: RoomHub | None, principal: str | None, send: Send, *, codec_delay_ms: float
    ) -> None:
        self.hub = hub if hub is not None else RoomHub()
        self.owner = principal or ""
        self._send = send
        self.codec_delay_ms = codec_delay_ms
        self._line_rooms: set[str] = set()  # rooms named by the lines queued so far

    def access(self, name: str) -> str | None:
        """Why this connection may not publish into ``name`` (None: it may)."""
        return self.hub.publish_refusal(name, self.owner)

    def tap(self, request: StartRequest) -> RoomTap | None:
        if request.room is None:
            return None
        return self.hub.tap(request.room, request.stream_id, codec_delay_ms=self.codec_delay_ms)

    def line(self, action: EnqueueLine) -> None:
        room = action.fields.get("room")
        if isinstance(room, str):
            self._line_rooms.add(room)

    async def send(self, body: dict[str, Any]) -> None:
        """A line-queue event to the connection, and a ``queue`` one to the lines' rooms."""
        if body.get("type") == "queue":
            for name in list(self._line_rooms):
                room = self.hub.rooms.get(name)
                if room is None or room.owner != self.owner:
                    self._line_rooms.discard(name)
                else:
                    room.notice(body)
        await self._send(body)
