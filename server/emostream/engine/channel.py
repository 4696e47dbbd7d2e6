"""The local channel between front-end workers and the engine process.

Control messages are typed structs (:mod:`emostream.engine.messages`), MessagePack-encoded
and length-prefixed on a Unix stream socket (:func:`encode`, :class:`FrameDecoder`:
sans-I/O). Arrays travel through shared memory:

* each client creates one :class:`SlotArena` (``multiprocessing.shared_memory``) of
  ``slots`` fixed-size slots, and tells the engine its name in ``Hello``; a call's input
  (a mel window) is written into a free slot, the engine reads it there and writes the
  output (audio, or an acoustic call's mel) back into the same slot. A slot is freed only
  when the engine answers for its request (``Done``, ``Error`` or ``Dropped``), so the
  engine never writes into a slot that was handed to another call. An array too large for
  a slot travels inline in the message (pickled) instead;
* the engine publishes its load (:class:`~emostream.engine.scheduling.load.LoadSnapshot`)
  in a small :class:`StatusBlock` that every client reads without a round trip (admission).

Both sides are processes of one server on one host: the socket lives in a private
directory (mode 0700), so pickle carries only what this server's own processes wrote.
"""

from __future__ import annotations

import struct
import sys
from collections import deque
from dataclasses import fields
from multiprocessing import shared_memory
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from emostream.engine.messages import AnyMessage, ArraySpec, Message
from emostream.engine.scheduling.load import LoadSnapshot

HEADER = struct.Struct("<I")
MAX_MESSAGE = 1 << 28


def _plain(value: Any) -> Any:
    """What MessagePack cannot take as it is: a numpy scalar (a deadline computed with
    numpy) goes as its Python value."""
    if isinstance(value, np.generic):
        return value.item()
    raise NotImplementedError(f"{type(value).__name__} in an engine message")


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_plain)


def encode(message: Message) -> bytes:
    body = _ENCODER.encode(message)
    return HEADER.pack(len(body)) + body


class FrameDecoder:
    """Bytes in (any split), whole messages out: instances of ``kinds`` (a union of
    :mod:`~emostream.engine.messages` structs, e.g. ``ToEngine``; default: any message).
    A frame that is not one of them raises ``ValueError``."""

    def __init__(self, kinds: Any = AnyMessage) -> None:
        self._buf = bytearray()
        self._decode = msgspec.msgpack.Decoder(kinds).decode

    def feed(self, data: bytes) -> list[Any]:
        buf = self._buf
        buf += data
        out: list[Any] = []
        pos = 0  # the whole messages are cut from the front once, at the end
        decode = self._decode
        while len(buf) - pos >= HEADER.size:
            (n,) = HEADER.unpack_from(buf, pos)
            if n > MAX_MESSAGE:
                del buf[:pos]
                raise ValueError(f"message of {n} bytes")
            end = pos + HEADER.size + n
            if len(buf) < end:
                break
            out.append(decode(buf[pos + HEADER.size : end]))
            pos = end
        del buf[:pos]
        return out


class SlotArena:
    """``slots`` slots of ``slot_bytes`` in one shared-memory block. The creating side
    allocates (:meth:`take`, :meth:`free`); both sides read and write arrays in a slot."""

    def __init__(self, slots: int, slot_bytes: int, *, name: str | None = None) -> None:
        self.slots = slots
        self.slot_bytes = slot_bytes
        self.owner = name is None
        size = slots * slot_bytes
        if name is None:
            self.shm = shared_memory.SharedMemory(create=True, size=size)
        else:
            self.shm = _attach(name)
        self._free: deque[int] = deque(range(slots)) if self.owner else deque()

    @property
    def name(self) -> str:
        return self.shm.name

    def take(self) -> int | None:
        return self._free.popleft() if self._free else None

    def free(self, slot: int) -> None:
        self._free.append(slot)

    @property
    def available(self) -> int:
        return len(self._free)

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.slot_bytes

    def write(self, slot: int, array: npt.NDArray[Any]) -> ArraySpec:
        """Copy ``array`` into ``slot`` (one copy, whatever its strides); its spec."""
        a = np.asarray(array)
        if a.nbytes > self.slot_bytes:
            raise ValueError(f"{a.nbytes} bytes do not fit a slot of {self.slot_bytes}")
        spec = (a.shape, a.dtype.str)
        self.view(slot, spec)[...] = a
        return spec

    def view(self, slot: int, spec: ArraySpec) -> npt.NDArray[Any]:
        """The array ``spec`` in ``slot`` (no copy: valid until the slot is reused)."""
        shape, dtype = spec
        offset = slot * self.slot_bytes
        return np.ndarray(shape, dtype=np.dtype(dtype), buffer=self.shm.buf, offset=offset)

    def read(self, slot: int, spec: ArraySpec, dtype: Any = None) -> npt.NDArray[Any]:
        """A copy of the array ``spec`` in ``slot`` (converted to ``dtype`` if given)."""
        return np.array(self.view(slot, spec), dtype=dtype, copy=True)

    def close(self) -> None:
        self.shm.close()
        if self.owner:
            self.shm.unlink()


def _attach(name: str) -> shared_memory.SharedMemory:
    """Open another process's block without registering it with the resource tracker, which
    would unlink it when this process exits. Python < 3.13 registers every attach, and an
    unregister afterwards is not enough: the front ends share one tracker, whose set of
    names holds a block once however many attach, so the second unregister of the same
    name raised KeyError in the tracker (a traceback in every multi-worker server log)."""
    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg,unused-ignore]
    tracker = shared_memory.resource_tracker  # type: ignore[attr-defined]
    register = tracker.register
    tracker.register = lambda *args, **kwargs: None  # only while this block is opened
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        tracker.register = register


# seq (odd while written), then the snapshot's fields in LoadSnapshot order.
_STATUS = struct.Struct("<Q d q q d d d q q d d")
_FIELDS = tuple(f.name for f in fields(LoadSnapshot))


class StatusBlock:
    """The engine's load, published in shared memory (a seqlock: the writer makes the
    counter odd while it writes; a reader retries until it reads one even value twice)."""

    def __init__(self, *, name: str | None = None) -> None:
        self.owner = name is None
        if name is None:
            self.shm = shared_memory.SharedMemory(create=True, size=_STATUS.size)
            self._buf()[: _STATUS.size] = bytes(_STATUS.size)
        else:
            self.shm = _attach(name)
        self._seq = 0

    @property
    def name(self) -> str:
        return self.shm.name

    def _buf(self) -> memoryview:
        buf = self.shm.buf
        assert buf is not None, "closed"
        return buf

    def publish(self, load: LoadSnapshot) -> None:
        buf = self._buf()
        self._seq += 1
        struct.pack_into("<Q", buf, 0, self._seq * 2 - 1)
        _STATUS.pack_into(buf, 0, self._seq * 2 - 1, *[getattr(load, f) for f in _FIELDS])
        struct.pack_into("<Q", buf, 0, self._seq * 2)

    def read(self) -> LoadSnapshot | None:
        """The latest snapshot (None before the first)."""
        buf = self._buf()
        for _ in range(100):
            values = _STATUS.unpack_from(buf, 0)
            (again,) = struct.unpack_from("<Q", buf, 0)
            if values[0] == again and not again % 2:
                if again == 0:
                    return None
                now, live, queued, busy, demand, p95, late, starts, work, window = values[1:]
                return LoadSnapshot(now, live, queued, busy, demand, p95, late, starts, work,
                                    window)  # fmt: skip
        return None

    def close(self) -> None:
        self.shm.close()
        if self.owner:
            self.shm.unlink()
