"""The engine channel's messages (:mod:`emostream.engine.channel`): one typed struct per kind.

The shape of vLLM's v1 engine, whose front ends and engine core exchange msgspec structs
(``EngineCoreRequest``, ``EngineCoreOutputs``) tagged with their type. Each message here is
a :class:`msgspec.Struct` encoded as a MessagePack array led by its tag (``["call", rid,
stage, ...]``); a receiver decodes its direction's union (:data:`ToEngine`,
:data:`ToClient`: a wrong tag or a field of the wrong type raises ``ValueError``) and
dispatches on the class. Trailing fields with a default may be left out: a ``call`` sent
without ``need_by`` (the older 10-field call) is taken with ``need_by=None``.

Front end -> engine:

* :class:`Hello`: the client's slot arena (``multiprocessing.shared_memory`` name, bytes a
  slot, slots);
* :class:`Call`: one model call of a stage;
* :class:`Cancel`: drop a stream's queued calls.

Engine -> front end:

* :class:`Welcome`: the answer to ``hello``: the engine's status block and the padded
  window lengths of each decode stage key;
* :class:`Done`, :class:`Error`, :class:`Dropped` (each a :class:`Reply` to a call's
  ``rid``): its result; its failure; its stream was cancelled.

Values that are not plain data (an acoustic call's request, an answer that did not go
through the slot) travel pickled in a ``bytes`` field (:func:`pickled`, :func:`unpickled`):
both sides are processes of one server, on a socket in a private directory.
"""

from __future__ import annotations

import pickle
from typing import Any

import msgspec

# An array in a slot: (shape, dtype.str).
ArraySpec = tuple[tuple[int, ...], str]


class Message(msgspec.Struct, array_like=True, gc=False):
    """A message of the channel (the tag: each kind's ``tag=``)."""


# -- front end -> engine -------------------------------------------------------------------


class Hello(Message, tag="hello"):
    shm_name: str  # the client's SlotArena
    slot_bytes: int
    slots: int


class Call(Message, tag="call"):
    """One call of ``stage``. ``stream``: the stream's id ("" for an acoustic call: a
    one-off, untracked); ``due``: when the result is wanted (the deadline); ``length``: the
    input's length (frames, or an acoustic request's units); ``slot``: the client's slot for
    the input and the answer (-1: none free); ``spec``: the input array in that slot, or
    None; ``inline``: the pickled input when it is not in the slot (an acoustic request, a
    window too large for a slot); ``pad_side``: a decode window's pad side ("left" or
    "right"); ``need_by``: when the listener runs out without the call (None: ``due``)."""

    rid: int
    stage: str
    stream: str
    due: float
    length: int
    slot: int
    spec: ArraySpec | None
    inline: bytes | None
    pad_side: str | None
    need_by: float | None = None


class Cancel(Message, tag="cancel"):
    stream: str


ToEngine = Hello | Call | Cancel


# -- engine -> front end -------------------------------------------------------------------


class Welcome(Message, tag="welcome"):
    status_name: str  # the engine's StatusBlock
    lengths: dict[str, tuple[int, ...]] = msgspec.field(default_factory=dict)


class Reply(Message):
    """An answer to the call ``rid``."""

    rid: int


class Done(Reply, tag="done"):
    """``spec``: the answer's array in the call's slot, or None; ``inline`` (pickled): the
    whole answer when ``spec`` is None, else what the array leaves out (an acoustic answer's
    ``(unit_frames, units, before, after)``) or None."""

    spec: ArraySpec | None
    inline: bytes | None


class Error(Reply, tag="error"):
    text: str


class Dropped(Reply, tag="dropped"):
    """The call was dropped: its stream was cancelled (before it ran, or while it ran)."""


ToClient = Welcome | Done | Error | Dropped
AnyMessage = ToEngine | ToClient


def pickled(value: Any) -> bytes | None:
    """``value`` for an ``inline`` field (None stays None)."""
    return None if value is None else pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def unpickled(data: bytes | None) -> Any:
    return None if data is None else pickle.loads(data)
