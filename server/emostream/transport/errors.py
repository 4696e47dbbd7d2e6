"""The one shape of an HTTP error body, OpenAI's: ``{"error": {"message", "type", "param",
"code"}}`` (``code``: EmoStream's error code; ``type``: OpenAI's class of error, from the status;
``param``: the request field at fault, or null). A ``busy`` refusal adds ``retry_after_ms``, as
its WebSocket error does."""

from __future__ import annotations

import math
from typing import Any

from starlette.responses import JSONResponse

from emostream.stream.service import Busy

# A WebSocket text message that is not UTF-8 (closed 1007 by transport.websocket.utf8, which
# loads uvicorn's protocol: kept there, out of the app's import path)
INVALID_UTF8 = "invalid_utf8"  # the error code counted in /metrics
INVALID_UTF8_REASON = "invalid UTF-8 in a text message"


def error_type(status: int) -> str:
    """OpenAI's ``type`` of an error answered with ``status``."""
    if status >= 500:
        return "server_error"
    if status == 429:
        return "rate_limit_error"
    return "invalid_request_error"  # OpenAI's for 400, 401, 403, 404 alike


def error(
    status: int, code: str, message: str, *, param: str | None = None, **extra: Any
) -> JSONResponse:
    body = {"message": message, "type": error_type(status), "param": param, "code": code}
    return JSONResponse({"error": {**body, **extra}}, status_code=status)


def retry_after_ms(busy: Busy) -> int:
    """A ``busy`` refusal's wait before a new start, whole milliseconds."""
    return max(1, math.ceil(busy.retry_after_s * 1000.0))


def busy_response(busy: Busy) -> JSONResponse:
    """HTTP 503 ``busy``: ``Retry-After`` in whole seconds (at least 1, as HTTP counts them),
    and ``retry_after_ms`` in the body."""
    wait_ms = retry_after_ms(busy)
    response = error(503, "busy", f"{busy}; retry shortly", retry_after_ms=wait_ms)
    response.headers["Retry-After"] = str(max(1, math.ceil(wait_ms / 1000.0)))
    return response
