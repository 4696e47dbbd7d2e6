"""Contexts on one socket (protocol v1.1), sans I/O.

:class:`ContextRouter` sits in front of
:class:`~emostream.transport.websocket.protocol.SessionProtocol`: it sends each client message
to the protocol state of the context it names and tags the actions that come back with that
context, so the I/O layer knows which utterance each one belongs to. It never touches a socket, a task or a model.

* **v1** (a client that never sends ``context_id``): every message goes to one
  :class:`SessionProtocol`, unchanged; actions come back untagged (context ``None``), and the
  I/O layer sends exactly what protocol v1 sends.
* **v1.1**: a connection's first ``start`` or ``line`` fixes its protocol: with a well-formed
  ``context_id``, v1.1; without one, v1, to the end of the connection (a message of the other
  kind is refused with ``protocol_mismatch``). On a v1.1 connection ``start``, ``text``,
  ``flush``, ``end``, ``cancel`` and ``line`` carry a ``context_id``; each ``start`` opens a
  context with its own :class:`SessionProtocol` (voice, controls, format, segmenter) and a
  channel number for its binary frames (:mod:`emostream.transport.websocket.frames`).
  Several contexts speak at once, up to ``max_contexts`` live ones (``too_many_contexts`` past
  it). A context is live from its ``start`` until the I/O layer reports it finished
  (:meth:`finished`, once its ``done`` is sent), including after a ``cancel``; then its id may
  be started again.
  ``text``/``flush``/``end``/``cancel`` naming no live context get ``unknown_context`` and
  change nothing, except for a context whose ``start`` the I/O layer refused (:meth:`refused`:
  ``busy``): its ``text``/``flush`` are dropped quietly (:class:`Dropped`, counted, not
  answered) until its ``end`` or ``cancel`` (also dropped) or a new ``start`` with its id, as
  v1 does after a refused start.

A ``context_id`` is 1-64 characters of ``A-Z a-z 0-9 . _ : -`` (a UUID fits); ``null`` is the
same as leaving it out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from emostream.transport import schema
from emostream.transport.messages import ProtocolError
from emostream.transport.websocket.frames import ChannelAllocator
from emostream.transport.websocket.protocol import (
    Action,
    BeginUtterance,
    CancelUtterance,
    Dropped,
    SendError,
    SessionProtocol,
    StartRequest,
)

Mode = Literal["unset", "v1", "v1.1"]
MAX_CONTEXT_ID_CHARS: int = schema.definition("context_id")["maxLength"]
_CONTEXT_ID = re.compile(rf"[A-Za-z0-9._:\-]{{1,{MAX_CONTEXT_ID_CHARS}}}")
# Messages addressed to a context on a v1.1 connection.
CONTEXT_TYPES = frozenset({"start", "text", "flush", "end", "cancel", "line"})
PROTOCOL_MISMATCH = "protocol_mismatch"
# Refused contexts whose later messages are dropped quietly, at most (the oldest forgotten).
MAX_REFUSED_CONTEXTS = 64
UNKNOWN_CONTEXT = "unknown_context"
TOO_MANY_CONTEXTS = "too_many_contexts"


@dataclass(frozen=True)
class Routed:
    """An action of the protocol core and the context it belongs to (``None``: v1)."""

    context: str | None
    action: Action


@dataclass
class _Live:
    protocol: SessionProtocol
    request: StartRequest
    channel: int
    cancelling: bool = False


def context_id_field(msg: dict[str, Any]) -> str | None:
    """The message's ``context_id`` (None when absent or ``null``); ``bad_value`` when it is
    not a string of 1-64 characters of ``A-Z a-z 0-9 . _ : -``."""
    value = msg.get("context_id")
    if value is None:
        return None
    if not isinstance(value, str) or not _CONTEXT_ID.fullmatch(value):
        raise ProtocolError(
            "bad_value",
            f"'context_id' must be a string of 1-{MAX_CONTEXT_ID_CHARS} characters from "
            "A-Z a-z 0-9 . _ : -",
        )
    return value


def tagged(body: dict[str, Any], context_id: str | None) -> dict[str, Any]:
    """``body`` with ``context_id`` right after its ``type`` (unchanged for v1: ``None``)."""
    if context_id is None:
        return body
    return {"type": body.get("type"), "context_id": context_id, **body}


class ContextRouter:
    """Protocol state of one connection: v1's single utterance, or v1.1's contexts."""

    def __init__(
        self, make_protocol: Callable[[], SessionProtocol], *, max_contexts: int = 8
    ) -> None:
        self._make = make_protocol
        self.default = make_protocol()  # v1: one utterance at a time (and v1 lines)
        self.max_contexts = max(1, max_contexts)
        self.mode: Mode = "unset"
        self._live: dict[str, _Live] = {}
        self._refused: dict[str, None] = {}  # contexts whose start was refused, oldest first
        self._channels = ChannelAllocator()

    # -- queries ----------------------------------------------------------------------
    @property
    def live(self) -> int:
        """Contexts started and not yet finished."""
        return len(self._live)

    @property
    def idle(self) -> bool:
        """No utterance in progress, in any context."""
        return self.default.idle and not self._live

    def channel_of(self, context_id: str | None) -> int | None:
        live = self._live.get(context_id) if context_id is not None else None
        return None if live is None else live.channel

    def state_of(self, msg: dict[str, Any]) -> str:
        """The state (``idle``/``open``/``ending``/``refused``) of the utterance ``msg`` addresses; a
        cancelling or unknown context, or a malformed id, is ``idle``."""
        raw = msg.get("context_id")
        if raw is None:
            return self.default.state if self.mode != "v1.1" else "idle"
        live = self._live.get(raw) if isinstance(raw, str) else None
        return "idle" if live is None or live.cancelling else live.protocol.state

    def may_start(self, msg: dict[str, Any]) -> bool:
        """Whether a ``start`` like ``msg`` would get past the connection's state (its fields
        are not checked): worth preparing, e.g. embedding its reference clip."""
        try:
            context_id = context_id_field(msg)
        except ProtocolError:
            return False
        if context_id is None:
            return self.mode != "v1.1" and self.default.idle
        return (
            self.mode != "v1"
            and context_id not in self._live
            and len(self._live) < self.max_contexts
        )

    # -- client messages --------------------------------------------------------------
    def receive_message(self, msg: dict[str, Any]) -> list[Routed]:
        """A message already parsed by :func:`~emostream.transport.messages.load_message`."""
        kind = msg.get("type")
        if not isinstance(kind, str) or kind not in CONTEXT_TYPES:
            return self._v1(msg)  # clear, unknown types: the connection's, as in v1
        try:
            context_id = context_id_field(msg)
        except ProtocolError as exc:
            return [Routed(None, SendError(exc.code, exc.message))]
        if context_id is None:
            if self.mode == "v1.1":
                return [Routed(None, SendError(PROTOCOL_MISMATCH, "this connection speaks "
                               "v1.1 (contexts): every message needs a 'context_id'"))]  # fmt: skip
            if kind in ("start", "line") and self.mode == "unset":
                self.mode = "v1"
            return self._v1(msg)
        if self.mode == "v1":
            return [Routed(context_id, SendError(PROTOCOL_MISMATCH, "this connection speaks "
                           "v1 (its first start had no 'context_id'); open another connection "
                           "for contexts"))]  # fmt: skip
        if kind in ("start", "line"):
            self.mode = "v1.1"
        if kind == "line":  # queued now; a context when it speaks (start_line)
            return [Routed(context_id, a) for a in self.default.receive_message(msg)]
        if kind == "start":
            return self._start(context_id, msg)
        live = self._live.get(context_id)
        if live is None and context_id in self._refused:  # its one answer was the refusal
            if kind in ("end", "cancel"):
                del self._refused[context_id]
            return [Routed(context_id, Dropped(kind))]
        if live is None:
            return [Routed(context_id, SendError(UNKNOWN_CONTEXT, f"no context {context_id!r} "
                           "on this connection (never started, or already done)"))]  # fmt: skip
        if live.cancelling:
            if kind == "cancel":
                return []  # its done is on the way
            return [Routed(context_id, SendError("already_ended", f"{kind!r} after 'cancel' "
                           f"of context {context_id!r}; wait for its done"))]  # fmt: skip
        actions = live.protocol.receive_message(msg)
        if any(isinstance(a, CancelUtterance) for a in actions):
            live.cancelling = True
        return [Routed(context_id, a) for a in actions]

    def _v1(self, msg: dict[str, Any]) -> list[Routed]:
        return [Routed(None, a) for a in self.default.receive_message(msg)]

    def _start(self, context_id: str, msg: dict[str, Any]) -> list[Routed]:
        self._refused.pop(context_id, None)
        refused = self._refuse_start(context_id)
        if refused is not None:
            return [Routed(context_id, refused)]
        return self._open(context_id, self._make(), lambda p: p.receive_message(msg))

    def _refuse_start(self, context_id: str) -> SendError | None:
        if context_id in self._live:
            return SendError("already_started", f"context {context_id!r} is in progress; end "
                             "or cancel it and wait for its done, or use another id")  # fmt: skip
        if len(self._live) >= self.max_contexts:
            return SendError(TOO_MANY_CONTEXTS, f"at most {self.max_contexts} live contexts per "
                             "connection; cancel or end one and wait for its done")  # fmt: skip
        return None

    def _open(
        self,
        context_id: str,
        protocol: SessionProtocol,
        begin: Callable[[SessionProtocol], list[Action]],
    ) -> list[Routed]:
        """Run ``begin`` on a new context's protocol; register the context when it begins an
        utterance, with a channel in its ``started`` event."""
        actions = begin(protocol)
        if actions and isinstance(actions[0], BeginUtterance):
            first = actions[0]
            channel = self._channels.take()
            self._live[context_id] = _Live(protocol, first.request, channel)
            delay = protocol.opus_delay_ms if first.request.fmt.codec == "opus" else 0.0
            started = {"type": "started", "context_id": context_id, "channel": channel,
                       "codec_delay_ms": delay, **first.started_event}  # fmt: skip
            actions = [BeginUtterance(first.request, started), *actions[1:]]
        return [Routed(context_id, a) for a in actions]

    # -- the I/O layer reports ----------------------------------------------------------
    def start_line(
        self, line_id: str, text: str, fields: dict[str, Any], speed_factor: float = 1.0
    ) -> list[Routed]:
        """Begin a queued line (see :meth:`SessionProtocol.start_line`): in the v1 state, or,
        for a line queued with a ``context_id`` (in its ``fields``), as that context."""
        context_id = fields.get("context_id")
        if not isinstance(context_id, str):
            return [Routed(None, a) for a in self.default.start_line(line_id, text, fields,
                                                                     speed_factor)]  # fmt: skip
        refused = self._refuse_start(context_id)
        if refused is not None:
            return [Routed(context_id, refused)]
        plain = {k: v for k, v in fields.items() if k != "context_id"}
        return self._open(
            context_id, self._make(), lambda p: p.start_line(line_id, text, plain, speed_factor)
        )

    def finished(self, context_id: str | None, request: StartRequest) -> None:
        """The utterance of ``request`` in ``context_id`` is over (its ``done`` sent, or its
        start refused after all): the context and its channel are free."""
        if context_id is None:
            if self.default.request is request:
                self.default.utterance_finished()
            return
        live = self._live.get(context_id)
        if live is not None and live.request is request:
            del self._live[context_id]
            self._channels.release(live.channel)

    def refused(self, context_id: str | None, request: StartRequest) -> None:
        """The client's ``start`` of ``request`` was refused after all (``busy``; its error
        sent): the context is free, and its later ``text``/``flush``/``end``/``cancel`` are
        dropped quietly (v1: :meth:`SessionProtocol.start_refused`)."""
        if context_id is None:
            self.default.start_refused(request)
            return
        self.finished(context_id, request)
        self._refused[context_id] = None
        while len(self._refused) > MAX_REFUSED_CONTEXTS:
            del self._refused[next(iter(self._refused))]
