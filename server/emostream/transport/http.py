"""HTTP API beside the WebSocket: speech (OpenAI's API: :mod:`emostream.transport.openai_api`),
voices, health, metrics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from emostream.codec.encoders import AudioEncoder, make_encoder
from emostream.codec.packetizer import OutputFormat
from emostream.stream.service import Busy, Slot, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest
from emostream.text.frontend import EspeakCrashed, OverrideRefused, TextFrontEnd
from emostream.text.pron.reader import PronunciationSetup
from emostream.transport.edge.guard import principal_of, voice_visible
from emostream.transport.edge.limits import KeyLimits, LimitExceeded, StreamPermit
from emostream.transport.errors import busy_response, error
from emostream.transport.messages import ProtocolError, resolve_pronunciation
from emostream.transport.openai_api import SSE_MEDIA_TYPE, Framing
from emostream.transport.pronunciation_api import owned_dictionary
from emostream.transport.speech_request import RequestError, SpeechBody, read_speech
from emostream.transport.voice_access import (
    CLONE_UNAVAILABLE,
    STORE_UNAVAILABLE,
    clone_unavailable,
    retry_after_s,
    store_unavailable_message,
)
from emostream.transport.voices_api import voice_view
from emostream.voices.base import UnsupportedControl, Voice, VoiceInfo, check_controls
from emostream.voices.cloning.registry import StoreUnavailable

log = logging.getLogger(__name__)

# The audio cap in force (max_utterance_audio_s, seconds): a body whose audio reaches it ends
# there (the status is sent before the audio is made; the WebSocket says audio_too_long).
AUDIO_LIMIT_HEADER = "X-EmoStream-Max-Audio-S"
# The kinds of pronunciation-dictionary entry not applied: the voice does not read them
SKIPPED_HEADER = "X-EmoStream-Pronunciation-Skipped"


async def _segments(texts: list[str]) -> AsyncIterator[str]:
    for text in texts:
        yield text


def _speech_error(exc: RequestError) -> JSONResponse:
    return error(exc.status, exc.code, exc.message, param=exc.param)


async def speech(request: Request) -> Response:
    """``POST /v1/audio/speech``: OpenAI's speech body (``model``, ``input``, ``voice``,
    ``response_format``, ``speed``, ``instructions``, ``stream_format``) plus EmoStream's
    controls; read by :func:`~emostream.transport.speech_request.read_speech` (two dialects,
    told apart by ``model``).

    Every field is checked and a stream slot is taken before the response starts: a bad or
    refused request is a 4xx/503 JSON error, never a 200 cut short."""
    service: SpeechService = request.app.state.service
    principal = principal_of(request)
    if request.app.state.drain.draining:
        return refused(
            request, 503, "shutting_down", "the server is shutting down; retry elsewhere"
        )
    try:
        raw = await read_body(request, service.settings.max_body_bytes)
    except ClientDisconnect:  # gone mid-body (or closed by the body deadline): nobody to answer
        return refused(request, 408, "request_timeout", "the body was not complete")
    if raw is None:
        return refused(
            request, 413, "too_large", f"the body is over {service.settings.max_body_bytes} bytes"
        )
    try:
        body = read_speech(
            raw,
            default_voice=service.settings.default_voice,
            aliases=request.app.state.voice_aliases,
            max_chars=service.settings.max_text_chars,
        )
        voice = _voice(request, service, body, principal)
        _check_controls(voice.info, body)
        setup, skipped = _pronunciation(request, body, principal, voice.info)
        try:
            texts = TextFrontEnd.split(body.text, pronunciation=setup)
        except OverrideRefused as exc:  # the whole text is here: refused, not half applied
            raise RequestError(400, exc.problem.code, exc.problem.message, "input") from None
        if not texts:
            raise RequestError(
                400, "empty_text",
                "'input' has no speakable text (voices here read English and Mandarin)", "input",
            )  # fmt: skip
        pre_skip = round(service.opus_delay_ms * body.sample_rate / 1000)
        encoder = make_encoder(body.fmt.name, sample_rate=body.sample_rate, opus_pre_skip=pre_skip)
    except RequestError as exc:
        return _speech_error(exc)
    limits: KeyLimits = request.app.state.limits
    try:
        limits.charge_chars(principal, len(body.text))
        permit = limits.open_stream(principal)
    except LimitExceeded as exc:
        response = refused(request, 429, exc.code, exc.message)
        response.headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
        return response
    try:
        slot = service.admit()
    except Busy as exc:
        permit.release()
        return busy_response(exc)
    fmt = OutputFormat(codec=body.fmt.codec, sample_rate=body.sample_rate)
    req = UtteranceRequest(
        voice=voice, controls=body.controls, fmt=fmt, stream_id=service.new_stream_id()
    )
    framing = Framing(sse=body.sse, input_chars=len(body.text))
    body_iter = _body(service, req, texts, encoder, framing, slot, cache=body.cache,
                      scope=principal or "")  # fmt: skip
    media = SSE_MEDIA_TYPE if body.sse else body.fmt.media_type
    speech = SpeechResponse(slot, permit, body_iter, media_type=media)
    speech.headers["X-EmoStream-Voice"] = voice.info.id
    if skipped:  # dictionary entries of kinds the voice does not read (docs/protocol.md)
        speech.headers[SKIPPED_HEADER] = ", ".join(skipped)
    if body.instructions is not None:  # how they were read (docs/openai.md)
        spoken = body.controls
        speech.headers["X-EmoStream-Emotion"] = f"{spoken.emotion}; intensity={spoken.intensity:g}"
    if body.sse:
        speech.headers["Cache-Control"] = "no-cache"
    if slot.degraded:  # admitted on a lighter path (README "Cluster": degradation)
        speech.headers["X-EmoStream-Degraded"] = slot.degraded
    if service.settings.max_utterance_audio_s > 0:
        speech.headers[AUDIO_LIMIT_HEADER] = f"{service.settings.max_utterance_audio_s:g}"
    return speech


def _voice(request: Request, service: SpeechService, body: SpeechBody, principal: str | None
           ) -> Voice:  # fmt: skip
    """The voice ``body`` names, if this caller may speak it here; else RequestError."""
    voice_id = body.voice_id
    visible = voice_visible(service.registry, principal, voice_id)
    voice = service.voice(voice_id) if visible else None
    if voice is not None:
        return voice
    reason = clone_unavailable(request.app, voice_id) if visible else None
    if reason:
        raise RequestError(409, "voice_unavailable", reason, "voice")
    asked = body.voice_asked[:100]
    known = [i.id for i in service.catalog.infos()]
    shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    names = ", ".join(request.app.state.voice_aliases)
    message = (f"unknown voice {asked!r}: use one of OpenAI's names ({names}) or a voice id of "
               f"this server ({len(known)}: {shown}; GET /v1/voices lists them)")  # fmt: skip
    raise RequestError(404, "unknown_voice", message, "voice").in_dialect(body.openai)


def _pronunciation(request: Request, body: SpeechBody, principal: str | None, info: VoiceInfo
                   ) -> tuple[PronunciationSetup, list[str]]:  # fmt: skip
    """The body's overrides and dictionaries for ``info``'s voice, and the kinds of dictionary
    entry it does not read (left out); an unknown dictionary is a RequestError."""
    store = request.app.state.registry
    try:
        setup = resolve_pronunciation(
            body.inline_pronunciation, body.dictionaries,
            lambda dictionary_id: owned_dictionary(store, principal, dictionary_id),
        )  # fmt: skip
    except ProtocolError as exc:
        raise RequestError(404 if not body.openai else 400, exc.code, exc.message,
                           exc.param) from None  # fmt: skip
    return setup.for_voice(info.id, info.pronunciation)


def _check_controls(info: VoiceInfo, body: SpeechBody) -> None:
    """UnsupportedControl as a RequestError naming the field that asked for it."""
    try:
        check_controls(info, body.controls)
    except UnsupportedControl as exc:
        param = exc.names[0]
        if param == "emotion":
            param = body.emotion_from or param  # a prompt or instructions may have set it
        raise RequestError(400, "unsupported_control", str(exc), param) from None


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it passes ``limit`` bytes (not read further)."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def store_unavailable(request: Request, exc: Exception) -> Response:
    """The app's handler for :class:`StoreUnavailable` from any route (registry down):
    ``503 store_unavailable`` with ``Retry-After``, counted; no traceback, nothing logged
    here (the registry logs each outage once)."""
    assert isinstance(exc, StoreUnavailable)
    response = refused(request, 503, STORE_UNAVAILABLE, store_unavailable_message(exc))
    response.headers["Retry-After"] = str(retry_after_s(exc))
    return response


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route: 404; a method a route does not take: 405):
    the JSON error of every other refusal under ``/v1/``, plain text elsewhere (the demo's
    static files)."""
    assert isinstance(exc, HTTPException)
    status, headers = exc.status_code, exc.headers
    if not request.url.path.startswith("/v1/"):
        if status in (204, 304):
            return Response(status_code=status, headers=headers)
        return PlainTextResponse(exc.detail, status_code=status, headers=headers)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    where = f"{request.method} {request.url.path[:100]}"
    response = error(status, code, f"{where}: {exc.detail}")
    response.headers.update(headers or {})
    return response


