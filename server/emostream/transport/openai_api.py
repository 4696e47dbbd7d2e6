"""What OpenAI's API has beside the speech body (:mod:`emostream.transport.speech_request`):
``GET /v1/models`` and ``/v1/models/{id}``, OpenAI's voice names resolved against the voices
this process loaded, and the server-sent events of ``stream_format: "sse"``.

The official ``openai`` package, pointed here (``base_url=http://host:port/v1``), works
unchanged: ``client.audio.speech.create(...)``, its ``with_streaming_response`` form, and
``client.models.list()`` (docs/openai.md).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.transport.errors import error
from emostream.transport.speech_request import MODELS
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.cloning.registry import is_cloned_id

log = logging.getLogger(__name__)

# The models' "created" (Unix seconds): 2025-12-01, when this API took them. A constant, so
# that the list is the same from every process and every start.
MODELS_CREATED = 1764547200
OWNER = "emostream"
SSE_MEDIA_TYPE = "text/event-stream"
# What the openai packages send besides Authorization and Content-Type: a browser page using
# the JS package (cors_origins) needs them allowed in the CORS preflight.
SDK_HEADERS = (
    "OpenAI-Organization", "OpenAI-Project", "X-Stainless-Arch", "X-Stainless-Async",
    "X-Stainless-Lang", "X-Stainless-OS", "X-Stainless-Package-Version", "X-Stainless-Runtime",
    "X-Stainless-Runtime-Version", "X-Stainless-Read-Timeout", "X-Stainless-Retry-Count",
    "X-Stainless-Timeout",
)  # fmt: skip
# The speech response's headers a page may read (CORS exposes only the safelisted ones).
EXPOSED_HEADERS = ("X-EmoStream-Voice", "X-EmoStream-Emotion", "X-EmoStream-Max-Audio-S",
                   "X-EmoStream-Degraded", "X-EmoStream-Pronunciation-Skipped",
                   "Retry-After")  # fmt: skip


def model_object(model_id: str) -> dict[str, Any]:
    """One model as OpenAI lists it."""
    return {"id": model_id, "object": "model", "created": MODELS_CREATED, "owned_by": OWNER}


async def list_models(request: Request) -> JSONResponse:
    """``GET /v1/models``: OpenAI's speech models and ``emostream``; each speaks every voice."""
    return JSONResponse({"object": "list", "data": [model_object(m) for m in MODELS]})


async def get_model(request: Request) -> Response:
    """``GET /v1/models/{model}``; an unknown id is ``404 model_not_found``."""
    model_id = request.path_params["model"]
    if model_id not in MODELS:
        return error(404, "model_not_found", f"The model {model_id[:100]!r} does not exist",
                     param="model")  # fmt: skip
    return JSONResponse(model_object(model_id))


def model_routes() -> list[Route]:
    return [
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", get_model, methods=["GET"]),
    ]


def resolve_aliases(
    aliases: Mapping[str, str], catalog: VoiceCatalog, default_voice: str
) -> dict[str, str]:
    """OpenAI voice names -> voice ids this process can speak: a name whose voice is not
    loaded (``EMOSTREAM_ACOUSTIC=off`` serves ``joe`` alone) speaks with ``default_voice``,
    said once in the log. A cloned id is kept as it is (the registry is asked per request)."""
    out: dict[str, str] = {}
    missing: list[str] = []
    for name, voice_id in aliases.items():
        if voice_id in catalog or is_cloned_id(voice_id):
            out[name] = voice_id
        else:
            out[name] = default_voice
            missing.append(f"{name}={voice_id}")
    if missing:
        log.info("OpenAI voice names whose voice is not loaded speak with %s: %s",
                    default_voice, ", ".join(missing))  # fmt: skip
    return out


class Framing:
    """The body as it goes out: the encoder's bytes as they are (``stream_format`` ``audio``)
    or, for ``sse``, each chunk a ``speech.audio.delta`` event (base64) and a last
    ``speech.audio.done`` with ``usage``: ``input_tokens`` are the input's characters (what
    the per-key limits count), ``output_tokens`` the 20 ms frames of audio made."""

    def __init__(self, *, sse: bool, input_chars: int) -> None:
        self.sse = sse
        self.input_chars = input_chars

    def chunk(self, data: bytes) -> bytes:
        if not self.sse:
            return data
        audio = base64.b64encode(data).decode("ascii")
        return _event({"type": "speech.audio.delta", "audio": audio})

    def end(self, frames: int) -> bytes:
        if not self.sse:
            return b""
        usage = {"input_tokens": self.input_chars, "output_tokens": frames,
                 "total_tokens": self.input_chars + frames}  # fmt: skip
        return _event({"type": "speech.audio.done", "usage": usage})


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"
