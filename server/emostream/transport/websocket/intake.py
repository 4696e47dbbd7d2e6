"""What a client's text frame goes through on its way to the context router (sans the socket).

In order: parsing (:func:`~emostream.transport.messages.load_message`), the frame's size
(``max_message_bytes``; ``max_start_bytes`` for a ``start`` with ``reference_audio``), the
drain (no new ``start`` or ``line``), the key's characters per minute (a ``text`` to an open
utterance, a ``line``: :mod:`emostream.transport.edge.limits`), and an inline reference clip
(``start.reference_audio``), embedded and put in the message as a transient voice. What passes
goes to :class:`~emostream.transport.websocket.contexts.ContextRouter`. An ``error`` refusing
a ``line`` carries the line's ``id`` (when the client gave a well-formed one).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from emostream.stream.service import SpeechService
from emostream.transport.drain import SHUTTING_DOWN, Drain
from emostream.transport.edge.limits import KeyLimits, LimitExceeded
from emostream.transport.messages import ProtocolError, frame_too_large, load_message
from emostream.transport.websocket.contexts import ContextRouter, Routed
from emostream.transport.websocket.protocol import MAX_LINE_ID_CHARS, SendError
from emostream.voices.cloning.clip import ClipError


@dataclass(frozen=True)
class LineRefused(SendError):
    """An ``error`` refusing a ``line``: it carries the line's ``id``."""

    id: str = ""

    @property
    def event(self) -> dict[str, Any]:
        return {**super().event, "id": self.id}


def refused_with_id(routed: list[Routed], msg: dict[str, Any]) -> list[Routed]:
    """Errors answering a ``line`` message carry its ``id`` (when it is a well-formed one)."""
    line_id = msg.get("id")
    if msg.get("type") != "line" or not isinstance(line_id, str):
        return routed
    if not line_id or len(line_id) > MAX_LINE_ID_CHARS:
        return routed
    return [
        Routed(r.context, LineRefused(r.action.code, r.action.message, line_id))
        if isinstance(r.action, SendError)
        else r
        for r in routed
    ]


class TextIntake:
    """One connection's text frames, checked and routed (module docs)."""

    def __init__(
        self,
        service: SpeechService,
        router: ContextRouter,
        *,
        principal: str | None,
        limits: KeyLimits,
        drain: Drain,
    ) -> None:
        self.service = service
        self.router = router
        self.principal = principal
        self.limits = limits
        self.drain = drain
        self.refs: set[str] = set()  # inline reference voices this connection sent

    async def receive_text(self, raw: str) -> list[Routed]:
        try:
            msg = load_message(raw)
        except ProtocolError as exc:
            return [Routed(None, SendError(exc.code, exc.message))]
        return refused_with_id(await self._route(raw, msg), msg)

    async def _route(self, raw: str, msg: dict[str, Any]) -> list[Routed]:
        settings = self.service.settings
        oversized = frame_too_large(
            len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass")), msg,
            max_message_bytes=settings.max_message_bytes, max_start_bytes=settings.max_start_bytes,
        )  # fmt: skip
        if oversized is not None:
            return [Routed(None, SendError(oversized.code, oversized.message))]
        kind = msg.get("type")
        if kind in ("start", "line") and self.drain.draining:
            return [Routed(None, SendError(SHUTTING_DOWN, "the server is shutting down; no new "
                                           "utterances"))]  # fmt: skip
        if (kind == "text" and self.router.state_of(msg) == "open" or kind == "line") and (
            isinstance(msg.get("text"), str)
        ):
            try:
                self.limits.charge_chars(self.principal, len(msg["text"]))
            except LimitExceeded as exc:
                return [Routed(None, SendError(exc.code, exc.message))]
        if (
            msg.get("type") == "start"
            and msg.get("reference_audio") is not None
            and self.service.can_clone
            and self.router.may_start(msg)
        ):
            error = await self._inline_reference(msg)
            if error is not None:
                context = msg.get("context_id") if self.router.mode != "v1" else None
                return [Routed(context if isinstance(context, str) else None, error)]
        return self.router.receive_message(msg)

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
        self.refs.add(voice.info.id)
        return None
