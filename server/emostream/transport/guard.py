"""Access control at the edge: who is calling (API key or token), which browser origins may open
a WebSocket, the token-minting route, and who may see which cloned voice.

:class:`Guard` is ASGI middleware in front of the routes. For ``/v1/*`` and ``/metrics`` (never
``/healthz`` or the static demo page) it puts the caller's principal in the scope
(:func:`principal_of`), or answers ``401`` (HTTP JSON error; on a WebSocket upgrade the same as
an HTTP denial response, so nothing is accepted). WebSocket upgrades from a browser origin that is
not allowed get ``403 origin_not_allowed``. Every refusal is counted in ``emostream_errors``.

Credentials: ``Authorization: Bearer <key or token>`` on HTTP and on the WebSocket upgrade; on
the WebSocket also a token (never a key) as the subprotocol ``emostream.token.<token>`` or the
query ``access_token=``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qs, urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from emostream.engine.metrics import Metrics
from emostream.transport.auth import Authenticator, AuthError, bearer, subprotocol_token
from emostream.transport.errors import error
from emostream.voices.registry import VoiceStore, is_cloned_id

PRINCIPAL = "emostream.principal"
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


def principal_of(conn: HTTPConnection) -> str | None:
    """The caller's principal (``None``: auth is off)."""
    value = conn.scope.get(PRINCIPAL)
    return value if isinstance(value, str) else None


def _split(value: str) -> list[str]:
    return [v.strip().rstrip("/").lower() for v in value.split(",") if v.strip()]


class OriginPolicy:
    """Which ``Origin`` may open a WebSocket: none at all (not a browser), the server's own
    origin (same host and port as ``Host``), loopback origins, and the ``allowed`` list
    (comma-separated origins such as ``https://app.example``; ``*`` allows any)."""

    def __init__(self, allowed: str | Iterable[str] = "") -> None:
        items = _split(allowed) if isinstance(allowed, str) else [a.lower() for a in allowed]
        self.any = "*" in items
        self.allowed = set(items)

    def allows(self, origin: str | None, host: str | None) -> bool:
        if origin is None or self.any:
            return True
        origin = origin.strip().rstrip("/").lower()
        if origin in self.allowed:
            return True
        try:
            parts = urlsplit(origin)
            hostname = parts.hostname
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not hostname:
            return False
        if hostname in _LOOPBACK_HOSTS or hostname.startswith("127."):
            return True
        return host is not None and parts.netloc == host.strip().lower()


class Guard:
    """ASGI middleware: origin check for WebSocket upgrades, then authentication."""

    def __init__(
        self, app: ASGIApp, auth: Authenticator, origins: OriginPolicy, metrics: Metrics
    ) -> None:
        self.app = app
        self.auth = auth
        self.origins = origins
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        path = scope["path"]
        if scope["type"] == "websocket" and not self.origins.allows(
            conn.headers.get("origin"), conn.headers.get("host")
        ):
            await self._refuse(scope, receive, send, 403, "origin_not_allowed",
                               "this page's origin may not open a stream (allowed_origins)")  # fmt: skip
            return
        scope[PRINCIPAL] = None
        if self.auth.enabled and (path.startswith("/v1/") or path == "/metrics"):
            credential = bearer(conn.headers.get("authorization"))
            in_header = credential is not None  # only there may a key be (not a URL, a protocol)
            if not in_header and scope["type"] == "websocket":
                credential = subprotocol_token(scope.get("subprotocols") or ())
                if credential is None:
                    tokens = parse_qs(conn.url.query).get("access_token")
                    credential = tokens[0] if tokens else None
            try:
                scope[PRINCIPAL] = self.auth.principal(
                    credential, allow_token=path != "/v1/tokens", allow_key=in_header
                )
            except AuthError as exc:
                await self._refuse(scope, receive, send, 401, exc.code, exc.message)
                return
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
    ) -> None:
        self.metrics.errors.labels(code).inc()
        response = error(status, code, message)
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="emostream"'
        if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
            await response(scope, receive, send)
        else:  # a server without denial responses: refuse the upgrade (403, no body)
            await send({"type": "websocket.close", "code": 1008})


async def mint_token(request: Request) -> Response:
    """``POST /v1/tokens`` (with an API key, not a token): a short-lived token for a browser."""
    auth: Authenticator = request.app.state.auth
    principal = principal_of(request)
    if principal is None:
        return error(400, "auth_disabled", "this server has no API keys; no token is needed")
    token, exp = auth.tokens.mint(principal)
    return JSONResponse(
        {
            "token": token,
            "expires_at": exp,
            "expires_in": auth.tokens.ttl_s,
            "subprotocol": f"emostream.token.{token}",
        },
        headers={"Cache-Control": "no-store"},
    )


def voice_visible(registry: VoiceStore | None, principal: str | None, voice_id: str) -> bool:
    """Whether ``principal`` may see and speak ``voice_id``: stock voices, yes; a cloned voice
    only its owner's (everyone's when auth is off); inline reference voices (``ref_*``) never
    by id (only through ``reference_audio`` on the connection that sent the clip)."""
    if voice_id.startswith("ref_"):
        return False
    if not is_cloned_id(voice_id) or principal is None or registry is None:
        return True
    clone = registry.get(voice_id)
    return clone is None or clone.owner == principal
