"""What the command line's clients share: the server's URLs, its API key, and small HTTP calls
(standard library only, so that they start fast)."""

from __future__ import annotations

import json
import os
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:  # urllib.request is imported when a request is made (say needs none)
    import urllib.request

STREAM_PATH = "/v1/stream"
CONTROLS = ("emotion", "intensity", "speed", "pitch_shift", "energy")  # say's, as start fields
TIMEOUT_S = 120.0


def api_key(given: str | None) -> str | None:
    return given or os.environ.get("EMOSTREAM_API_KEY") or None


def ws_url(url: str) -> str:
    """The WebSocket of the server at ``url`` (ws(s):// or http(s)://; no path: /v1/stream)."""
    parts = urlsplit(url if "://" in url else f"ws://{url}")
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path or STREAM_PATH, parts.query, ""))


def http_base(url: str) -> str:
    """``http(s)://host:port`` of the server at ``url`` (its WebSocket URL or any of its URLs)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


class HttpFailure(Exception):
    """The server answered an error (``status``, its ``code`` and ``message``), or could not
    be reached (``status`` 0)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message


def _request(req: urllib.request.Request, key: str | None) -> Any:
    import urllib.error
    import urllib.request

    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            err = json.loads(exc.read()).get("error") or {}
        except (ValueError, AttributeError):
            err = {}
        raise HttpFailure(exc.code, str(err.get("code", f"http_{exc.code}")),
                          str(err.get("message", exc.reason))) from None  # fmt: skip
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HttpFailure(0, "unreachable", f"cannot reach {req.full_url}: {reason}") from None


def get_json(base: str, path: str, params: dict[str, Any], key: str | None) -> Any:
    import urllib.request

    query = urlencode([(k, v) for k, vs in params.items()
                       for v in (vs if isinstance(vs, list) else [vs]) if v is not None])  # fmt: skip
    return _request(urllib.request.Request(base + path + (f"?{query}" if query else "")), key)


def post_file(base: str, path: str, fields: dict[str, str], file_field: str, filename: str,
              data: bytes, content_type: str, key: str | None) -> Any:  # fmt: skip
    """``multipart/form-data`` with ``fields`` and one file."""
    boundary = "emostream-" + secrets.token_hex(12)
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     .encode() + value.encode() + b"\r\n")  # fmt: skip
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
                 f'filename="{filename}"\r\nContent-Type: {content_type}\r\n\r\n'.encode()
                 + data + b"\r\n")  # fmt: skip
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    import urllib.request

    req = urllib.request.Request(base + path, data=body, method="POST")
    req.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    return _request(req, key)
