"""The rooms of one server process: created, found, listened to, deleted, kept on disk.

:class:`RoomHub` holds every :class:`~emostream.transport.rooms.hub.Room` by name. A room's
name, owner and token are written to ``rooms.json`` in the data directory (mode 0600: the tokens
are secrets), so that a listener's URL (an OBS browser source's) stays valid across a restart;
what a room is playing is not kept. A directory that cannot be written leaves the rooms in
memory only (logged once). No sockets here: :mod:`emostream.transport.rooms.api` is the I/O.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from emostream.stream.metrics import Metrics
from emostream.transport.rooms.hub import Listener, Room, RoomCounts, RoomError, RoomTap, new_token

log = logging.getLogger(__name__)
NAME = re.compile(r"[A-Za-z0-9._:-]{1,64}")  # the schema's room_name
REFUSED = "no such room, or a wrong token"


class RoomHub:
    def __init__(
        self,
        *,
        path: Path | None = None,
        max_rooms: int = 64,
        max_listeners: int = 32,
        queue_bytes: int = 2 << 20,
        why_not: str = "",
        metrics: Metrics | None = None,
    ) -> None:
        """``path``: where rooms are kept (None: memory only); ``why_not``: why this process
        cannot hold rooms (e.g. several workers, each with its own), refused on creation."""
        self.path = path
        self.max_rooms = max_rooms
        self.max_listeners = max_listeners
        self.queue_bytes = queue_bytes
        self.why_not = why_not
        self.counts = RoomCounts(metrics)
        self.rooms: dict[str, Room] = {}
        self._warned = False
        for entry in self._load():
            self._add(entry["name"], entry["owner"], entry["token"], entry.get("created", ""))

    def _add(self, name: str, owner: str, token: str, created: str) -> Room:
        room = Room(name, owner, token, created, max_listeners=self.max_listeners,
                    queue_bytes=self.queue_bytes, counts=self.counts)  # fmt: skip
        self.rooms[name] = room
        return room

    # -- the owner's API ----------------------------------------------------------------------
    def open(self, owner: str, name: str | None = None, *, rotate: bool = False) -> tuple[Room, bool]:
        """The owner's room ``name`` (a server-made name when None), created if new; with
        ``rotate`` a new token (listeners of the old one are closed). Returns (room, created)."""
        if self.why_not:
            raise RoomError(501, "rooms_unavailable", self.why_not)
        if name is None:
            name = f"room-{secrets.token_hex(4)}"
        if not NAME.fullmatch(name):
            raise RoomError(400, "bad_value", "'name' must be 1-64 characters of A-Z a-z 0-9 . _ : -")
        room = self.rooms.get(name)
        if room is not None and room.owner != owner:
            raise RoomError(409, "room_taken", f"room {name!r} belongs to another key")
        if room is None:
            if len(self.rooms) >= self.max_rooms:
                raise RoomError(503, "too_many_rooms", f"this server holds {self.max_rooms} rooms "
                                "(max_rooms); delete one first")  # fmt: skip
            created = datetime.now(UTC).isoformat(timespec="seconds")
            room = self._add(name, owner, new_token(), created)
            self._save()
            return room, True
        if rotate:
            room.close("room_closed", "the room's token was changed; open the new link")
            room.token = new_token()
            self._save()
        return room, False

    def owned(self, name: str, owner: str) -> Room:
        room = self.rooms.get(name)
        if room is None or room.owner != owner:
            raise RoomError(404, "unknown_room", f"no room {name[:64]!r} of yours")
        return room

    def delete(self, name: str, owner: str) -> None:
        room = self.owned(name, owner)
        room.close("room_closed", "the room was deleted")
        del self.rooms[name]
        self._save()

    def close_all(self, code: str, message: str) -> None:
        """Every listener of every room gets ``code`` (the server is going away)."""
        for room in self.rooms.values():
            room.close(code, message)

    # -- publishers and listeners ---------------------------------------------------------------
    def publish_refusal(self, name: str, owner: str) -> str | None:
        """Why ``owner`` may not publish into ``name`` (None: it may)."""
        room = self.rooms.get(name)
        if room is None or room.owner != owner:
            return f"no room {name!r} of yours: create it with POST /v1/rooms"
        return None

    def tap(self, name: str, source: str, *, codec_delay_ms: float) -> RoomTap | None:
        room = self.rooms.get(name)
        return None if room is None else RoomTap(room, source, codec_delay_ms=codec_delay_ms)

    def listen(self, name: str, token: str, wake: Callable[[], None]) -> tuple[Room, Listener]:
        """Join ``name`` with its token (RoomError ``room_refused``: no such room or a wrong
        token, told apart by neither; ``too_many_listeners``)."""
        room = self.rooms.get(name)
        if room is None or not room.token_ok(token):
            raise RoomError(403, "room_refused", REFUSED)
        return room, room.join(wake)

    # -- kept on disk -------------------------------------------------------------------------
    def _load(self) -> list[dict[str, str]]:
        if self.path is None or not self.path.is_file():
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data["rooms"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("rooms: %s is unreadable (%s); starting with none", self.path, exc)
            return []
        keep = ("name", "owner", "token")
        return [e for e in entries if isinstance(e, dict) and all(isinstance(e.get(k), str)
                for k in keep) and NAME.fullmatch(e["name"])]  # fmt: skip

    def _save(self) -> None:
        if self.path is None:
            return
        rooms: list[dict[str, Any]] = [
            {"name": r.name, "owner": r.owner, "token": r.token, "created": r.created}
            for r in self.rooms.values()
        ]
        tmp = ""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".rooms-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp: mode 0600
                json.dump({"rooms": rooms}, out, indent=1)
            os.replace(tmp, self.path)
        except OSError as exc:
            if tmp:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if not self._warned:
                log.warning("rooms: cannot write %s (%s); rooms live in memory only", self.path, exc)
                self._warned = True
