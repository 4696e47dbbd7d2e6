"""Bilibili live danmaku's binary packets over WebSocket (sans-I/O: bytes in, packets out).

Every packet starts with a 16-byte big-endian header: packet length (uint32, header
included), header length (uint16, 16), protocol version (uint16), operation (uint32) and
sequence (uint32). Operations: 7 auth (client → server, a JSON body), 8 auth reply
(``{"code":0}``), 2 heartbeat (client, every 30 s), 3 heartbeat reply (a uint32: the room's
popularity), 5 messages (JSON with a ``cmd``). A version 2 body is zlib-compressed, version 3
brotli-compressed; either holds more packets back to back (each version 0: one JSON object).
One WebSocket message may hold several packets.

:func:`decode` takes one WebSocket message and returns what it holds: :class:`Packet` for
each operation and :class:`Malformed` for each part that cannot be read (a short or
inconsistent header, a body that does not decompress or is not JSON, or is too large), so
that one bad part costs that part only.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

HEADER = struct.Struct(">IHHII")
HEADER_LEN = 16
OP_HEARTBEAT, OP_HEARTBEAT_REPLY, OP_MESSAGE, OP_AUTH, OP_AUTH_REPLY = 2, 3, 5, 7, 8
VER_JSON, VER_INT, VER_ZLIB, VER_BROTLI = 0, 1, 2, 3
MAX_DECOMPRESSED = 8 * 1024 * 1024  # one compressed batch inflates to at most this
MAX_DEPTH = 2  # a compressed batch holds plain packets; one inside another is refused


@dataclass(frozen=True)
class Packet:
    op: int
    body: Any  # op 5: the message (a dict); op 3: popularity (int); op 8: the reply (dict)


@dataclass(frozen=True)
class Malformed:
    reason: str


def encode(op: int, body: bytes | str | dict[str, Any] = b"", *, ver: int = VER_INT,
           seq: int = 1) -> bytes:  # fmt: skip
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if isinstance(body, str):
        body = body.encode("utf-8")
    return HEADER.pack(HEADER_LEN + len(body), HEADER_LEN, ver, op, seq) + body


def auth(room_id: int, *, key: str = "", uid: int = 0, protover: int = VER_ZLIB) -> bytes:
    """The auth packet: ``uid`` 0 is anonymous; ``key`` the token from getDanmuInfo."""
    body: dict[str, Any] = {"uid": uid, "roomid": room_id, "protover": protover,
                            "platform": "web", "type": 2}  # fmt: skip
    if key:
        body["key"] = key
    return encode(OP_AUTH, body)


def heartbeat() -> bytes:
    return encode(OP_HEARTBEAT, b"[object Object]")


def _brotli(data: bytes) -> bytes:
    try:
        import brotli  # the [live] extra
    except ImportError:
        raise ValueError("a brotli body (version 3) and no brotli module: pip install "
                         "'emostream[live]'") from None  # fmt: skip
    d = brotli.Decompressor()
    out = d.process(data, output_buffer_limit=MAX_DECOMPRESSED + 1)
    if len(out) > MAX_DECOMPRESSED or not d.is_finished():
        raise ValueError(f"the brotli body inflates past {MAX_DECOMPRESSED} bytes, or is cut")
    return bytes(out)


def _inflate(data: bytes) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, MAX_DECOMPRESSED + 1)
    if len(out) > MAX_DECOMPRESSED:
        raise ValueError(f"the zlib body inflates past {MAX_DECOMPRESSED} bytes")
    if not d.eof:
        raise ValueError("the zlib body is cut short")
    return out


def decode(data: bytes, *, _depth: int = 0) -> list[Packet | Malformed]:
    out: list[Packet | Malformed] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEADER_LEN:
            out.append(Malformed(f"{len(data) - pos} bytes left: shorter than a header"))
            break
        length, header_len, ver, op, _seq = HEADER.unpack_from(data, pos)
        if header_len < HEADER_LEN or length < header_len or pos + length > len(data):
            out.append(Malformed(f"a header says {length} bytes (header {header_len}) with "
                                 f"{len(data) - pos} left"))  # fmt: skip
            break  # the rest cannot be framed
        body = data[pos + header_len : pos + length]
        pos += length
        out.extend(_packet(op, ver, body, _depth))
    return out


def _packet(op: int, ver: int, body: bytes, depth: int) -> list[Packet | Malformed]:
    if op == OP_HEARTBEAT_REPLY:
        if len(body) < 4:
            return [Malformed("a heartbeat reply without its popularity")]
        return [Packet(op, int.from_bytes(body[:4], "big"))]
    if op not in (OP_MESSAGE, OP_AUTH_REPLY):
        return [Packet(op, None)]  # known to the platform, nothing to read here
    if ver in (VER_ZLIB, VER_BROTLI):
        if depth >= MAX_DEPTH - 1:
            return [Malformed("a compressed batch inside a compressed batch")]
        try:
            inner = _inflate(body) if ver == VER_ZLIB else _brotli(body)
        except (zlib.error, ValueError) as exc:
            return [Malformed(f"version {ver} body: {exc}")]
        except Exception as exc:  # noqa: BLE001 - brotli.error is not a named import here
            return [Malformed(f"version {ver} body: {type(exc).__name__}: {exc}")]
        return decode(inner, _depth=depth + 1)
    if ver not in (VER_JSON, VER_INT):
        return [Malformed(f"unknown protocol version {ver}")]
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [Malformed(f"operation {op}: not JSON ({exc})")]
    if not isinstance(parsed, dict):
        return [Malformed(f"operation {op}: JSON {type(parsed).__name__}, not an object")]
    return [Packet(op, parsed)]
