"""``emostream voices`` (a running server's catalogue, as a table) and ``emostream clone FILE
--name NAME`` (a voice from a recording), over the server's HTTP API."""

from __future__ import annotations

import argparse
import json
import mimetypes
import os
import shutil
import sys
from typing import Any

from emostream.cli.client import HttpFailure, api_key, get_json, http_base, post_file

COLUMNS = ("id", "language", "gender", "description")


def run(args: argparse.Namespace) -> int:
    return _voices(args) if args.cmd == "voices" else _clone(args)


def _voices(args: argparse.Namespace) -> int:
    params = {"language": args.lang, "gender": args.gender, "tag": args.tag or None,
              "all": "true" if args.all else None}  # fmt: skip
    try:
        body = get_json(http_base(args.url), "/v1/voices", params, api_key(args.api_key))
    except HttpFailure as exc:
        print(f"emostream voices: {exc}", file=sys.stderr)
        return 1 if exc.status == 0 else 2
    if args.json:
        print(json.dumps(body, ensure_ascii=False, indent=1))
        return 0
    voices = body.get("voices") or []
    print(table(voices, width=shutil.get_terminal_size((120, 24)).columns))
    hidden = body.get("hidden") or 0
    more = f"; {hidden} corpus speakers not shown (--all)" if hidden else ""
    print(f"{len(voices)} voices (* the default of its language){more}", file=sys.stderr)
    return 0


def table(voices: list[dict[str, Any]], *, width: int = 120) -> str:
    """One line per voice: id (``*`` its language's default; a clone's name beside its id),
    language, gender, description cut to ``width``."""
    rows = [("id", "language", "gender", "description")]
    for v in voices:
        vid = str(v.get("id"))
        if v.get("type") == "cloned":
            vid = f"{v.get('name')} ({vid})"
        rows.append((vid + (" *" if v.get("default") else ""), str(v.get("language") or ""),
                     str(v.get("gender") or "-"), str(v.get("description") or "")))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for row in rows:
        head = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
        room = max(20, width - len(head) - 2)
        desc = row[3] if len(row[3]) <= room else row[3][: room - 1] + "…"
        lines.append(f"{head}  {desc}".rstrip())
    return "\n".join(lines)


def _clone(args: argparse.Namespace) -> int:
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as exc:
        print(f"emostream clone: {exc}", file=sys.stderr)
        return 2
    kind = mimetypes.guess_type(args.file)[0] or "application/octet-stream"
    filename = os.path.basename(args.file).replace('"', "_") or "clip"
    try:
        voice = post_file(http_base(args.url), "/v1/voices", {"name": args.name}, "file",
                          filename, data, kind, api_key(args.api_key))  # fmt: skip
    except HttpFailure as exc:
        print(f"emostream clone: {exc}", file=sys.stderr)
        return 1 if exc.status == 0 else 2
    print(f"{voice['id']}  {voice.get('name')!r}  {voice.get('state', '')}".rstrip())
    print(f"speak with it: emostream say --voice {json.dumps(voice.get('name'))} \"...\" -o x.wav",
          file=sys.stderr)  # fmt: skip
    return 0