async def internal_error(request: Request, exc: Exception) -> Response:
    """An unhandled exception (a bug): a JSON 500 with no traceback (the server logs it)."""
    return error(500, "internal_error", "the server failed on this request; it is logged")


def refused(request: Request, status: int, code: str, message: str) -> JSONResponse:
    """An error response counted in ``emostream_errors``."""
    request.app.state.service.metrics.errors.labels(code).inc()
    return error(status, code, message)


class SpeechResponse(StreamingResponse):
    """A streaming body that holds a stream slot: released when the body is done, or when
    the response ends any other way (client gone before the body began, cancellation)."""

    def __init__(
        self,
        slot: Slot,
        permit: StreamPermit,
        content: AsyncIterator[bytes],
        *,
        media_type: str,
    ) -> None:
        super().__init__(content, media_type=media_type)
        self.slot = slot
        self.permit = permit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except EspeakCrashed as exc:
            # The headers are gone: returning without the body's end makes the server close
            # the connection, so the client sees a cut transfer, not a whole file.
            log.warning("speech response cut: %s", exc)
        finally:
            self.slot.release()
            self.permit.release()


async def _body(
    service: SpeechService,
    req: UtteranceRequest,
    texts: list[str],
    encoder: AudioEncoder,
    framing: Framing,
    slot: Slot,
    *,
    cache: bool,
    scope: str,
) -> AsyncIterator[bytes]:
    head = encoder.header()
    if head:
        yield framing.chunk(head)
    frames = 0
    async with service.utterance(
        req, _segments(texts), transport="http", slot=slot, cache=cache, cache_scope=scope
    ) as (out, stats):
        async for item in out:
            if not isinstance(item, Packet):
                continue
            frames += 1
            data = encoder.push(item.data)
            if data:
                yield framing.chunk(data)
        tail = encoder.finish()
        if tail:
            yield framing.chunk(tail)
        end = framing.end(frames)
        if end:
            yield end
        if stats.truncated:  # the body ends at the cap (its header AUDIO_LIMIT_HEADER says it)
            service.metrics.errors.labels("audio_too_long").inc()
            log.info("%s: audio cut at %g s (max_utterance_audio_s)", req.stream_id,
                     service.settings.max_utterance_audio_s)  # fmt: skip


