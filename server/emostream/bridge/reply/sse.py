"""Server-sent events of an OpenAI-compatible chat completion stream (sans-I/O: lines in,
text pieces out).

``POST /chat/completions`` with ``"stream": true`` answers ``text/event-stream``: events
separated by a blank line, each with ``data:`` lines (joined by newlines), ``event:`` and
``id:`` lines, and ``:`` comments (keep-alives). Each event's data is a
``chat.completion.chunk`` whose ``choices[0].delta.content`` is the next piece of the reply;
``data: [DONE]`` ends it. A chunk with an ``error`` object, or an event named ``error``, is
the endpoint failing mid-reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_EVENT_CHARS = 1 << 20  # one event's data; more is an endpoint gone wrong


class ReplyStreamError(Exception):
    """The endpoint said it failed, or sent what is not a completion stream."""


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"


class SseParser:
    def __init__(self) -> None:
        self._data: list[str] = []
        self._size = 0
        self._event = "message"

    def feed(self, line: str) -> SseEvent | None:
        """One line (without its line break); the event it completes, if any."""
        if not line:
            if not self._data:
                self._event = "message"
                return None
            out = SseEvent("\n".join(self._data), self._event)
            self._data, self._size, self._event = [], 0, "message"
            return out
        if line.startswith(":"):
            return None  # a comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._size += len(value)
            if self._size > MAX_EVENT_CHARS:
                raise ReplyStreamError(f"an event of more than {MAX_EVENT_CHARS} characters")
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None  # id:, retry:, unknown fields: nothing to do here

    def end(self) -> SseEvent | None:
        """The stream closed: an event not yet ended by a blank line still counts."""
        return self.feed("") if self._data else None


DONE = object()


def delta(event: SseEvent) -> str | object:
    """The reply's next piece (``""`` for a chunk without content: the role, a finish
    reason, usage), or :data:`DONE`. Raises :class:`ReplyStreamError`."""
    data = event.data.strip()
    if data == "[DONE]":
        return DONE
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise ReplyStreamError(f"an event that is not JSON: {data[:120]!r}") from None
    if not isinstance(chunk, dict):
        raise ReplyStreamError("an event that is not a JSON object")
    error = chunk.get("error")
    if event.event == "error" or error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        raise ReplyStreamError(f"the endpoint failed: {str(message or data)[:300]}")
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return ""  # e.g. a final usage chunk
    first = choices[0]
    d = first.get("delta") if isinstance(first, dict) else None
    piece = d.get("content") if isinstance(d, dict) else None
    if piece is None:
        return ""
    if not isinstance(piece, str):
        raise ReplyStreamError("delta.content is not a string")
    return piece
