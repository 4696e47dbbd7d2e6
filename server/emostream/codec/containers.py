"""Streamable containers for HTTP downloads: Ogg Opus pages and a WAV header.

Both are written incrementally so an HTTP body can stream while audio is made.
"""

from __future__ import annotations

import struct

_OGG_CRC_TABLE: list[int] = []
for _i in range(256):
    _r = _i << 24
    for _ in range(8):
        _r = ((_r << 1) ^ 0x04C11DB7) if _r & 0x80000000 else (_r << 1)
    _OGG_CRC_TABLE.append(_r & 0xFFFFFFFF)


def _ogg_crc(data: bytes) -> int:
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC_TABLE[((crc >> 24) & 0xFF) ^ b]
    return crc


class OggOpusWriter:
    """Writes Opus packets into an Ogg stream (RFC 7845), one page per call to ``pages``.

    Granule positions count 48 kHz samples whatever the encoder rate.
    """

    def __init__(self, *, sample_rate: int, pre_skip: int, serial: int = 0x454D4F53) -> None:
        self.serial = serial
        self.sample_rate = sample_rate
        self._scale = 48000 // sample_rate
        self.pre_skip = pre_skip * self._scale
        self._seq = 0
        self._granule = 0

    def header(self) -> bytes:
        head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, self.pre_skip, self.sample_rate, 0, 0)
        vendor = b"emostream"
        tags = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
        return self._page([head], granule=0, flags=0x02) + self._page([tags], granule=0)

    def pages(self, packets: list[bytes], samples_per_packet: int, *, last: bool = False) -> bytes:
        """Packets into one or more pages; ``last`` marks the end of the stream."""
        out = b""
        batch: list[bytes] = []
        segs = 0
        for i, pkt in enumerate(packets):
            need = len(pkt) // 255 + 1
            if batch and segs + need > 255:
                out += self._page(batch, granule=self._granule)
                batch, segs = [], 0
            batch.append(pkt)
            segs += need
            self._granule += samples_per_packet * self._scale
        if batch or last:
            out += self._page(batch, granule=self._granule, flags=0x04 if last else 0)
        return out

    def _page(self, packets: list[bytes], *, granule: int, flags: int = 0) -> bytes:
        lacing = b""
        for pkt in packets:
            lacing += b"\xff" * (len(pkt) // 255) + bytes([len(pkt) % 255])
        hdr = b"OggS" + struct.pack(
            "<BBqIIIB", 0, flags, granule, self.serial, self._seq, 0, len(lacing)
        )
        page = hdr + lacing + b"".join(packets)
        crc = _ogg_crc(page)
        self._seq += 1
        return page[:22] + struct.pack("<I", crc) + page[26:]


def wav_header(
    *, sample_rate: int, channels: int = 1, bits: int = 16, data_bytes: int | None = None
) -> bytes:
    """A RIFF/WAVE header. ``data_bytes=None`` writes the 'unknown length' sizes
    (0xFFFFFFFF) that streaming players accept."""
    size = 0xFFFFFFFF if data_bytes is None else data_bytes
    riff = 0xFFFFFFFF if data_bytes is None else 36 + data_bytes
    block = channels * bits // 8
    return (
        b"RIFF" + struct.pack("<I", riff) + b"WAVE"
        + b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block, block, bits)
        + b"data" + struct.pack("<I", size)
    )  # fmt: skip
