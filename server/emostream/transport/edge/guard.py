"""Access control at the edge: which ``Host`` and browser origins are answered, who is calling
(API key or token), the token-minting route, and who may see which cloned voice.

:class:`Guard` is ASGI middleware in front of the routes, checking in this order:

1. ``Host`` (:class:`~emostream.transport.edge.origins.HostPolicy`; a loopback server
   answers loopback names and ``allowed_hosts`` only): ``421 host_not_allowed``.
2. ``Origin`` (:class:`~emostream.transport.edge.origins.OriginPolicy`) of a WebSocket upgrade,
   and of an HTTP request that changes state (any method but GET, HEAD, OPTIONS: what a page could
   send cross-site, a ``text/plain`` POST needing no preflight): ``403 origin_not_allowed``.
   Requests with no ``Origin`` (curl, SDKs) pass.
3. For ``/v1/*``, ``/tts/*`` (Cartesia's API) and ``/metrics`` (never ``/healthz``
   or the static demo page), the caller's principal goes in the scope (:func:`principal_of`), or
   ``401``; not for a room listener's WebSocket (``/v1/rooms/{name}/listen``), whose
   credential is the room's token (:mod:`emostream.transport.rooms.api`).

A refusal is an HTTP JSON error (on a WebSocket upgrade the same, as a denial response, so nothing
is accepted), counted in ``emostream_errors``; in OpenAI's shape, or in the shape ``shape`` gives
for its path (the compatible APIs': :mod:`emostream.transport.compat.routes`).

Credentials: ``Authorization: Bearer <key or token>`` on HTTP and on the WebSocket upgrade, or
the same credential in the headers the ElevenLabs and Cartesia clients send (``xi-api-key``,
``X-API-Key``); on the WebSocket also a *token* (never a key) as the subprotocol
``emostream.token.<token>`` or the query ``access_token=`` (access logs redact query strings:
:mod:`emostream.transport.edge.access_log`). Cartesia's WebSocket alone also takes a key as
``?api_key=`` (what Pipecat's and Cartesia's own clients send there; docs/compat.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from emostream.stream.metrics import Metrics
from emostream.transport.edge.auth import Authenticator, AuthError, bearer, subprotocol_token
from emostream.transport.edge.origins import EdgeRules
from emostream.transport.errors import error
from emostream.voices.cloning.registry import VoiceStore, is_cloned_id

PRINCIPAL = "emostream.principal"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PROTECTED = ("/v1/", "/tts/")  # path prefixes that need a principal (and /metrics)
KEY_HEADERS = ("xi-api-key", "x-api-key")  # ElevenLabs' and Cartesia's clients' key headers
QUERY_KEY_PATHS = frozenset({"/tts/websocket"})  # ?api_key= (Cartesia's WebSocket clients)
# A room listener's socket: the room's token is its credential (transport.rooms.api), no key.
ROOM_LISTEN = re.compile(r"/v1/rooms/[^/]+/listen")
# The error body for a path: (status, code, message) -> response; None: OpenAI's shape.
ErrorShape = Callable[[str], Callable[[int, str, str], JSONResponse] | None]


def principal_of(conn: HTTPConnection) -> str | None:
    """The caller's principal (``None``: auth is off)."""
    value = conn.scope.get(PRINCIPAL)
    return value if isinstance(value, str) else None


class Guard:
    """ASGI middleware: host check, origin check, then authentication."""

    def __init__(
        self,
        app: ASGIApp,
        auth: Authenticator,
        rules: EdgeRules,
        metrics: Metrics,
        shape: ErrorShape | None = None,
    ) -> None:
        self.app = app
        self.auth = auth
        self.rules = rules
        self.metrics = metrics
        self.shape = shape

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        path = scope["path"]
        refusal = self._edge_refusal(scope, conn.headers.get("host"), conn.headers.get("origin"))
        if refusal is not None:
            await self._refuse(scope, receive, send, *refusal)
            return
        scope[PRINCIPAL] = None
        listener = scope["type"] == "websocket" and ROOM_LISTEN.fullmatch(path) is not None
        if self.auth.enabled and (path.startswith(PROTECTED) or path == "/metrics") and not listener:
            try:
                scope[PRINCIPAL] = self._principal(conn, scope, path)
            except AuthError as exc:
                await self._refuse(scope, receive, send, 401, exc.code, exc.message)
                return
        await self.app(scope, receive, send)

    def _edge_refusal(
        self, scope: Scope, host: str | None, origin: str | None
    ) -> tuple[int, str, str] | None:
        """(status, code, message) when the Host or Origin is not answered, else None."""
        if not self.rules.hosts.allows(host):
            shown = (host or "")[:100]
            why = "a loopback server answers loopback names and allowed_hosts"
            return 421, "host_not_allowed", f"this server does not answer Host {shown!r} ({why})"
        if scope["type"] == "websocket":
            if not self.rules.websocket.allows(origin, host):
                why = "this page's origin may not open a stream (allowed_origins)"
                return 403, "origin_not_allowed", why
        elif scope["method"] not in SAFE_METHODS and not self.rules.http.allows(origin, host):
            shown = (origin or "")[:100]
            why = f"a page from {shown!r} may not send {scope['method']} requests here"
            return 403, "origin_not_allowed", f"{why} (allowed_origins, cors_origins)"
        return None

    def _principal(self, conn: HTTPConnection, scope: Scope, path: str) -> str:
        """A key or token from the ``Authorization`` header; on a WebSocket without one, a token
        from the subprotocol or ``access_token`` (a key there is refused)."""
        allow_token = path != "/v1/tokens"
        credential = bearer(conn.headers.get("authorization"))
        for header in KEY_HEADERS:
            credential = credential or conn.headers.get(header) or None
        if credential is not None or scope["type"] != "websocket":
            return self.auth.principal(credential, allow_token=allow_token)
        credential = subprotocol_token(scope.get("subprotocols") or ())
        query = parse_qs(conn.url.query)
        if credential is None and path in QUERY_KEY_PATHS and query.get("api_key"):
            return self.auth.principal(query["api_key"][0], allow_token=allow_token)
        if credential is None:
            tokens = query.get("access_token")
            credential = tokens[0] if tokens else None
        return self.auth.principal(credential, allow_token=allow_token, allow_key=False)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
    ) -> None:
        self.metrics.errors.labels(code).inc()
        shaped = self.shape(scope["path"]) if self.shape is not None else None
        response = (shaped or error)(status, code, message)
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
