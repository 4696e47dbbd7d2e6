"""Slowloris guard: uvicorn's HTTP protocol with deadlines for reading a request.

uvicorn (0.55, httptools) arms only a keep-alive timer, and only after a response: a socket
that sends nothing, half a request line, headers without the blank line, or a body slower than
its ``Content-Length`` stays open for ever (measured: all four still open after 12 s). This
protocol closes them:

* ``header_timeout_s`` from the connection (or the first byte of the next request on a
  keep-alive connection) to the end of the headers: past it the client gets ``408`` with the
  ``request_timeout`` code and the socket is closed. A WebSocket upgrade ends this phase (the
  WebSocket has its own idle timeout).
* ``body_timeout_s`` from the end of the headers to the end of the body: past it the socket is
  closed (the route sees a disconnect).

The deadlines are read once per process from the environment (``EMOSTREAM_HEADER_TIMEOUT_S``,
``EMOSTREAM_BODY_TIMEOUT_S``), so ``serve --workers`` processes get them too.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emostream.config import Settings

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = "request_timeout"


@functools.cache
def _deadlines() -> tuple[float, float]:
    settings = Settings.from_env()
    return settings.header_timeout_s, settings.body_timeout_s


def timeout_response(message: str) -> bytes:
    """The raw ``408`` answer (JSON error body, connection closed)."""
    body = json.dumps({"error": {"code": REQUEST_TIMEOUT, "message": message}}).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedHttpProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that closes sockets which do not finish their request in time."""

    _deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float, on_expiry: str) -> None:
        self._disarm()
        if seconds > 0:
            self._deadline = self.loop.call_later(seconds, self._expired, on_expiry)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        header_s, body_s = _deadlines()
        if phase == "headers":
            log.info("closing %s: no complete request headers in %g s", self.client, header_s)
            self.transport.write(
                timeout_response(f"the request headers did not arrive within {header_s:g} s")
            )
        else:
            log.info("closing %s: the request body took over %g s", self.client, body_s)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(_deadlines()[0], "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # the next request on a keep-alive connection
            self._arm(_deadlines()[0], "headers")

    def on_headers_complete(self) -> None:
        self._arm(_deadlines()[1], "body")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        super().handle_websocket_upgrade()
