"""``emostream room NAME``: open a room and print its ``/live`` link (an OBS browser source)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any


def room_opened(url: str, name: str, api_key: str | None, emit: Callable[[dict[str, Any]], None],
                *, rotate: bool = False) -> bool:  # fmt: skip
    """Open (or find) room ``name`` and tell its ``/live`` link; False when refused."""
    from emostream.bridge.room_client import RoomRefused, open_room

    try:
        room = open_room(url, name, api_key=api_key, rotate=rotate)
    except RoomRefused as exc:
        emit({"type": "bridge", "event": "room_refused", "message": str(exc)})
        return False
    emit({"type": "bridge", "event": "room", "room": room["room"],
          "listen_url": room["listen_url"]})  # fmt: skip
    return True


def run(args: argparse.Namespace) -> int:
    """``emostream room NAME``: open the room, print its /live link (OBS: a browser source)."""
    from emostream.bridge.room_client import RoomRefused, open_room

    api_key = args.api_key or os.environ.get("EMOSTREAM_API_KEY") or None
    try:
        room = open_room(args.url, args.name, api_key=api_key, rotate=args.rotate)
    except RoomRefused as exc:
        print(f"emostream room: {exc}", file=sys.stderr)
        return 2
    print(room["listen_url"])
    return 0
