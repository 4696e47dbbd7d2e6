"""A spoken utterance as the phrase cache keeps it (sans-I/O): its packets and events, in order.

:class:`PhraseRecorder` takes the items a live stream yields (:class:`Packet`, :class:`Event`);
:meth:`PhraseRecorder.finish` gives the :class:`Phrase` only for a stream that ran to its end
and stayed within ``max_bytes`` (a stream cut short never calls it). A phrase holds its packets
in one buffer and its events as JSON text, so its size in bytes (:attr:`Phrase.nbytes`) is what
it really costs, and :meth:`Phrase.items` gives fresh objects each time (the transport may
change an event it is handed, e.g. ``words`` offsets). :meth:`Phrase.encode` /
:func:`decode_phrase` are the bytes stored in Redis.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from emostream.stream.streamer import Event, Packet

_MAGIC = b"ESPH"
_VERSION = 1
_HEADER = struct.Struct("<4sBIII")  # magic, version, meta bytes, packets, audio bytes


def _u32() -> array[int]:
    out = array("I")
    if out.itemsize != 4:  # pragma: no cover - every platform CPython runs on today
        out = array("L")
    return out


@dataclass(frozen=True)
class Phrase:
    """One complete utterance: packet bytes, per-packet lengths and audio samples, and the
    events with the number of packets that came before each."""

    audio: bytes
    lengths: array[int]
    samples: array[int]
    events: tuple[tuple[int, str], ...]  # (packets before it, JSON body)
    segments: int

    @property
    def packets(self) -> int:
        return len(self.lengths)

    @property
    def audio_samples(self) -> int:
        """Audio samples at the output rate (the last packet's padding excluded)."""
        return sum(self.samples)

    @property
    def nbytes(self) -> int:
        """What the phrase holds: packet bytes, the packet tables and the events' JSON."""
        tables = self.lengths.itemsize * len(self.lengths) * 2
        return len(self.audio) + tables + sum(len(body) for _, body in self.events)

    def items(self) -> Iterator[Packet | Event]:
        """The stream as it was recorded (new objects every call)."""
        events = iter(self.events)
        upcoming = next(events, None)
        offset = 0
        view = memoryview(self.audio)
        for i in range(len(self.lengths) + 1):
            while upcoming is not None and upcoming[0] == i:
                yield Event(json.loads(upcoming[1]))
                upcoming = next(events, None)
            if i == len(self.lengths):
                break
            n = self.lengths[i]
            yield Packet(bytes(view[offset : offset + n]), self.samples[i])
            offset += n

    def encode(self) -> bytes:
        """Bytes for an external store (:func:`decode_phrase` reads them back)."""
        meta = json.dumps(
            {"segments": self.segments, "events": [list(e) for e in self.events]},
            ensure_ascii=False,
        ).encode("utf-8")
        lengths, samples = _u32(), _u32()
        lengths.extend(self.lengths)
        samples.extend(self.samples)
        if sys.byteorder != "little":  # pragma: no cover
            lengths.byteswap()
            samples.byteswap()
        header = _HEADER.pack(_MAGIC, _VERSION, len(meta), len(lengths), len(self.audio))
        return b"".join((header, meta, lengths.tobytes(), samples.tobytes(), self.audio))


def decode_phrase(raw: bytes) -> Phrase | None:
    """A phrase from :meth:`Phrase.encode`'s bytes; None when they are not one (another
    format version, truncated, inconsistent)."""
    try:
        magic, version, meta_n, packets, audio_n = _HEADER.unpack_from(raw)
        if magic != _MAGIC or version != _VERSION:
            return None
        pos = _HEADER.size
        meta = json.loads(raw[pos : pos + meta_n].decode("utf-8"))
        pos += meta_n
        lengths, samples = _u32(), _u32()
        lengths.frombytes(raw[pos : pos + 4 * packets])
        pos += 4 * packets
        samples.frombytes(raw[pos : pos + 4 * packets])
        pos += 4 * packets
        if sys.byteorder != "little":  # pragma: no cover
            lengths.byteswap()
            samples.byteswap()
        audio = raw[pos:]
        if len(audio) != audio_n or sum(lengths) != audio_n:
            return None
        events = tuple((int(at), str(body)) for at, body in meta["events"])
        if any(not 0 <= at <= packets for at, _ in events):
            return None
        return Phrase(audio, lengths, samples, events, int(meta["segments"]))
    except (struct.error, ValueError, KeyError, TypeError):
        return None


class PhraseRecorder:
    """Records a live stream's items; gives up (and frees what it held) past ``max_bytes``."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.overflowed = False
        self._audio = bytearray()
        self._lengths = _u32()
        self._samples = _u32()
        self._events: list[tuple[int, str]] = []
        self._size = 0
        self._segments = 0

    def add(self, item: Packet | Event) -> None:
        """Record one item (before the transport sees it: it may change events)."""
        if self.overflowed:
            return
        if isinstance(item, Packet):
            self._audio += item.data
            self._lengths.append(len(item.data))
            self._samples.append(item.samples)
            self._size += len(item.data) + 2 * self._lengths.itemsize
        else:
            body = json.dumps(item.body, ensure_ascii=False, separators=(",", ":"))
            self._events.append((len(self._lengths), body))
            self._size += len(body)
            if item.body.get("type") == "segment":
                self._segments += 1
        if self._size > self.max_bytes:
            self.overflowed = True
            self._audio = bytearray()
            self._lengths = _u32()
            self._samples = _u32()
            self._events = []

    def finish(self) -> Phrase | None:
        """The phrase of a stream that ended normally; None when it overflowed or held no
        audio."""
        if self.overflowed or not self._lengths:
            return None
        return Phrase(
            bytes(self._audio), self._lengths, self._samples, tuple(self._events), self._segments
        )
