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
from emostream.text.pron.reader import PronunciationSetup, shared_kinds
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
    resolve_voice,
    retry_after_s,
    store_unavailable_message,
    unknown_voice,
)
from emostream.transport.voice_listing import (
    BadQuery,
    ListingQuery,
    clone_entry,
    listing,
    served_defaults,
    stock_entry,
)
from emostream.transport.voices_api import voice_view
from emostream.voices.base import UnsupportedControl, Voice, VoiceInfo, check_controls
from emostream.voices.cloning.registry import StoreUnavailable
from emostream.voices.per_language import LanguageMismatch, resolve

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
            language_defaults=voice_defaults(service),
        )
        voice, voices = _voices(request, service, body, principal)
        for each in {v.info.id: v for v in (voice, *voices.values())}.values():
            _check_controls(each.info, body)
        speakers = list(voices.values()) or [voice]  # with ``voices``, they speak every segment
        setup, skipped = _pronunciation(request, body, principal, [v.info for v in speakers])
        cut = len({v.info.id for v in voices.values()}) > 1
        try:
            texts = TextFrontEnd.split(body.text, languages=cut, pronunciation=setup)
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
    req = UtteranceRequest(voice=voice, controls=body.controls, fmt=fmt,
                           stream_id=service.new_stream_id(), voices=voices)  # fmt: skip
    framing = Framing(sse=body.sse, input_chars=len(body.text))
    body_iter = _body(service, req, texts, encoder, framing, slot, cache=body.cache,
                      scope=principal or "")  # fmt: skip
    media = SSE_MEDIA_TYPE if body.sse else body.fmt.media_type
    speech = SpeechResponse(slot, permit, body_iter, media_type=media)
    speech.headers["X-EmoStream-Voice"] = voice.info.id
    if voices:
        speech.headers["X-EmoStream-Voices"] = ",".join(f"{k}={v.info.id}"
                                                        for k, v in voices.items())  # fmt: skip
    if skipped:  # dictionary entries of kinds the voices do not read (docs/protocol.md)
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


def _voices(request: Request, service: SpeechService, body: SpeechBody, principal: str | None
            ) -> tuple[Voice, dict[str, Voice]]:  # fmt: skip
    """The voice ``body`` names and, with ``voices``, the voice of each language
    (:func:`~emostream.voices.per_language.resolve`; ``voice`` is then the one given first
    when the body names none); else RequestError."""
    voice = _voice(request, service, body, principal)
    asked = {lang: _voice(request, service, body, principal, voice_id=vid, param="voices")
             for lang, vid in body.voices.items()}  # fmt: skip
    if not asked:
        return voice, {}
    try:
        voices = resolve(asked, voice=voice, explicit=body.voice_named, info=lambda v: v.info,
                         match=service.timbre_match)  # fmt: skip
    except LanguageMismatch as exc:
        raise RequestError(400, "unsupported_language", str(exc), "voices") from None
    voice = voice if body.voice_named else next(iter(asked.values()))
    if len({v.info.sample_rate for v in (voice, *voices.values())}) > 1:
        raise RequestError(400, "bad_value", "'voices': the voices of one utterance must "
                           "share a sample rate", "voices")  # fmt: skip
    return voice, voices


def _voice(request: Request, service: SpeechService, body: SpeechBody, principal: str | None,
           *, voice_id: str | None = None, param: str = "voice") -> Voice:  # fmt: skip
    """The voice ``body`` names (or ``voice_id``, given in ``param``: an id, OpenAI's name, a
    clone's given name), if this caller may speak it here; else RequestError."""
    asked = body.voice_asked if voice_id is None else voice_id
    voice_id = resolve_voice(service.catalog, service.registry, principal,
                             body.voice_id if voice_id is None else voice_id)  # fmt: skip
    visible = voice_visible(service.registry, principal, voice_id)
    voice = service.voice(voice_id) if visible else None
    if voice is not None:
        return voice
    reason = clone_unavailable(request.app, voice_id) if visible else None
    if reason:
        raise RequestError(409, "voice_unavailable", reason, param)
    message = unknown_voice(service.catalog, service.registry, principal, asked,
                            aliases=list(request.app.state.voice_aliases))  # fmt: skip
    raise RequestError(404, "unknown_voice", message, param).in_dialect(body.openai)


def _pronunciation(request: Request, body: SpeechBody, principal: str | None,
                   infos: list[VoiceInfo]) -> tuple[PronunciationSetup, list[str]]:  # fmt: skip
    """The body's overrides and dictionaries for the voices that speak (``infos``: the kinds
    all of them read), and the kinds of dictionary entry left out because one does not read
    them; an unknown dictionary is a RequestError."""
    store = request.app.state.registry
    try:
        setup = resolve_pronunciation(
            body.inline_pronunciation, body.dictionaries,
            lambda dictionary_id: owned_dictionary(store, principal, dictionary_id),
        )  # fmt: skip
    except ProtocolError as exc:
        raise RequestError(404 if not body.openai else 400, exc.code, exc.message,
                           exc.param) from None  # fmt: skip
    return setup.for_voice(*shared_kinds((i.id, i.pronunciation) for i in infos))


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


def voice_defaults(service: SpeechService) -> dict[str, str]:
    """The default voice of each language here (``GET /v1/voices``'s ``defaults``)."""
    default = service.settings.default_voice
    return served_defaults(service.catalog.language_defaults(), default,
                           service.catalog.info(default))  # fmt: skip


async def voices(request: Request) -> JSONResponse:
    """The catalogue (:mod:`emostream.transport.voice_listing`): named stock voices, the caller's
    clones (``speakable`` says whether a loaded model speaks them), the corpus speakers with
    ``all=true``; filters ``language``, ``gender``, ``tag``, ``type``."""
    service: SpeechService = request.app.state.service
    params = request.query_params
    try:
        query = ListingQuery.parse({k: params.getlist(k) for k in params})
    except BadQuery as exc:
        return error(400, "bad_value", exc.message, param=exc.param)
    defaults = voice_defaults(service)
    entries = [stock_entry(info, defaults) for info in service.catalog.infos()]
    if query.type != "stock":
        refinements = getattr(request.app.state, "refinements", None)
        for clone in request.app.state.registry.voices(owner=principal_of(request)):
            view = voice_view(clone, refinements)
            if service.can_clone:
                entries.append(clone_entry(view, service.voice_info(clone.id)))
            else:
                entries.append(clone_entry(view, None, reason=CLONE_UNAVAILABLE))
    body = listing(entries, query, defaults=defaults, default=service.settings.default_voice)
    return JSONResponse(body)


def stock_voice_view(request: Request, voice_id: str) -> dict[str, Any] | None:
    """``GET /v1/voices/{id}`` of a stock voice: its catalogue entry (None: no such voice)."""
    service: SpeechService = request.app.state.service
    info = service.catalog.info(voice_id)
    if info is None:
        return None
    entry = stock_entry(info, voice_defaults(service))
    entry.pop("hidden", None)
    return entry


def unknown_voice_message(request: Request, asked: str) -> str:
    service: SpeechService = request.app.state.service
    return unknown_voice(service.catalog, service.registry, principal_of(request), asked)


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
