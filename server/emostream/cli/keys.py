"""``emostream keys add NAME --file PATH``: a new API key."""

from __future__ import annotations

import argparse
import os
import sys


def run(args: argparse.Namespace) -> int:
    """``emostream keys add NAME --file PATH``: a new key, printed once; only its hash is kept."""
    from pathlib import Path

    from emostream.transport.edge.auth import new_key, parse_keys_file

    path = Path(args.file).expanduser()
    try:
        key, entry = new_key(args.name)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    if any(e.name == args.name for e in parse_keys_file(existing, str(path))):
        print(f"{path} already has a key named {args.name!r}", file=sys.stderr)
        return 2
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        if existing and not existing.endswith("\n"):
            f.write("\n")
        f.write(entry.line() + "\n")
    print(key)
    print(f"key {args.name!r} added to {path} (shown once; only its hash is stored)",
          file=sys.stderr)  # fmt: skip
    return 0
