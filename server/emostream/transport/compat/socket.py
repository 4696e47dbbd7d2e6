"""The compatible WebSockets on the native connection: ElevenLabs' ``stream-input`` and
``multi-stream-input``, Cartesia's ``/tts/websocket``.

:class:`CompatConnection` is a :class:`~emostream.transport.websocket.connection.StreamConnection`
whose client messages go through a :class:`~emostream.transport.compat.session.CompatSession`
on their way in (the native messages it makes are checked, limited and routed as a native
client's are: the same size limits, characters per minute, streams per key, admission, drain,
idle and slow-reader timeouts) and whose events and audio frames go through it on their way
out, as the other API's JSON messages. The Host, Origin and API-key rules are the edge's
(:class:`~emostream.transport.edge.guard.Guard`), before the upgrade.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketState

from emostream.stream.service import SpeechService
from emostream.transport.compat import elevenlabs
from emostream.transport.compat.cartesia import CartesiaSession
from emostream.transport.compat.elevenlabs import ElevenLabsSession
from emostream.transport.compat.formats import FormatRefused, elevenlabs_format
from emostream.transport.compat.session import Close, CompatSession, Turn
from emostream.transport.drain import Drain
from emostream.transport.edge.limits import KeyLimits
from emostream.transport.websocket.connection import StreamConnection
from emostream.transport.websocket.sender import BoundedSender

log = logging.getLogger(__name__)
_LAST_WORDS_S = 1.0
CLOSED = "closed"  # the session closed the socket (its _stop reason)


class CompatSender(BoundedSender):
    """Audio frames leave as the session's JSON messages (none while an encoder fills)."""

    def __init__(self, ws: WebSocket, session: CompatSession, *, timeout_s: float,
                 on_stall: Callable[[], None]) -> None:  # fmt: skip
        super().__init__(ws, timeout_s=timeout_s, on_stall=on_stall)
        self.session = session

    async def send_frame(self, data: bytes | str) -> bool:
        if isinstance(data, str):
            return await super().send_frame(data)
        sent = True
        for body in self.session.frame(data):
            sent = await super().send_frame(json.dumps(body, ensure_ascii=False)) and sent
        return sent


class CompatConnection(StreamConnection):
    """One compatible WebSocket (module docs)."""

    def __init__(
        self,
        ws: WebSocket,
        service: SpeechService,
        session: CompatSession,
        *,
        limits: KeyLimits | None = None,
        drain: Drain | None = None,
    ) -> None:
        super().__init__(ws, service, limits=limits, drain=drain)
        self.session = session
        self.sender = CompatSender(
            ws, session, timeout_s=service.settings.slow_reader_timeout_s,
            on_stall=lambda: self._request_stop("slow_reader"),
        )  # fmt: skip

    async def run(self) -> None:
        await super().run()
        if self.ws.application_state == WebSocketState.CONNECTED:
            await self.sender.close(1000, "", timeout=_LAST_WORDS_S)

    async def _handle(self, message: dict[str, Any]) -> None:
        try:
            text = message.get("text")
            turn = self.session.receive(text) if text is not None else self.session.binary()
            for body in turn.reply:
                await self._send_own(body)
            for msg in turn.forward:
                context = msg.get("context_id")
                if msg["type"] != "cancel" and not self.session.live(str(context)):
                    continue  # its start was refused just now: the rest is moot
                self.session.answering = context
                for item in await self.intake.receive_text(json.dumps(msg)):
                    await self._apply(item.action, item.context)
            self.session.answering = None
            if turn.close is not None:
                await self._close(turn.close)
        except Exception:  # a bug for one message must not take the connection down
            log.exception("compatible message handling failed")
            self.session.answering = None
            await self._carry_out(self.session.on_error(
                None, "internal", "the server failed on this message", refused=False))  # fmt: skip

    async def _send_json(self, body: dict[str, Any], *, timeout: float | None = None) -> None:
        """A native event, sent as the session makes it (possibly nothing)."""
        await self._carry_out(self.session.event(body), timeout=timeout)

    async def _carry_out(self, turn: Turn, *, timeout: float | None = None) -> None:
        for body in turn.reply:
            await self._send_own(body, timeout=timeout)
        if turn.close is not None:
            await self._close(turn.close)

    async def _send_own(self, body: dict[str, Any], *, timeout: float | None = None) -> None:
        await self.sender.send_json(body, timeout=timeout)

    async def _close(self, close: Close) -> None:
        await self.sender.close(close.code, close.reason, timeout=_LAST_WORDS_S)
        self._request_stop(CLOSED)


async def _serve(ws: WebSocket, make: Callable[[SpeechService], CompatSession]) -> None:
    state = ws.app.state
    service: SpeechService = state.service
    session = make(service)
    conn = CompatConnection(ws, service, session, limits=getattr(state, "limits", None),
                            drain=getattr(state, "drain", None))  # fmt: skip
    await conn.run()


def _voice(ws: WebSocket) -> str:
    voice = str(ws.path_params.get("voice_id", ""))
    aliases: dict[str, str] = getattr(ws.app.state, "voice_aliases", {}) or {}
    return aliases.get(voice, voice)


async def _elevenlabs(ws: WebSocket, *, multi: bool) -> None:
    try:
        fmt = elevenlabs_format(ws.query_params.get("output_format"))
    except FormatRefused as exc:
        body = {"detail": {"status": "invalid_output_format", "message": str(exc)}}
        await BoundedSender(ws, timeout_s=1.0, on_stall=lambda: None).deny(
            JSONResponse(body, status_code=400), elevenlabs.POLICY
        )
        return
    voice = _voice(ws)
    await _serve(ws, lambda svc: ElevenLabsSession(
        voice, fmt, multi=multi, max_message_bytes=svc.settings.max_message_bytes))  # fmt: skip


async def elevenlabs_stream_input(ws: WebSocket) -> None:
    """``/v1/text-to-speech/{voice_id}/stream-input``."""
    await _elevenlabs(ws, multi=False)


async def elevenlabs_multi_stream_input(ws: WebSocket) -> None:
    """``/v1/text-to-speech/{voice_id}/multi-stream-input``."""
    await _elevenlabs(ws, multi=True)


async def cartesia_websocket(ws: WebSocket) -> None:
    """``/tts/websocket`` (``cartesia_version`` is taken and not checked)."""
    aliases: dict[str, str] = getattr(ws.app.state, "voice_aliases", {}) or {}
    await _serve(ws, lambda svc: CartesiaSession(
        aliases=aliases, max_message_bytes=svc.settings.max_message_bytes))  # fmt: skip

