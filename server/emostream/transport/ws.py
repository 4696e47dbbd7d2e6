"""``/v1/stream``: the thin asyncio layer around :class:`SessionProtocol`.

One receive loop per connection feeds the protocol and carries out its actions; one
task per utterance pulls segments from a queue, streams audio and sends ``done``.
Sends are serialised with a lock (two tasks write to the socket).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from emostream.engine.service import Busy, SpeechService
from emostream.engine.streamer import Packet, UtteranceRequest
from emostream.transport.http import clone_unavailable
from emostream.transport.protocol import (
    BeginUtterance,
    CancelUtterance,
    EndOfInput,
    QueueSegments,
    SendError,
    SessionProtocol,
    StartRequest,
)
from emostream.voices.clip import ClipError

log = logging.getLogger(__name__)
_END = object()


async def _queue_iter(queue: asyncio.Queue[object]) -> AsyncIterator[str]:
    while True:
        item = await queue.get()
        if item is _END:
            return
        assert isinstance(item, str)
        yield item


class StreamConnection:
    def __init__(self, ws: WebSocket, service: SpeechService) -> None:
        self.ws = ws
        self.service = service
        self.protocol = SessionProtocol(
            lookup_voice=service.voice_info,
            default_voice=service.settings.default_voice,
            max_text_chars=service.settings.max_text_chars,
            new_stream_id=service.new_stream_id,
            unavailable=lambda voice_id: clone_unavailable(ws.app, voice_id),
        )
        self._send_lock = asyncio.Lock()
        self._queue: asyncio.Queue[object] | None = None
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        await self.ws.accept()
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message.get("text") is not None:
                    raw = await self._inline_reference(message["text"])
                    actions = (
                        [raw] if isinstance(raw, SendError) else self.protocol.receive_text(raw)
                    )
                else:
                    actions = self.protocol.receive_bytes(message.get("bytes") or b"")
                for action in actions:
                    await self._apply(action)
        except WebSocketDisconnect:
            pass
        finally:
            await self._stop_task()

    async def _inline_reference(self, raw: str) -> str | SendError:
        """``start`` with ``reference_audio`` (base64 clip): embed it and speak as that voice.

        The clip becomes a transient voice whose id replaces ``voice``; the protocol core then
        sees a plain ``start``. Voices that cannot clone keep the field, and the protocol
        refuses it as the unsupported ``speaker`` control."""
        if '"reference_audio"' not in raw or not self.service.can_clone:
            return raw
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        if not isinstance(msg, dict) or msg.get("type") != "start":
            return raw
        ref = msg.pop("reference_audio", None)
        if ref is None:
            return raw
        if not isinstance(ref, str):
            return SendError("bad_value", "'reference_audio' must be a base64 string")
        try:
            data = base64.b64decode(ref, validate=True)
            voice = await self.service.reference_voice(data)
        except binascii.Error:
            return SendError("bad_value", "'reference_audio' is not valid base64")
        except ClipError as exc:
            return SendError(exc.code, f"reference_audio: {exc.message}")
        msg["voice"] = voice.info.id
        return json.dumps(msg)

    async def _apply(self, action: object) -> None:
        if isinstance(action, SendError):
            self.service.metrics.errors.labels(action.code).inc()
            await self._send_json(action.event)
        elif isinstance(action, BeginUtterance):
            await self._begin(action)
        elif isinstance(action, QueueSegments):
            if self._queue is not None:
                for text in action.texts:
                    self._queue.put_nowait(text)
        elif isinstance(action, EndOfInput):
            if self._queue is not None:
                self._queue.put_nowait(_END)
        elif isinstance(action, CancelUtterance):
            await self._stop_task()
            # The task's own finally sends done(cancelled=True).

    async def _begin(self, action: BeginUtterance) -> None:
        req = action.request
        voice = self.service.voice(req.voice.id)
        if voice is None or self.service.active >= self.service.settings.max_streams:
            code, msg = (
                ("unknown_voice", f"voice {req.voice.id!r} is gone")
                if voice is None
                else ("busy", "server at its stream limit; retry shortly")
            )
            self.protocol.utterance_finished()
            self.service.metrics.errors.labels(code).inc()
            await self._send_json({"type": "error", "code": code, "message": msg})
            return
        await self._send_json(action.started_event)
        self._queue = asyncio.Queue()
        request = UtteranceRequest(
            voice=voice,
            controls=req.controls,
            fmt=req.fmt,
            timestamps=req.timestamps,
            stream_id=req.stream_id,
        )
        self._task = asyncio.create_task(self._speak(request, req, self._queue))

    async def _speak(
        self, request: UtteranceRequest, req: StartRequest, queue: asyncio.Queue[object]
    ) -> None:
        cancelled = True
        stats = None
        try:
            async with self.service.utterance(request, _queue_iter(queue), transport="ws") as (
                out,
                stats,
            ):
                async for item in out:
                    if isinstance(item, Packet):
                        await self._send_bytes(item.data)
                    else:
                        await self._send_json(item.body)
                cancelled = False
        except Busy as exc:
            await self._send_json({"type": "error", "code": "busy", "message": str(exc)})
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # a model failure must not take the connection down
            log.exception("utterance %s failed", req.stream_id)
            self.service.metrics.errors.labels("internal").inc()
            await self._send_json(
                {"type": "error", "code": "internal", "message": f"synthesis failed: {exc}"}
            )
        finally:
            if stats is not None:
                await self._send_json(stats.as_done(req.fmt.sample_rate, cancelled=cancelled))
            if self.protocol.request is req:
                self.protocol.utterance_finished()
            self._task = None
            self._queue = None

    async def _stop_task(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _send_json(self, body: dict[str, Any]) -> None:
        await self._send(text=json.dumps(body, ensure_ascii=False))

    async def _send_bytes(self, data: bytes) -> None:
        await self._send(data=data)

    async def _send(self, *, text: str | None = None, data: bytes | None = None) -> None:
        if (
            self.ws.client_state != WebSocketState.CONNECTED
            or self.ws.application_state != WebSocketState.CONNECTED
        ):
            return
        async with self._send_lock:
            try:
                if text is not None:
                    await self.ws.send_text(text)
                else:
                    await self.ws.send_bytes(data or b"")
            except (WebSocketDisconnect, RuntimeError, OSError):
                log.debug("send after disconnect dropped")


async def stream_endpoint(ws: WebSocket) -> None:
    service: SpeechService = ws.app.state.service
    await StreamConnection(ws, service).run()
