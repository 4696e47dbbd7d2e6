"""API keys and short-lived browser tokens (sans-I/O: no sockets, no Starlette).

Keys come from ``Settings.api_keys`` (comma-separated plaintext, hashed at start-up and only the
hashes kept) and ``Settings.api_keys_file`` (lines ``<id> <name> <salt hex> <hmac hex>`` written by
``emostream keys add``: the key itself is printed once and never stored). A file key looks like
``es_<id>_<secret>``; its ``<id>`` finds the line, and HMAC-SHA256(salt, key) must match.

The caller a key or token stands for is its *principal*: the key's name (file) or
``env-<8 hex>`` (a plaintext key from the environment). Cloned voices belong to a principal.

A key is long-lived: it is accepted only in the ``Authorization`` header, never where URLs and
subprotocol lists travel (access logs, browser history, proxies). Tokens
(``POST /v1/tokens``, for browsers that cannot set headers on a WebSocket) are
``<payload>.<signature>``, both base64url: the payload is ``{"sub", "exp"}`` JSON and the
signature HMAC-SHA256 of it under ``Settings.token_secret``. They stand for the key's principal
until ``exp``; a token cannot mint another token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from emostream.config import Settings

KEY_PREFIX = "es_"
_KEY_RE = re.compile(r"^es_([0-9a-f]{8})_[A-Za-z0-9_-]{20,}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
TOKEN_SUBPROTOCOL = "emostream.token."  # Sec-WebSocket-Protocol: emostream.token.<token>
KEY_OUTSIDE_HEADER = (
    "an API key is accepted only in the 'Authorization: Bearer' header; a browser uses a "
    "short-lived token from POST /v1/tokens (subprotocol emostream.token.<token> or "
    "?access_token=<token>)"
)


class ConfigError(Exception):
    """The security settings do not allow this server to start (the message says why)."""


class AuthError(Exception):
    """A request's credentials were missing or wrong: ``code`` is ``unauthorized`` or
    ``token_expired``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _mac(salt: bytes, key: str) -> str:
    return hmac.new(salt, key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyEntry:
    """One key at rest: no plaintext, only a salt and HMAC-SHA256(salt, key)."""

    key_id: str
    name: str
    salt: bytes
    digest: str

    def line(self) -> str:
        return f"{self.key_id} {self.name} {self.salt.hex()} {self.digest}"

    def matches(self, key: str) -> bool:
        return hmac.compare_digest(_mac(self.salt, key), self.digest)


def new_key(name: str) -> tuple[str, KeyEntry]:
    """A fresh key (``es_<id>_<secret>``) and its entry for a keys file."""
    if not _NAME_RE.match(name):
        raise ValueError("a key name is 1-64 characters of A-Z a-z 0-9 _ . @ -")
    key_id = secrets.token_hex(4)
    key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    return key, KeyEntry(key_id, name, salt, _mac(salt, key))


def parse_keys_file(text: str, source: str = "keys file") -> list[KeyEntry]:
    """Entries of a keys file (blank lines and ``#`` comments skipped)."""
    entries: list[KeyEntry] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            key_id, name, salt, digest = parts
            if not re.fullmatch(r"[0-9a-f]{8}", key_id) or not _NAME_RE.match(name):
                raise ValueError
            if not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise ValueError
            entries.append(KeyEntry(key_id, name, bytes.fromhex(salt), digest))
        except ValueError:
            raise ConfigError(
                f"{source} line {number}: expected '<id> <name> <salt hex> <hmac hex>'"
            ) from None
    return entries


class KeyStore:
    """Checks presented keys; holds hashes only."""

    def __init__(self, entries: Iterable[KeyEntry] = (), plain: Iterable[str] = ()) -> None:
        self._by_id: dict[str, KeyEntry] = {}
        for entry in entries:
            if entry.key_id in self._by_id:
                raise ConfigError(f"key id {entry.key_id} is listed twice")
            self._by_id[entry.key_id] = entry
        # Plaintext keys from the environment: sha256 → principal (they have no id to look up).
        self._plain: dict[str, str] = {}
        for key in plain:
            digest = hashlib.sha256(key.encode()).hexdigest()
            self._plain[digest] = f"env-{digest[:8]}"

    def __len__(self) -> int:
        return len(self._by_id) + len(self._plain)

    def principal(self, key: str) -> str | None:
        """The principal ``key`` stands for, or None."""
        match = _KEY_RE.match(key)
        if match is not None:
            entry = self._by_id.get(match.group(1))
            if entry is not None and entry.matches(key):
                return entry.name
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        for known, name in self._plain.items():
            if hmac.compare_digest(known, digest):
                return name
        return None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenSigner:
    """Mints and checks ``<payload>.<signature>`` tokens (HMAC-SHA256, with an expiry)."""

    def __init__(
        self, secret: bytes, ttl_s: int = 300, clock: Callable[[], float] = time.time
    ) -> None:
        if len(secret) < 16:
            raise ConfigError("token_secret must be at least 16 bytes")
        self._secret = secret
        self.ttl_s = ttl_s
        self._clock = clock

    def mint(self, principal: str) -> tuple[str, int]:
        """A token for ``principal`` and its expiry (unix seconds)."""
        exp = int(self._clock()) + self.ttl_s
        payload = _b64(json.dumps({"sub": principal, "exp": exp}, separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}", exp

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, payload.encode(), hashlib.sha256).digest())

    def principal(self, token: str) -> str:
        """The token's principal; raises :class:`AuthError` when forged, malformed or expired."""
        payload, _, signature = token.partition(".")
        if not payload or not signature or len(token) > 1024:
            raise AuthError("unauthorized", "malformed token")
        if not hmac.compare_digest(self._sign(payload), signature):
            raise AuthError("unauthorized", "bad token signature")
        try:
            claims = json.loads(_unb64(payload))
            sub, exp = claims["sub"], claims["exp"]
        except (ValueError, KeyError, TypeError):
            raise AuthError("unauthorized", "malformed token") from None
        if not isinstance(sub, str) or not isinstance(exp, int):
            raise AuthError("unauthorized", "malformed token")
        if self._clock() >= exp:
            raise AuthError("token_expired", "the token has expired; mint a new one")
        return sub


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Authenticator:
    """Who a request is: ``principal(credential)`` for a key or a token. ``enabled`` is False
    when no keys are configured (then every caller is the anonymous principal ``None``)."""

    def __init__(self, keys: KeyStore, tokens: TokenSigner) -> None:
        self.keys = keys
        self.tokens = tokens

    @property
    def enabled(self) -> bool:
        return len(self.keys) > 0

    def principal(
        self, credential: str | None, *, allow_token: bool = True, allow_key: bool = True
    ) -> str:
        """The principal of a bearer credential: an API key where ``allow_key`` (the
        ``Authorization`` header only), a token where ``allow_token`` (not on ``/v1/tokens``)."""
        if not credential:
            raise AuthError("unauthorized", "send 'Authorization: Bearer <API key>'")
        name = self.keys.principal(credential)
        if name is not None:
            if not allow_key:
                raise AuthError("unauthorized", KEY_OUTSIDE_HEADER)
            return name
        if allow_token and "." in credential:
            return self.tokens.principal(credential)
        raise AuthError("unauthorized", "unknown API key")


