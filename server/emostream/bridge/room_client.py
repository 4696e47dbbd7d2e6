"""A room of the server, as its publishers open it: ``POST /v1/rooms`` from the command line.

``emostream room NAME`` prints a room's listening page (the ``/live`` URL for OBS) and
``emostream danmaku --room NAME`` opens the room before it publishes into it, so that one
command gives the streamer the link. Opening an existing room of the same key returns it as it
is (its token unchanged): the link stays valid across restarts of the bridge and the server.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit


class RoomRefused(Exception):
    """The server refused (or could not be reached): a message for the user."""


def rooms_url(stream_url: str) -> str:
    """``ws://host:port/v1/stream`` → ``http://host:port/v1/rooms`` (``wss`` → ``https``)."""
    parts = urlsplit(stream_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "/v1/rooms", "", ""))


def open_room(
    stream_url: str, name: str, *, api_key: str | None, rotate: bool = False, timeout_s: float = 10
) -> dict[str, Any]:
    """The room (``room``, ``token``, ``listen_url``, ...), created if new."""
    body = json.dumps({"name": name, "rotate": rotate}).encode()
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(rooms_url(stream_url), data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            room: dict[str, Any] = json.loads(response.read())
            return room
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            detail = exc.reason
        raise RoomRefused(f"room {name!r}: HTTP {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise RoomRefused(f"room {name!r}: cannot reach {rooms_url(stream_url)}: {exc}") from None
