"""Cartesia's HTTP routes and error shape.

``POST /tts/bytes``: the audio in ``output_format`` (``raw`` PCM, ``wav`` or ``mp3``), streamed
as it is made. ``POST /tts/sse``: server-sent events, ``data: {"type": "chunk", "data":
base64, ...}``, ``{"type": "timestamps", "word_timestamps": ...}`` with ``add_timestamps``, then
``{"type": "done"}`` (raw PCM only). The body is the WebSocket's generation request without
``continue`` (:mod:`emostream.transport.compat.cartesia`). Errors are Cartesia's object
(:func:`~emostream.transport.compat.cartesia.error_body`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.transport.compat.alignment import cartesia_words
from emostream.transport.compat.cartesia import controls, error_body, voice_id
from emostream.transport.compat.formats import Container, FormatRefused, cartesia_format
from emostream.transport.compat.speech import (
    RawFraming,
    Refused,
    SpeechPlan,
    read_json,
    serve,
)
from emostream.transport.messages import ProtocolError, load_message


def error(status: int, code: str, message: str) -> JSONResponse:
    """Cartesia's error body."""
    return JSONResponse(error_body(code, message, status), status_code=status)


class SseFraming:
    media_type = "text/event-stream"

    def __init__(self, context_id: str | None, *, timestamps: bool) -> None:
        self.context_id = context_id
        self.timestamps = timestamps

    def _event(self, body: dict[str, Any]) -> bytes:
        if self.context_id is not None:
            body["context_id"] = self.context_id
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    def chunk(self, data: bytes) -> bytes:
        return self._event({"type": "chunk", "data": base64.b64encode(data).decode("ascii"),
                            "done": False, "status_code": 206, "step_time": 0.0})  # fmt: skip

    def words(self, words: list[dict[str, Any]]) -> bytes:
        if not self.timestamps or not words:
            return b""
        return self._event({"type": "timestamps", "done": False, "status_code": 206,
                            "word_timestamps": cartesia_words(words)})  # fmt: skip

    def end(self) -> bytes:
        return self._event({"type": "done", "done": True, "status_code": 200})


def _plan(body: dict[str, Any], request: Request, *, containers: tuple[Container, ...],
          words: bool) -> SpeechPlan:  # fmt: skip
    try:
        transcript = body.get("transcript")
        if not isinstance(transcript, str) or not transcript.strip():
            raise ProtocolError("empty_text", "'transcript' must be a non-empty string")
        voice = voice_id(body.get("voice"))
        fields, warnings = controls(body)
        fmt = cartesia_format(body.get("output_format"), containers=containers)
    except ProtocolError as exc:
        raise Refused(400, exc.code, exc.message) from None
    except FormatRefused as exc:
        raise Refused(400, "bad_format", str(exc)) from None
    voice = request.app.state.voice_aliases.get(voice, voice)
    return SpeechPlan(voice, transcript, fields, fmt, words=words, warnings=warnings)


async def _body(request: Request) -> dict[str, Any]:
    raw = await read_json(request, request.app.state.service.settings.max_body_bytes)
    try:
        return load_message(raw)
    except ProtocolError as exc:
        raise Refused(400, exc.code, exc.message) from None


def _refused(request: Request, exc: Refused) -> JSONResponse:
    request.app.state.service.metrics.errors.labels(exc.code).inc()
    return error(exc.status, exc.code, exc.message)


async def tts_bytes(request: Request) -> Response:
    """``POST /tts/bytes``."""
    try:
        plan = _plan(await _body(request), request, containers=("raw", "wav", "mp3"), words=False)
    except Refused as exc:
        return _refused(request, exc)
    return await serve(request, plan, RawFraming(plan.fmt.media_type), error)


async def tts_sse(request: Request) -> Response:
    """``POST /tts/sse``."""
    try:
        body = await _body(request)
        timestamps = body.get("add_timestamps") is True
        plan = _plan(body, request, containers=("raw",), words=timestamps)
        context = body.get("context_id")
        if context is not None and not isinstance(context, str):
            raise Refused(400, "bad_value", "'context_id' must be a string")
    except Refused as exc:
        return _refused(request, exc)
    response = await serve(request, plan, SseFraming(context, timestamps=timestamps), error)
    response.headers["Cache-Control"] = "no-cache"
    return response


def routes() -> list[Route]:
    return [
        Route("/tts/bytes", tts_bytes, methods=["POST"]),
        Route("/tts/sse", tts_sse, methods=["POST"]),
    ]