def authenticator(settings: Settings) -> Authenticator:
    """The authenticator ``settings`` ask for; raises :class:`ConfigError` when a server bound to
    a non-loopback host would run with no keys and ``allow_unauthenticated`` is not set."""
    entries: list[KeyEntry] = []
    if settings.api_keys_file:
        path = Path(settings.api_keys_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"api_keys_file {path}: {exc.strerror}") from None
        entries = parse_keys_file(text, str(path))
    plain = [k.strip() for k in settings.api_keys.split(",") if k.strip()]
    if any(len(k) < 16 for k in plain):
        raise ConfigError("every key in api_keys must be at least 16 characters")
    keys = KeyStore(entries, plain)
    if not len(keys) and not is_loopback(settings.host) and not settings.allow_unauthenticated:
        raise ConfigError(
            f"refusing to serve {settings.host} with no API keys: set EMOSTREAM_API_KEYS or "
            "EMOSTREAM_API_KEYS_FILE (emostream keys add NAME --file PATH), or "
            "EMOSTREAM_ALLOW_UNAUTHENTICATED=1 to serve everyone"
        )
    secret = settings.token_secret.encode() if settings.token_secret else secrets.token_bytes(32)
    return Authenticator(keys, TokenSigner(secret, settings.token_ttl_s))


def bearer(authorization: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def subprotocol_token(subprotocols: Iterable[str]) -> str | None:
    """A token offered as the WebSocket subprotocol ``emostream.token.<token>``."""
    for proto in subprotocols:
        if proto.startswith(TOKEN_SUBPROTOCOL):
            return proto[len(TOKEN_SUBPROTOCOL) :]
    return None
