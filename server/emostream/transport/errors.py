"""The one shape of an HTTP error body: ``{"error": {"code", "message"}}``."""

from __future__ import annotations

from starlette.responses import JSONResponse


def error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)
