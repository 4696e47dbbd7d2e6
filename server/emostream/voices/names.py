"""Voices by name: a clone is usable by the name it was given (unique per API key), and a voice
that is not found is answered in one short line with the closest names.

Pure functions over what the registry and the catalogue hold; the transport asks them for the
caller's clones (:mod:`emostream.transport.voice_access`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable

from emostream.voices.cloning.voice_record import ClonedVoice, is_cloned_id

# An unknown voice's message stays short whatever was asked (the error body, JSON and all, is
# at most 300 bytes: tests/voices/test_names.py): the name asked is cut, and names suggested
# only while they fit; sizes are counted as a JSON body holds them (escapes included).
MAX_MESSAGE_BYTES = 200
ASKED_BYTES = 60  # of the name asked, quoted
SUGGESTED_BYTES = 40  # of each name suggested
SUGGESTED_CHARS = 32  # of a name quoted in other messages


def name_key(name: str) -> str:
    """What two names must differ in: case and surrounding space do not count."""
    return name.strip().casefold()


def named(clones: Iterable[ClonedVoice], name: str) -> list[ClonedVoice]:
    """The clones called ``name`` (case-insensitively), oldest first."""
    key = name_key(name)
    return [c for c in clones if name_key(c.name) == key]


def name_clash(name: str, clones: Iterable[ClonedVoice], is_stock: Callable[[str], bool]
               ) -> str | None:  # fmt: skip
    """Why a new clone may not be called ``name`` among the caller's ``clones`` (None: it may):
    another of them has it, or a stock voice's id is that name (the id would win)."""
    if is_stock(name) or is_stock(name.strip().lower()):
        return f"{name[:SUGGESTED_CHARS]!r} is a stock voice's id; choose another name"
    taken = named(clones, name)
    if taken:
        return f"you already have a voice named {name[:SUGGESTED_CHARS]!r} ({taken[0].id})"
    if is_cloned_id(name.strip()):
        return "a name may not look like a voice id (clone_...)"
    return None


def closest(asked: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` closest to ``asked`` (difflib; case-insensitive)."""
    by_key: dict[str, str] = {}
    for c in candidates:
        by_key.setdefault(c.casefold(), c)
    found = difflib.get_close_matches(asked.casefold()[:64], list(by_key), n=n, cutoff=0.6)
    return [by_key[k] for k in found]


def size(text: str) -> int:
    """Bytes ``text`` takes in a JSON body (UTF-8, escapes included)."""
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def clip(text: str, max_bytes: int) -> str:
    """``text`` cut (with ``…``) to at most ``max_bytes`` of :func:`size`."""
    if size(text) <= max_bytes:
        return text
    out = text
    while out and size(out) + 3 > max_bytes:
        out = out[: len(out) - max(1, (size(out) + 3 - max_bytes) // 8)]
    return out + "…"


def unknown_voice_message(asked: str, suggestions: Iterable[str], others: Iterable[str] = ()
                          ) -> str:  # fmt: skip
    """``unknown voice 'x'; did you mean a, b? GET /v1/voices lists them`` (with no
    ``suggestions``: ``voices here include`` ``others``), at most :data:`MAX_MESSAGE_BYTES`
    in a JSON body (:func:`size`)."""
    head = f"unknown voice {clip(repr(asked[:ASKED_BYTES]), ASKED_BYTES)}; "
    tail = "GET /v1/voices lists them"
    for lead, names, end in (("did you mean ", suggestions, "? "),
                             ("voices here include ", others, "; ")):  # fmt: skip
        picked: list[str] = []
        for name in names:
            shown = [*picked, clip(name, SUGGESTED_BYTES)]
            if size(f"{head}{lead}{', '.join(shown)}{end}{tail}") > MAX_MESSAGE_BYTES:
                break
            picked = shown
        if picked:
            return f"{head}{lead}{', '.join(picked)}{end}{tail}"
    return head + tail


def ambiguous_message(name: str, clones: list[ClonedVoice]) -> str:
    """``name`` is given to several of the caller's clones (made before names were unique)."""
    ids = ", ".join(c.id for c in clones[:3]) + (", …" if len(clones) > 3 else "")
    return f"{name[:SUGGESTED_CHARS]!r} names {len(clones)} of your voices; use an id ({ids})"
