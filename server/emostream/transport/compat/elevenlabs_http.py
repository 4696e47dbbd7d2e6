"""ElevenLabs' text-to-speech HTTP routes and error shape.

``POST /v1/text-to-speech/{voice_id}`` and ``.../stream``: the audio in ``output_format``
(query; ``mp3_44100_128`` by default), streamed as it is made. ``.../with-timestamps``: one JSON
object, ``{"audio_base64", "alignment", "normalized_alignment"}`` (``characters``,
``character_start_times_seconds``, ``character_end_times_seconds``, from the request's start);
``.../stream/with-timestamps``: one such object per line as the audio is made. The body:
``text`` (required), ``voice_settings`` (as on the WebSocket), ``model_id`` (any; one model
speaks every voice here); fields with no equivalent are named in ``X-EmoStream-Ignored``. Errors
are ElevenLabs': ``{"detail": {"status": code, "message": ...}}``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.transport.compat.alignment import CharAligner
from emostream.transport.compat.elevenlabs import read_voice_settings
from emostream.transport.compat.formats import FormatRefused, elevenlabs_format
from emostream.transport.compat.speech import (
    RawFraming,
    Refused,
    SpeechPlan,
    read_json,
    serve,
)
from emostream.transport.messages import ProtocolError, load_message

# Body fields that change nothing here when given (hints for ElevenLabs' own models).
HINTS = ("language_code", "seed", "previous_text", "next_text", "previous_request_ids",
         "next_request_ids", "pronunciation_dictionary_locators", "apply_text_normalization",
         "apply_language_text_normalization", "use_pvc_as_ivc", "audio_effects")  # fmt: skip


def error(status: int, code: str, message: str) -> JSONResponse:
    """ElevenLabs' error body."""
    return JSONResponse({"detail": {"status": code, "message": message}}, status_code=status)


def _seconds(alignment: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
    if alignment is None:
        return None
    starts, durs = alignment["charStartTimesMs"], alignment["charDurationsMs"]
    return {
        "characters": alignment["chars"],
        "character_start_times_seconds": [round(s / 1000.0, 3) for s in starts],
        "character_end_times_seconds": [round((s + d) / 1000.0, 3) for s, d in zip(starts, durs)],
    }


class TimestampFraming:
    """``with-timestamps``: one JSON object at the end (``stream``: one line per chunk)."""

    media_type = "application/json"

    def __init__(self, text: str, *, stream: bool) -> None:
        self.stream = stream
        self.aligner = CharAligner(relative=False)
        self.aligner.add_text(text)
        self._pending: dict[str, list[Any]] | None = None
        self._audio: list[bytes] = []
        self._chars: dict[str, list[Any]] = {"chars": [], "charStartTimesMs": [],
                                              "charDurationsMs": []}  # fmt: skip

    def words(self, words: list[dict[str, Any]]) -> bytes:
        alignment = self.aligner.segment(words)
        if alignment is not None:
            for key, values in alignment.items():
                self._chars[key] += values
            if self._pending is not None:
                alignment = {k: self._pending[k] + alignment[k] for k in alignment}
            self._pending = alignment
        return b""

    def chunk(self, data: bytes) -> bytes:
        if not self.stream:
            self._audio.append(data)
            return b""
        alignment, self._pending = _seconds(self._pending), None
        line = {"audio_base64": base64.b64encode(data).decode("ascii"), "alignment": alignment,
                "normalized_alignment": alignment}  # fmt: skip
        return json.dumps(line).encode() + b"\n"

    def end(self) -> bytes:
        if self.stream:
            return b""
        alignment = _seconds(self._chars if self._chars["chars"] else None)
        body = {"audio_base64": base64.b64encode(b"".join(self._audio)).decode("ascii"),
                "alignment": alignment, "normalized_alignment": alignment}  # fmt: skip
        return json.dumps(body).encode()


def _plan(request: Request, raw: bytes, *, words: bool) -> SpeechPlan:
    try:
        body = load_message(raw)
        fmt = elevenlabs_format(request.query_params.get("output_format"))
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ProtocolError("empty_text", "'text' must be a non-empty string")
        fields, warnings = read_voice_settings(body.get("voice_settings"))
    except ProtocolError as exc:
        raise Refused(400, exc.code, exc.message) from None
    except FormatRefused as exc:
        raise Refused(400, "invalid_output_format", str(exc)) from None
    warnings += [f"{k} is not applied here" for k in HINTS if body.get(k) not in (None, [], "")]
    if request.query_params.get("optimize_streaming_latency") not in (None, "0"):
        warnings.append("optimize_streaming_latency: audio starts as soon as it can anyway")
    voice = str(request.path_params["voice_id"])
    voice = request.app.state.voice_aliases.get(voice, voice)
    return SpeechPlan(voice, text, fields, fmt, words=words, warnings=warnings)


async def _speech(request: Request, *, timestamps: bool, stream: bool) -> Response:
    limit = request.app.state.service.settings.max_body_bytes
    try:
        plan = _plan(request, await read_json(request, limit), words=timestamps)
    except Refused as exc:
        request.app.state.service.metrics.errors.labels(exc.code).inc()
        return error(exc.status, exc.code, exc.message)
    framing = (TimestampFraming(plan.text, stream=stream) if timestamps
               else RawFraming(plan.fmt.media_type))  # fmt: skip
    return await serve(request, plan, framing, error)


async def convert(request: Request) -> Response:
    return await _speech(request, timestamps=False, stream=False)


async def convert_stream(request: Request) -> Response:
    return await _speech(request, timestamps=False, stream=True)


async def with_timestamps(request: Request) -> Response:
    return await _speech(request, timestamps=True, stream=False)


async def stream_with_timestamps(request: Request) -> Response:
    return await _speech(request, timestamps=True, stream=True)


def routes() -> list[Route]:
    base = "/v1/text-to-speech/{voice_id}"
    return [
        Route(base, convert, methods=["POST"]),
        Route(f"{base}/stream", convert_stream, methods=["POST"]),
        Route(f"{base}/with-timestamps", with_timestamps, methods=["POST"]),
        Route(f"{base}/stream/with-timestamps", stream_with_timestamps, methods=["POST"]),
    ]
