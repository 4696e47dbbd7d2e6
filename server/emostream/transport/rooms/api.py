"""Rooms over HTTP and WebSocket: the owner's API, the listeners' socket, the ``/live`` page.

* ``POST /v1/rooms`` (body optional: ``{"name": "main", "rotate": false}``): the caller's room,
  created if new (201; 200 when it was there already: the same token unless ``rotate``), with
  its ``token`` and ``listen_url`` (the ``/live`` page of this server for it).
  ``GET /v1/rooms`` the caller's rooms, ``GET /v1/rooms/{name}`` one, ``DELETE`` deletes it
  (its listeners get ``room_closed``). Behind the API keys like every ``/v1`` route.
* ``/v1/rooms/{name}/listen?token=…`` (WebSocket): a listener. The room's token is its only
  credential (the guard lets this path through without an API key). It gets the room's events
  (``room``, then per utterance ``started`` … ``done``) and its binary frames, from an outbox
  of its own (:class:`~emostream.transport.rooms.hub.Listener`) written by one task: a slow
  socket fills its own outbox only, and is dropped when that overflows or one send waits
  ``slow_reader_timeout_s`` (``slow_listener``). A refusal (``room_refused``,
  ``too_many_listeners``) is an ``error`` event, then close 1008.
* ``GET /live``: the OBS browser-source page (``client_js/live.html``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from emostream.stream.service import SpeechService
from emostream.transport.edge.guard import principal_of
from emostream.transport.errors import error
from emostream.transport.http import read_body
from emostream.transport.rooms.hub import Listener, Room, RoomError
from emostream.transport.rooms.registry import RoomHub
from emostream.transport.websocket.sender import BoundedSender

log = logging.getLogger(__name__)
MAX_BODY = 4096
POLICY_VIOLATION = 1008
CLOSE_CODES = {"room_closed": 1000, "shutting_down": 1001}  # else 1008
_LAST_WORDS_S = 1.0


def _owner(request: Request) -> str:
    return principal_of(request) or ""


def _hub(request: Request | WebSocket) -> RoomHub:
    hub: RoomHub = request.app.state.rooms
    return hub


def _view(request: Request, room: Room) -> dict[str, Any]:
    view = room.view()
    view["listen_url"] = str(request.base_url).rstrip("/") + view["listen_path"]
    return view


def _refused(exc: RoomError) -> JSONResponse:
    return error(exc.status, exc.code, exc.message)


async def open_room(request: Request) -> Response:
    """``POST /v1/rooms``."""
    try:
        raw = await read_body(request, MAX_BODY)
    except ClientDisconnect:
        return error(408, "request_timeout", "the body was not complete")
    if raw is None:
        return error(413, "too_large", f"the body is over {MAX_BODY} bytes")
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return error(400, "bad_json", "the body must be JSON (or empty)")
    if not isinstance(body, dict):
        return error(400, "bad_message", "the body must be a JSON object")
    name, rotate = body.get("name"), body.get("rotate", False)
    if name is not None and not isinstance(name, str):
        return error(400, "bad_value", "'name' must be a string", param="name")
    if not isinstance(rotate, bool):
        return error(400, "bad_value", "'rotate' must be true or false", param="rotate")
    try:
        room, created = _hub(request).open(_owner(request), name, rotate=rotate)
    except RoomError as exc:
        return _refused(exc)
    headers = {"Cache-Control": "no-store"}
    return JSONResponse(_view(request, room), status_code=201 if created else 200, headers=headers)


async def list_rooms(request: Request) -> Response:
    """``GET /v1/rooms``: the caller's rooms."""
    owner = _owner(request)
    rooms = [_view(request, r) for r in _hub(request).rooms.values() if r.owner == owner]
    return JSONResponse({"rooms": rooms}, headers={"Cache-Control": "no-store"})


async def room_detail(request: Request) -> Response:
    """``GET`` / ``DELETE /v1/rooms/{name}``."""
    hub, name, owner = _hub(request), request.path_params["name"], _owner(request)
    try:
        if request.method == "DELETE":
            hub.delete(name, owner)
            return Response(status_code=204)
        return JSONResponse(_view(request, hub.owned(name, owner)),
                            headers={"Cache-Control": "no-store"})  # fmt: skip
    except RoomError as exc:
        return _refused(exc)


async def listen(ws: WebSocket) -> None:
    """``/v1/rooms/{name}/listen``: one listener (module docs)."""
    service: SpeechService = ws.app.state.service
    metrics = service.metrics
    offered = list(ws.scope.get("subprotocols") or ())
    await ws.accept(subprotocol=offered[0] if offered else None)
    sender = BoundedSender(ws, timeout_s=service.settings.slow_reader_timeout_s,
                           on_stall=lambda: None)  # fmt: skip
    wake = asyncio.Event()
    try:
        room, listener = _hub(ws).listen(
            ws.path_params["name"], ws.query_params.get("token", ""), wake.set
        )
    except RoomError as exc:
        metrics.errors.labels(exc.code).inc()
        await sender.send_json({"type": "error", "code": exc.code, "message": exc.message},
                               timeout=_LAST_WORDS_S)  # fmt: skip
        await sender.close(POLICY_VIOLATION, exc.code, timeout=_LAST_WORDS_S)
        return
    metrics.room_listeners.inc()
    reader = asyncio.create_task(_read_until_closed(ws))
    try:
        await _pump(listener, sender, wake, reader)
        if listener.closing is None and sender.stalled:  # one send waited too long
            listener.close("slow_listener", "this listener stopped reading; it was dropped")
            room.counts.drop("slow_listener")
        if listener.closing is not None:
            code, message = listener.closing
            metrics.errors.labels(code).inc()
            sender.stalled = False  # the last words get their own bounded wait
            await sender.send_json({"type": "error", "code": code, "message": message},
                                   timeout=_LAST_WORDS_S)  # fmt: skip
            close = CLOSE_CODES.get(code, POLICY_VIOLATION)
            await sender.close(close, code, timeout=_LAST_WORDS_S)
    finally:
        reader.cancel()
        room.leave(listener)
        metrics.room_listeners.dec()


async def _pump(
    listener: Listener, sender: BoundedSender, wake: asyncio.Event, reader: asyncio.Task[None]
) -> None:
    """Write the listener's outbox to its socket until it must close or the client went."""
    while listener.closing is None and not reader.done():
        msg = listener.take()
        if msg is None:
            wake.clear()
            if listener.items or listener.closing is not None:
                continue
            waiter = asyncio.create_task(wake.wait())
            try:
                await asyncio.wait((reader, waiter), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            continue
        sent = await (sender.send(text=msg) if isinstance(msg, str) else sender.send(data=msg))
        if not sent:
            return


async def _read_until_closed(ws: WebSocket) -> None:
    """A listener sends nothing the server reads; this notices its close."""
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
    except (WebSocketDisconnect, RuntimeError, OSError):
        return


def room_routes(client_dir: Path | None) -> list[BaseRoute]:
    routes: list[BaseRoute] = [
        Route("/v1/rooms", open_room, methods=["POST"]),
        Route("/v1/rooms", list_rooms, methods=["GET"]),
        Route("/v1/rooms/{name}", room_detail, methods=["GET", "DELETE"]),
        WebSocketRoute("/v1/rooms/{name}/listen", listen),
    ]
    page = client_dir / "live.html" if client_dir is not None else None
    if page is not None and page.is_file():

        async def live_page(request: Request) -> Response:
            return FileResponse(page, headers={"Cache-Control": "no-cache"})

        routes.append(Route("/live", live_page, methods=["GET"]))
    return routes