async def voices(request: Request) -> JSONResponse:
    """Stock voices (speakable) and cloned voices (with ``speakable`` saying whether a loaded
    model can speak them)."""
    service: SpeechService = request.app.state.service
    out: list[dict[str, Any]] = [
        {**info.as_dict(), "type": "stock", "speakable": True} for info in service.catalog.infos()
    ]
    for clone in request.app.state.registry.voices(owner=principal_of(request)):
        if service.can_clone:
            info = service.voice_info(clone.id)
            extra: dict[str, Any] = {"speakable": True, **(info.as_dict() if info else {})}
        else:
            extra = {"speakable": False, "reason": CLONE_UNAVAILABLE}
        out.append({**voice_view(clone, getattr(request.app.state, "refinements", None)), **extra})
    return JSONResponse({"voices": out})


async def healthz(request: Request) -> JSONResponse:
    """``ok``; ``degraded`` (still 200: stock voices speak) while the voice registry cannot
    be reached; ``draining`` (503) on shutdown."""
    service: SpeechService = request.app.state.service
    draining = request.app.state.drain.draining
    try:
        request.app.state.registry.check()
        registry = "ok"
    except StoreUnavailable:
        registry = "unavailable"
    status = "draining" if draining else "ok" if registry == "ok" else "degraded"
    body: dict[str, Any] = {
        "status": status,
        "voices": len(service.catalog),
        "active_streams": service.active,
        "device": service.settings.device,
        "cloning": service.can_clone,
        "voice_registry": registry,
    }
    return JSONResponse(body, status_code=503 if draining else 200)


async def metrics(request: Request) -> Response:
    service: SpeechService = request.app.state.service
    return Response(service.metrics.render(), media_type=service.metrics.content_type)
