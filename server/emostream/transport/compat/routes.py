"""The compatible routes, and which error shape answers a refusal on each path (the edge's
401/403/421 and the app's 404/405/500 there are in that API's shape, not OpenAI's)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, WebSocketRoute

from emostream.transport.compat import cartesia_http, elevenlabs_http
from emostream.transport.compat.socket import (
    cartesia_websocket,
    elevenlabs_multi_stream_input,
    elevenlabs_stream_input,
)

ELEVENLABS_PREFIX = "/v1/text-to-speech/"
CARTESIA_PREFIX = "/tts/"
Shape = Callable[[int, str, str], JSONResponse]


def routes() -> list[BaseRoute]:
    base = "/v1/text-to-speech/{voice_id}"
    return [
        WebSocketRoute(f"{base}/stream-input", elevenlabs_stream_input),
        WebSocketRoute(f"{base}/multi-stream-input", elevenlabs_multi_stream_input),
        *elevenlabs_http.routes(),
        WebSocketRoute("/tts/websocket", cartesia_websocket),
        *cartesia_http.routes(),
    ]


def error_shape(path: str) -> Shape | None:
    """The error body of the API ``path`` belongs to; None: the native (OpenAI's) shape."""
    if path.startswith(ELEVENLABS_PREFIX):
        return elevenlabs_http.error
    if path.startswith(CARTESIA_PREFIX):
        return cartesia_http.error
    return None
