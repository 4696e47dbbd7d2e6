"""Binary audio frames of protocol v1.1 (contexts), sans I/O.

On a v1 connection a binary frame is the bare payload (one 20 ms Opus packet, or 20 ms of PCM
s16le). On a v1.1 connection every binary frame starts with an 8-byte header that says which
context it belongs to and where it falls in that context's audio::

     byte 0     byte 1     bytes 2-3            bytes 4-7
    +----------+----------+--------------------+----------------------------------+---------
    | version  | flags    | channel            | sequence                         | payload
    | 0x01     | 0x00     | uint16, big-endian | uint32, big-endian               | ...
    +----------+----------+--------------------+----------------------------------+---------

``channel`` is the number the server gave the context in its ``started`` event (1-65535, unique
among the connection's live contexts); ``sequence`` counts the context's frames from 0, so a
gap is visible. ``flags`` is 0 (reserved: a client ignores bits it does not know). The header
is 8 bytes, so PCM s16le payloads stay 2-byte aligned.

:class:`ChannelAllocator` hands out channel numbers: the lowest number not used since the last
wrap that is not live, so a client never sees a channel reused while frames of its previous
owner could still be in flight.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

FRAME_VERSION = 1
HEADER = struct.Struct(">BBHI")
HEADER_BYTES = HEADER.size  # 8
MAX_CHANNEL = 0xFFFF
MAX_SEQUENCE = 0xFFFFFFFF


class FrameError(ValueError):
    """A binary frame that is not a v1.1 audio frame."""


@dataclass(frozen=True)
class AudioFrame:
    channel: int
    sequence: int
    payload: bytes
    flags: int = 0


def encode_frame(channel: int, sequence: int, payload: bytes, flags: int = 0) -> bytes:
    """The v1.1 binary frame for ``payload`` of ``channel``'s frame number ``sequence``."""
    if not 1 <= channel <= MAX_CHANNEL:
        raise FrameError(f"channel {channel} is outside 1-{MAX_CHANNEL}")
    if not 0 <= flags <= 0xFF:
        raise FrameError(f"flags {flags} do not fit a byte")
    return HEADER.pack(FRAME_VERSION, flags, channel, sequence & MAX_SEQUENCE) + payload


def decode_frame(data: bytes | bytearray | memoryview) -> AudioFrame:
    """Split a v1.1 binary frame into its header fields and payload."""
    if len(data) < HEADER_BYTES:
        raise FrameError(f"a frame has an {HEADER_BYTES}-byte header; got {len(data)} bytes")
    version, flags, channel, sequence = HEADER.unpack_from(data)
    if version != FRAME_VERSION:
        raise FrameError(f"frame header version {version}; expected {FRAME_VERSION}")
    if channel == 0:
        raise FrameError("channel 0 is never assigned")
    return AudioFrame(channel, sequence, bytes(data[HEADER_BYTES:]), flags)


@dataclass
class ChannelAllocator:
    """Channel numbers for a connection's contexts (1..``limit``), never two live at once.

    Numbers go up from 1 and wrap past ``limit``, skipping live ones, so a freed number is
    reused as late as possible."""

    limit: int = MAX_CHANNEL
    _next: int = 1
    _live: set[int] = field(default_factory=set)

    def take(self) -> int:
        if len(self._live) >= self.limit:
            raise FrameError("every channel number is in use")
        while self._next in self._live:
            self._next = self._next % self.limit + 1
        channel = self._next
        self._live.add(channel)
        self._next = channel % self.limit + 1
        return channel

    def release(self, channel: int) -> None:
        self._live.discard(channel)

    def __len__(self) -> int:
        return len(self._live)
