"""HTTP API beside the WebSocket: OpenAI-compatible speech, voices, health, metrics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from emostream.codec.containers import OggOpusWriter, wav_header
from emostream.codec.packetizer import FRAME_MS, OutputFormat
from emostream.stream.service import Busy, Slot, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest
from emostream.text.frontend import EspeakCrashed, TextFrontEnd
from emostream.transport.edge.guard import principal_of, voice_visible
from emostream.transport.edge.limits import KeyLimits, LimitExceeded, StreamPermit
from emostream.transport.errors import busy_response, error
from emostream.transport.messages import (
    ProtocolError,
    bool_field,
    load_message,
    parse_controls,
    sample_rate_field,
    voice_field,
)
from emostream.transport.voice_access import (
    CLONE_UNAVAILABLE,
    STORE_UNAVAILABLE,
    clone_unavailable,
    retry_after_s,
    store_unavailable_message,
)
from emostream.voices.base import UnsupportedControl, check_controls
from emostream.voices.cloning.registry import StoreUnavailable

log = logging.getLogger(__name__)

# The audio cap in force (max_utterance_audio_s, seconds): a body whose audio reaches it ends
# there (the status is sent before the audio is made; the WebSocket says audio_too_long).
AUDIO_LIMIT_HEADER = "X-EmoStream-Max-Audio-S"

# response_format → (codec, default sample rate, media type)
FORMATS: dict[str, tuple[str, int, str]] = {
    "opus": ("opus", 48000, "audio/ogg"),
    "wav": ("pcm_s16le", 24000, "audio/wav"),
    "pcm": ("pcm_s16le", 24000, "audio/pcm"),
}


async def _segments(texts: list[str]) -> AsyncIterator[str]:
    for text in texts:
        yield text


async def speech(request: Request) -> Response:
    """``POST /v1/audio/speech`` — body ``{input, voice, speed, response_format, ...}``;
    extra fields ``emotion``, ``intensity``, ``pitch_shift``, ``energy``, ``sample_rate``.

    Every field is checked (by the same validators as the WebSocket ``start``) and a stream
    slot is taken before the response starts: a bad or refused request is a 4xx/503 JSON
    error, never a 200 cut short."""
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
        body = load_message(raw)
        text = body.get("input")
        if not isinstance(text, str) or not text.strip():
            return error(400, "empty_text", "'input' must be a non-empty string")
        if len(text) > service.settings.max_text_chars:
            return error(
                413,
                "text_too_long",
                f"'input' is over {service.settings.max_text_chars} characters",
            )
        voice_id = voice_field(body, service.settings.default_voice)
        visible = voice_visible(service.registry, principal, voice_id)
        voice = service.voice(voice_id) if visible else None
        if voice is None:
            reason = clone_unavailable(request.app, voice_id) if visible else None
            if reason:
                return error(409, "voice_unavailable", reason)
            known = [i.id for i in service.catalog.infos()]
            return error(
                404, "unknown_voice", f"unknown voice {voice_id[:100]!r}; available: {known}"
            )
        fmt_name = body.get("response_format")
        fmt_name = "opus" if fmt_name is None else fmt_name
        if not isinstance(fmt_name, str) or fmt_name not in FORMATS:
            return error(400, "bad_format", f"response_format must be one of {sorted(FORMATS)}")
        codec, rate, media = FORMATS[fmt_name]
        controls = parse_controls(body)
        check_controls(voice.info, controls)
        fmt = OutputFormat(codec=codec, sample_rate=sample_rate_field(body, rate))  # type: ignore[arg-type]
        cache = bool_field(body, "cache", True)
    except ProtocolError as exc:
        return error(400, exc.code, exc.message)
    except UnsupportedControl as exc:
        return error(400, "unsupported_control", str(exc))
    texts = TextFrontEnd.split(text)
    if not texts:
        return error(
            400,
            "empty_text",
            "'input' has no speakable text (voices here read English and Mandarin)",
        )
    limits: KeyLimits = request.app.state.limits
    try:
        limits.charge_chars(principal, len(text))
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
    req = UtteranceRequest(
        voice=voice, controls=controls, fmt=fmt, stream_id=service.new_stream_id()
    )
    body_iter = _body(service, req, texts, fmt_name, slot, cache=cache, scope=principal or "")
    speech = _SpeechResponse(slot, permit, body_iter, media_type=media)
    if slot.degraded:  # admitted on a lighter path (README "Cluster": degradation)
        speech.headers["X-EmoStream-Degraded"] = slot.degraded
    if service.settings.max_utterance_audio_s > 0:
        speech.headers[AUDIO_LIMIT_HEADER] = f"{service.settings.max_utterance_audio_s:g}"
    return speech


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


def refused(request: Request, status: int, code: str, message: str) -> JSONResponse:
    """An error response counted in ``emostream_errors``."""
    request.app.state.service.metrics.errors.labels(code).inc()
    return error(status, code, message)


class _SpeechResponse(StreamingResponse):
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
    fmt_name: str,
    slot: Slot,
    *,
    cache: bool,
    scope: str,
) -> AsyncIterator[bytes]:
    rate = req.fmt.sample_rate
    ogg: OggOpusWriter | None = None
    if fmt_name == "opus":
        # pre-skip: the encoder's look-ahead, the same ms at every rate (the service's, found
        # once; no encoder made per request just to ask it)
        ogg = OggOpusWriter(sample_rate=rate, pre_skip=round(service.opus_delay_ms * rate / 1000))
        yield ogg.header()
    elif fmt_name == "wav":
        yield wav_header(sample_rate=rate)
    per_packet = rate * FRAME_MS // 1000
    async with service.utterance(
        req, _segments(texts), transport="http", slot=slot, cache=cache, cache_scope=scope
    ) as (out, stats):
        batch: list[bytes] = []
        async for item in out:
            if not isinstance(item, Packet):
                continue
            if ogg is None:
                yield item.data
                continue
            batch.append(item.data)
            if len(batch) >= 5:  # 100 ms per Ogg page
                yield ogg.pages(batch, per_packet)
                batch = []
        if ogg is not None:
            yield ogg.pages(batch, per_packet, last=True)
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
        out.append({**clone.as_dict(), **extra})
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
