"""One speech request of a compatible HTTP route, on the native speech pipeline.

ElevenLabs' ``POST /v1/text-to-speech/{voice_id}[/stream][/with-timestamps]`` and Cartesia's
``POST /tts/bytes`` and ``/tts/sse`` read their bodies into a :class:`SpeechPlan`;
:func:`serve` checks it and takes a stream slot as ``POST /v1/audio/speech`` does (the drain, the
voice and who may see it, the controls, the text, the key's characters and streams, admission)
before the response starts, then streams the utterance: the audio through a
:class:`~emostream.transport.compat.formats.Transcoder`, the words (placed in the request text)
and the end through the route's :class:`Framing`. A refusal is the route's own error shape
(:data:`Refuse`).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from emostream.codec.packetizer import OutputFormat
from emostream.stream.service import Busy, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest
from emostream.text.frontend import SegmentSource, TextFrontEnd
from emostream.text.normalize import normalize
from emostream.transport.compat.formats import CompatFormat, Transcoder
from emostream.transport.edge.guard import principal_of, voice_visible
from emostream.transport.edge.limits import KeyLimits, LimitExceeded
from emostream.transport.errors import retry_after_ms
from emostream.transport.http import SpeechResponse, read_body
from emostream.transport.messages import ProtocolError, parse_controls
from emostream.transport.voice_access import clone_unavailable, resolve_voice, unknown_voice
from emostream.voices.base import UnsupportedControl, Voice, check_controls

Refuse = Callable[[int, str, str], JSONResponse]  # (status, code, message): the API's shape
IGNORED_HEADER = "X-EmoStream-Ignored"  # request fields with no equivalent here


class Framing(Protocol):
    """How a route's body carries the audio, the words and the end."""

    media_type: str

    def chunk(self, data: bytes) -> bytes: ...

    def words(self, words: list[dict[str, Any]]) -> bytes: ...

    def end(self) -> bytes: ...


class RawFraming:
    """The audio bytes as they are (no words, nothing at the end)."""

    def __init__(self, media_type: str) -> None:
        self.media_type = media_type

    def chunk(self, data: bytes) -> bytes:
        return data

    def words(self, words: list[dict[str, Any]]) -> bytes:
        return b""

    def end(self) -> bytes:
        return b""


@dataclass(frozen=True)
class SpeechPlan:
    voice_id: str
    text: str
    fields: dict[str, Any]  # native controls (speed, emotion, ...), checked by parse_controls
    fmt: CompatFormat
    words: bool = False  # the framing wants word timestamps
    warnings: list[str] = field(default_factory=list)


