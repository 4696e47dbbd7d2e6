"""``/v1/stream``: the thin asyncio layer around :class:`SessionProtocol`.

One receive loop per connection feeds the protocol and carries out its actions; one
task per utterance pulls segments from a queue, streams audio and sends ``done``.
Sends are serialised with a lock (two tasks write to the socket).

An utterance is admitted (a stream slot taken) before ``started`` is sent, and every
utterance that got ``started`` gets exactly one ``done``, however early it is cancelled.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from emostream.engine.service import Busy, Slot, SpeechService
from emostream.engine.streamer import Packet, UtteranceRequest, UtteranceStats
from emostream.transport.http import clone_unavailable
from emostream.transport.protocol import (
    Action,
    BeginUtterance,
    CancelUtterance,
    EndOfInput,
    ProtocolError,
    QueueSegments,
    SendError,
    SessionProtocol,
    StartRequest,
    load_message,
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


@dataclass(eq=False)
class _Utterance:
    """One started utterance: its slot, its segment queue and its task."""

    req: StartRequest
    slot: Slot
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    done_sent: bool = False


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
        self._utt: _Utterance | None = None

    async def run(self) -> None:
        await self.ws.accept()
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                try:
                    if message.get("text") is not None:
                        actions = await self._receive_text(message["text"])
                    else:
                        actions = self.protocol.receive_bytes(message.get("bytes") or b"")
                    for action in actions:
                        await self._apply(action)
                except WebSocketDisconnect:
                    raise
                except Exception:  # a bug for one message must not take the connection down
                    log.exception("message handling failed")
                    await self._apply(SendError("internal", "the server failed on this message"))
        except WebSocketDisconnect:
            pass
        finally:
            await self._stop_task()

    async def _receive_text(self, raw: str) -> list[Action]:
        try:
            msg = load_message(raw)
        except ProtocolError as exc:
            return [SendError(exc.code, exc.message)]
        if (
            msg.get("type") == "start"
            and msg.get("reference_audio") is not None
            and self.service.can_clone
            and self.protocol.state == "idle"
        ):
            error = await self._inline_reference(msg)
            if error is not None:
                return [error]
        return self.protocol.receive_message(msg)

    async def _inline_reference(self, msg: dict[str, Any]) -> SendError | None:
        """``start`` with ``reference_audio`` (base64 clip): embed it and speak as that voice.

        The clip becomes a transient voice whose id replaces ``voice`` in ``msg``; the protocol
        core then sees a plain ``start``. Voices that cannot clone keep the field, and the
        protocol refuses it as the unsupported ``speaker`` control."""
        ref = msg.pop("reference_audio")
        if not isinstance(ref, str) or not ref:
            return SendError("bad_value", "'reference_audio' must be a base64 string")
        try:
            # ValueError: not base64 (binascii.Error) or not ASCII at all.
            data = base64.b64decode(ref, validate=True)
        except ValueError:
            return SendError("bad_value", "'reference_audio' is not valid base64")
        try:
            voice = await self.service.reference_voice(data)
        except ClipError as exc:
            return SendError(exc.code, f"reference_audio: {exc.message}")
        msg["voice"] = voice.info.id
        return None

    async def _apply(self, action: object) -> None:
        if isinstance(action, SendError):
            self.service.metrics.errors.labels(action.code).inc()
            await self._send_json(action.event)
        elif isinstance(action, BeginUtterance):
            await self._begin(action)
        elif isinstance(action, QueueSegments):
            if self._utt is not None:
                for text in action.texts:
                    self._utt.queue.put_nowait(text)
        elif isinstance(action, EndOfInput):
            if self._utt is not None:
                self._utt.queue.put_nowait(_END)
        elif isinstance(action, CancelUtterance):
            await self._stop_task()  # done(cancelled=True) follows, from the task or from here

    async def _begin(self, action: BeginUtterance) -> None:
        req = action.request
        voice = self.service.voice(req.voice.id)
        if voice is None:
            self.protocol.utterance_finished()
            await self._apply(SendError("unknown_voice", f"voice {req.voice.id!r} is gone"))
            return
        try:
            slot = self.service.admit()  # before started: a refused start gets only the error
        except Busy as exc:
            self.protocol.utterance_finished()
            await self._send_json(
                {"type": "error", "code": "busy", "message": f"{exc}; retry shortly"}
            )
            return
        utt = _Utterance(req, slot)
        self._utt = utt
        await self._send_json(action.started_event)
        request = UtteranceRequest(
            voice=voice,
            controls=req.controls,
            fmt=req.fmt,
            timestamps=req.timestamps,
            stream_id=req.stream_id,
        )
        utt.task = asyncio.create_task(self._speak(utt, request))

    async def _speak(self, utt: _Utterance, request: UtteranceRequest) -> None:
        cancelled = True
        stats = None
        try:
            async with self.service.utterance(
                request, _queue_iter(utt.queue), transport="ws", slot=utt.slot
            ) as (out, stats):
                async for item in out:
                    if isinstance(item, Packet):
                        await self._send_bytes(item.data)
                    else:
                        await self._send_json(item.body)
                cancelled = False
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # a model failure must not take the connection down
            log.exception("utterance %s failed", utt.req.stream_id)
            self.service.metrics.errors.labels("internal").inc()
            await self._send_json(
                {"type": "error", "code": "internal", "message": f"synthesis failed: {exc}"}
            )
        finally:
            await self._finish(utt, stats, cancelled=cancelled)

    async def _finish(
        self, utt: _Utterance, stats: UtteranceStats | None, *, cancelled: bool
    ) -> None:
        """Release the utterance and send its one ``done`` (a second call does nothing)."""
        if utt.done_sent:
            return
        utt.done_sent = True
        utt.slot.release()
        if self._utt is utt:
            self._utt = None
        if self.protocol.request is utt.req:
            self.protocol.utterance_finished()
        done = (stats or UtteranceStats()).as_done(utt.req.fmt.sample_rate, cancelled=cancelled)
        await self._send_json(done)

    async def _stop_task(self) -> None:
        """Stop the current utterance (cancel, disconnect) and see its ``done`` sent."""
        utt = self._utt
        if utt is None:
            return
        task = utt.task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        # A task cancelled before its first step never ran its finally.
        await self._finish(utt, None, cancelled=True)

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
