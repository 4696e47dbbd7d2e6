"""Where a request says it comes from (sans-I/O): the ``Origin`` a browser sends, checked
against an allow-list, and the ``Host`` it asked for, checked on a loopback server.

Both headers are parsed, never compared by prefix: ``http://127.evil.example`` is the host
``127.evil.example`` (a DNS name anyone can register), not a loopback address.

- :class:`OriginPolicy`: which pages may open a WebSocket or send a state-changing HTTP request.
  Always allowed: no ``Origin`` (not a browser), the server's own origin (same host and port as
  ``Host``), loopback origins (``localhost`` and loopback IP literals); then the allow-list of
  ``scheme://host[:port]`` entries (``*``: any).
- :class:`HostPolicy`: which ``Host`` a server answers (the DNS-rebinding defence). A page on
  ``http://rebind.example:8000`` whose name is made to resolve to ``127.0.0.1`` reaches a loopback
  server as its *own* origin; only the ``Host`` header tells it apart. A server bound to a loopback
  address answers loopback names and the configured extra hosts only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from emostream.config import Settings
from emostream.transport.edge.auth import ConfigError, is_loopback

DEFAULT_PORTS = {"http": 80, "https": 443}
# A Host header: a DNS name or IPv4 literal, or a bracketed IPv6 literal; then an optional port.
_HOST_RE = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::([0-9]{1,5}))?$")


@dataclass(frozen=True)
class Origin:
    """A parsed web origin: scheme, host (lower-case; IPv6 without brackets) and port (the
    scheme's default when the origin names none)."""

    scheme: str
    host: str
    port: int


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` (http or https), or None when ``text`` is not such an origin
    (``null``, another scheme, a path, user info, a bad port)."""
    value = text.strip().lower()
    value = value.removesuffix("/")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme not in DEFAULT_PORTS or not host:
        return None
    if parts.path or parts.query or parts.fragment:
        return None
    # The whole netloc must be the host and port (urlsplit skips user info, and anything after
    # an IPv6 literal's bracket).
    named = f"[{host}]" if ":" in host else host
    if parts.netloc != (named if port is None else f"{named}:{port}"):
        return None
    if not _HOST_RE.match(named):
        return None
    return Origin(parts.scheme, host, DEFAULT_PORTS[parts.scheme] if port is None else port)


def parse_host(value: str) -> tuple[str, int | None] | None:
    """A ``Host`` header as (host, port): host lower-case, an IPv6 literal without brackets;
    None when malformed."""
    match = _HOST_RE.match(value.strip().lower())
    if match is None:
        return None
    host, port = match.group(1), match.group(2)
    if port is not None and not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), None if port is None else int(port)


def _items(value: str | Iterable[str]) -> list[str]:
    parts = value.split(",") if isinstance(value, str) else list(value)
    return [p.strip() for p in parts if p.strip()]


class OriginPolicy:
    """Which ``Origin`` may open a WebSocket (or send a state-changing HTTP request): none at
    all, the server's own origin, loopback origins, and the ``allowed`` list (comma-separated
    origins such as ``https://app.example``; ``*`` allows any). Raises :class:`ConfigError` for
    an entry that is not an origin."""

    def __init__(self, allowed: str | Iterable[str] = "", *, setting: str = "allowed_origins"):
        items = _items(allowed)
        self.any = "*" in items
        self.allowed: set[Origin] = set()
        for item in items:
            if item == "*":
                continue
            origin = parse_origin(item)
            if origin is None:
                raise ConfigError(
                    f"{setting}: {item[:100]!r} is not an origin (scheme://host[:port], or *)"
                )
            self.allowed.add(origin)

    def allows(self, origin: str | None, host: str | None) -> bool:
        if origin is None or self.any:
            return True
        parsed = parse_origin(origin)
        if parsed is None:  # "null" (sandboxed frames, file: pages) and anything malformed
            return False
        if parsed in self.allowed or is_loopback(parsed.host):
            return True
        own = parse_host(host) if host is not None else None
        if own is None:
            return False
        name, port = own  # a Host with no port: the origin's default port (80 or 443)
        same_port = parsed.port == (DEFAULT_PORTS[parsed.scheme] if port is None else port)
        return name == parsed.host and same_port


class HostPolicy:
    """Which ``Host`` a server answers. Checked when the server is bound to a loopback address
    (``bind``) or ``extra`` names hosts: then loopback names (``localhost``, loopback IP
    literals) and the ``extra`` host names (comma-separated, any port) are answered; ``*`` in
    ``extra`` turns the check off. A request with no ``Host`` (HTTP/1.0, not a browser) passes.
    Raises :class:`ConfigError` for an entry that is not a host name."""

    def __init__(self, bind: str, extra: str | Iterable[str] = "") -> None:
        items = [i.lower() for i in _items(extra)]
        self.extra: set[str] = set()
        for item in items:
            if item == "*":
                continue
            parsed = parse_host(item)
            if parsed is None or parsed[1] is not None:
                raise ConfigError(f"allowed_hosts: {item[:100]!r} is not a host name (no port)")
            self.extra.add(parsed[0])
        self.enabled = "*" not in items and (is_loopback(bind) or bool(self.extra))

    def allows(self, host: str | None) -> bool:
        if not self.enabled or host is None:
            return True
        parsed = parse_host(host)
        if parsed is None:
            return False
        return is_loopback(parsed[0]) or parsed[0] in self.extra


@dataclass(frozen=True)
class EdgeRules:
    """The origin and host rules of one server: ``websocket`` for upgrades (``allowed_origins``),
    ``http`` for state-changing HTTP requests (``allowed_origins`` and ``cors_origins``: a page
    given CORS may send them), ``hosts`` for every request."""

    websocket: OriginPolicy
    http: OriginPolicy
    hosts: HostPolicy

    @classmethod
    def from_settings(cls, settings: Settings) -> EdgeRules:
        """Raises :class:`ConfigError` for a malformed entry."""
        return cls(
            websocket=OriginPolicy(settings.allowed_origins),
            http=OriginPolicy(
                [*_items(settings.allowed_origins), *_items(settings.cors_origins)],
                setting="allowed_origins/cors_origins",
            ),
            hosts=HostPolicy(settings.host, settings.allowed_hosts),
        )