class Refused(Exception):
    """A refusal in the API's error shape; ``retry_after_s``: its ``Retry-After`` (busy, the
    key's limits), in whole seconds, at least 1."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after_s = retry_after_s


async def read_json(request: Request, limit: int) -> bytes:
    """The body, or :class:`Refused` (413 over ``limit``, 408 when the client went away)."""
    try:
        raw = await read_body(request, limit)
    except ClientDisconnect:
        raise Refused(408, "request_timeout", "the body was not complete") from None
    if raw is None:
        raise Refused(413, "too_large", f"the body is over {limit} bytes")
    return raw


def _voice(request: Request, service: SpeechService, asked: str) -> Voice:
    principal = principal_of(request)
    voice_id = resolve_voice(service.catalog, service.registry, principal, asked)
    visible = voice_visible(service.registry, principal, voice_id)
    voice = service.voice(voice_id) if visible else None
    if voice is not None:
        return voice
    reason = clone_unavailable(request.app, voice_id) if visible else None
    if reason:
        raise Refused(409, "voice_unavailable", reason)
    raise Refused(404, "unknown_voice", unknown_voice(service.catalog, service.registry,
                                                      principal, asked))  # fmt: skip


def _segments(text: str) -> tuple[list[str], list[SegmentSource]]:
    front = TextFrontEnd(locate=True)
    segments = front.feed(text, normalize(text)) + front.flush()  # as TextFrontEnd.split
    return segments, [front.locate(s) for s in segments]


async def serve(request: Request, plan: SpeechPlan, framing: Framing, refuse: Refuse) -> Response:
    """The response to ``plan`` (module docs)."""
    try:
        return await _serve(request, plan, framing)
    except Refused as exc:
        if exc.code != "busy":  # (busy is counted by the service's admission)
            request.app.state.service.metrics.errors.labels(exc.code).inc()
        response = refuse(exc.status, exc.code, exc.message)
        if exc.retry_after_s is not None:
            response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
        return response


async def _serve(request: Request, plan: SpeechPlan, framing: Framing) -> Response:
    service: SpeechService = request.app.state.service
    principal = principal_of(request)
    if request.app.state.drain.draining:
        raise Refused(503, "shutting_down", "the server is shutting down; retry elsewhere")
    voice = _voice(request, service, plan.voice_id)
    try:
        controls = parse_controls(plan.fields)
        check_controls(voice.info, controls)
    except ProtocolError as exc:
        raise Refused(400, exc.code, exc.message) from None
    except UnsupportedControl as exc:
        raise Refused(400, "unsupported_control", str(exc)) from None
    if len(plan.text) > service.settings.max_text_chars:
        raise Refused(400, "text_too_long",
                      f"the text is over {service.settings.max_text_chars} characters")  # fmt: skip
    segments, sources = _segments(plan.text)
    if not segments:
        raise Refused(400, "empty_text", "the text has nothing to say (voices here read English "
                      "and Mandarin)")  # fmt: skip
    limits: KeyLimits = request.app.state.limits
    try:
        limits.charge_chars(principal, len(plan.text))
        permit = limits.open_stream(principal)
    except LimitExceeded as exc:
        raise Refused(429, exc.code, exc.message, retry_after_s=exc.retry_after_s) from None
    try:
        slot = service.admit()
    except Busy as exc:
        permit.release()
        raise Refused(503, "busy", f"{exc}; retry in {retry_after_ms(exc)} ms",
                      retry_after_s=exc.retry_after_s) from None  # fmt: skip
    req = UtteranceRequest(
        voice=voice, controls=controls,
        fmt=OutputFormat(codec="pcm_s16le", sample_rate=plan.fmt.source_rate),
        stream_id=service.new_stream_id(),
        word_timestamps=plan.words and voice.info.word_timestamps,
    )  # fmt: skip
    body = _body(service, req, segments, sources, plan, framing, scope=principal or "", slot=slot)
    response = SpeechResponse(slot, permit, body, media_type=framing.media_type)
    response.headers["X-EmoStream-Voice"] = voice.info.id
    if plan.warnings:
        response.headers[IGNORED_HEADER] = "; ".join(plan.warnings)
    return response


async def _texts(segments: list[str]) -> AsyncIterator[str]:
    for text in segments:
        yield text


async def _body(
    service: SpeechService,
    req: UtteranceRequest,
    segments: list[str],
    sources: list[SegmentSource],
    plan: SpeechPlan,
    framing: Framing,
    *,
    scope: str,
    slot: Any,
) -> AsyncIterator[bytes]:
    transcoder = Transcoder(plan.fmt)
    async with service.utterance(req, _texts(segments), transport="http", slot=slot,
                                 cache=True, cache_scope=scope) as (out, _stats):  # fmt: skip
        async for item in out:
            if isinstance(item, Packet):
                data = transcoder.push(item.data)
                if data:
                    yield framing.chunk(data)
            elif item.body.get("type") == "words":
                index = item.body.get("index", -1)
                source = sources[index] if 0 <= index < len(sources) else None
                words = []
                for word in item.body["words"]:
                    if source is not None:
                        start, end, written = source.span(word["char_start"], word["char_end"])
                        word = {**word, "word": written or word["word"], "char_start": start,
                                "char_end": end}  # fmt: skip
                    words.append(word)
                head = framing.words(words)
                if head:
                    yield head
        tail = transcoder.finish()
        if tail:
            yield framing.chunk(tail)
        end = framing.end()
        if end:
            yield end
