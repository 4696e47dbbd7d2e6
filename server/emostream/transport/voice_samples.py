"""``GET /v1/voices/{id}/sample``: a few seconds of a voice, rendered on the first request and
then served from memory.

Any voice the caller may speak has one (a stock voice, a corpus speaker, their clone, by id or
by the name it was given): a fixed line in its language (:data:`SAMPLE_TEXTS`; clones read the
English one), spoken with neutral controls through the same path as ``POST /v1/audio/speech``
(admission, per-key limits, the phrase cache), encoded whole. ``format``: ``wav`` (default,
24 kHz), ``mp3``, ``opus`` (Ogg, 48 kHz) or ``flac``. A render takes a stream slot
(``503 busy`` when there is none) and counts against the key's characters; a sample already
made costs nothing. A clone's sample is made again once it is refined or given a new clip.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response

from emostream.codec.containers import wav_header
from emostream.codec.encoders import (
    RESPONSE_FORMATS,
    ResponseFormat,
    make_encoder,
    missing_extra,
)
from emostream.codec.packetizer import OutputFormat
from emostream.stream.service import Busy, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest
from emostream.text.frontend import EspeakCrashed, TextFrontEnd
from emostream.transport.edge.guard import principal_of, voice_visible
from emostream.transport.edge.limits import KeyLimits, LimitExceeded
from emostream.transport.errors import busy_response, error
from emostream.transport.voice_access import clone_unavailable, resolve_voice, unknown_voice
from emostream.voices.base import Controls, Voice
from emostream.voices.cloning.registry import is_cloned_id
from emostream.voices.stock_voices import stock_voice

log = logging.getLogger(__name__)

SAMPLE_TEXTS = {
    "en": "Hello, and welcome to the stream! Thanks for stopping by today.",
    "zh": "你好，欢迎来到直播间！谢谢你今天过来。",
}
SAMPLE_FORMATS = ("wav", "mp3", "opus", "flac")
CACHE_BYTES = 16 << 20  # every named voice's WAV sample is ~4.5 MB
CacheKey = tuple[str, str, str]  # voice id, version (a clone's clip and refinement), format


class SampleCache:
    """Rendered samples, least recently used dropped first past ``max_bytes``."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._items: OrderedDict[CacheKey, bytes] = OrderedDict()

    def get(self, key: CacheKey) -> bytes | None:
        data = self._items.get(key)
        if data is not None:
            self._items.move_to_end(key)
        return data

    def put(self, key: CacheKey, data: bytes) -> None:
        if len(data) > self.max_bytes:
            return
        old = self._items.pop(key, None)
        self.size -= len(old) if old is not None else 0
        self._items[key] = data
        self.size += len(data)
        while self.size > self.max_bytes:
            _, dropped = self._items.popitem(last=False)
            self.size -= len(dropped)

    def __len__(self) -> int:
        return len(self._items)


def sample_text(voice: Voice) -> str:
    """The line a voice's sample says: its language's (a named voice's own language; clones
    and unknown languages English)."""
    named = stock_voice(voice.info.id)
    language = named.language if named is not None else voice.info.language
    return SAMPLE_TEXTS.get(language.split("-")[0].lower(), SAMPLE_TEXTS["en"])


async def sample(request: Request) -> Response:
    """The route (module docs)."""
    service: SpeechService = request.app.state.service
    cache: SampleCache = request.app.state.samples
    principal = principal_of(request)
    asked = request.path_params["voice_id"]
    name = request.query_params.get("format", "wav")
    fmt = RESPONSE_FORMATS.get(name) if name in SAMPLE_FORMATS else None
    if fmt is None or missing_extra(fmt) is not None:
        return error(400, "bad_format", f"'format' must be one of {', '.join(SAMPLE_FORMATS)}",
                     param="format")  # fmt: skip
    voice_id = resolve_voice(service.catalog, service.registry, principal, asked)
    visible = voice_visible(service.registry, principal, voice_id)
    voice = service.voice(voice_id) if visible else None
    if voice is None:
        reason = clone_unavailable(request.app, voice_id) if visible else None
        if reason:
            return error(409, "voice_unavailable", reason)
        message = unknown_voice(service.catalog, service.registry, principal, asked)
        return error(404, "unknown_voice", message)
    key = (voice_id, _version(service, voice_id), fmt.name)
    data = cache.get(key)
    state = "hit"
    if data is None:
        state = "miss"
        text = sample_text(voice)
        limits: KeyLimits = request.app.state.limits
        try:
            limits.charge_chars(principal, len(text))
            permit = limits.open_stream(principal)
        except LimitExceeded as exc:
            response = error(429, exc.code, exc.message)
            response.headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
            return response
        try:
            data = await _render(service, voice, text, fmt, scope=principal or "")
        except Busy as exc:
            return busy_response(exc)
        except EspeakCrashed as exc:
            log.warning("sample of %s not made: %s", voice_id, exc)
            return error(500, "internal", "the phonemiser failed on the sample; try again")
        finally:
            permit.release()
        cache.put(key, data)
    headers = {"X-EmoStream-Voice": voice_id, "X-EmoStream-Sample": state,
               "Cache-Control": "private, max-age=3600"}  # fmt: skip
    return Response(data, media_type=fmt.media_type, headers=headers)


def _version(service: SpeechService, voice_id: str) -> str:
    """What a clone's sample depends on besides its id (its clip and refinement)."""
    if not is_cloned_id(voice_id) or service.registry is None:
        return ""
    clone = service.registry.get(voice_id)
    if clone is None:
        return ""
    refined = clone.refine.refined
    return f"{clone.clip_sha256}:{'' if refined is None else refined.at}"


async def _segments(text: str) -> AsyncIterator[str]:
    for segment in TextFrontEnd.split(text):
        yield segment


async def _render(service: SpeechService, voice: Voice, text: str, fmt: ResponseFormat, *,
                  scope: str) -> bytes:  # fmt: skip
    """``text`` in ``voice``, encoded whole in ``fmt`` at its default rate (raises Busy)."""
    slot = service.admit()
    rate = fmt.default_rate
    pre_skip = round(service.opus_delay_ms * rate / 1000)
    encoder = make_encoder(fmt.name, sample_rate=rate, opus_pre_skip=pre_skip)
    request = UtteranceRequest(
        voice=voice, controls=Controls(), fmt=OutputFormat(codec=fmt.codec, sample_rate=rate),
        stream_id=service.new_stream_id(),
    )  # fmt: skip
    parts = [encoder.header()]
    async with service.utterance(request, _segments(text), transport="http", slot=slot,
                                 cache=True, cache_scope=scope) as (out, _stats):  # fmt: skip
        async for item in out:
            if isinstance(item, Packet):
                parts.append(encoder.push(item.data))
    parts.append(encoder.finish())
    if fmt.name == "wav":  # whole: the header's true sizes, not streaming's "unknown"
        body = b"".join(parts[1:])
        return wav_header(sample_rate=rate, data_bytes=len(body)) + body
    return b"".join(parts)
