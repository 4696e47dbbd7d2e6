"""Contexts on one socket (protocol v1.1) against a real loopback server.

The voice is ``joe`` with its VITS noise off, and the phrase cache is off, so the same text
with the same voice and controls renders to the same samples: each context's audio, taken
out of the interleaved stream by its frame header, must equal the same text spoken alone
on a fresh v1 socket, sample for sample."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
import websockets

from emostream.transport.websocket.frames import decode_frame
from tests.conftest import ServerThread
from tests.transport.conftest import collect

PCM24 = {"codec": "pcm_s16le", "sample_rate": 24000}
FRAME_BYTES = 960  # 20 ms of s16le at 24 kHz
TEXT_A = "The quick brown fox jumps over the lazy dog, and then it runs far away."
TEXT_B = "Two voices on one socket is what a bot needs for its turns."
LONG = " ".join(f"This is sentence number {n} of a long answer." for n in range(1, 9))
V1_STARTED = {"type", "stream_id", "sample_rate", "codec", "frame_ms", "voice", "controls"}
V1_DONE = {"type", "audio_ms", "first_audio_ms", "rtf", "cancelled", "segments"}


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """``joe`` without VITS noise (deterministic), no phrase cache, 3 contexts per socket."""
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog
    from emostream.voices.piper_voice import PiperVoice

    joe = PiperVoice.load_default(threads=1)
    joe.noise_scale = joe.noise_w = 0.0
    settings = Settings(
        max_streams=8, phrase_cache_bytes=0, max_contexts_per_connection=3,
        data_dir=str(tmp_path_factory.mktemp("contexts")),
    )  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


def connect(server: ServerThread) -> Any:
    return websockets.connect(server.ws_url, compression=None, max_size=None)


def send(ws: Any, **msg: Any) -> Any:
    return ws.send(json.dumps(msg))


async def solo(server: ServerThread, text: str | list[str], **start: Any) -> bytes:
    """``text`` spoken alone on a fresh v1 socket (a list: one ``text`` message each, as a
    context sent it: the segments depend on how the text arrives): its PCM."""
    async with connect(server) as ws:
        await send(ws, type="start", format=PCM24, **start)
        for part in [text] if isinstance(text, str) else text:
            await send(ws, type="text", text=part)
        await send(ws, type="end")
        events, frames = await collect(ws)
    assert events[-1]["type"] == "done" and not events[-1]["cancelled"], events
    return b"".join(frames)


@dataclass
class Wire:
    """What a v1.1 socket received: events, and each binary frame as (channel, seq, payload)
    in arrival order (``order`` holds "e"/"f" marks: events and frames interleaved)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    frames: list[tuple[int, int, bytes]] = field(default_factory=list)
    order: list[tuple[str, int]] = field(default_factory=list)  # ("f", channel) / ("e", index)

    def channel(self, context: str) -> int:
        (started,) = [e for e in self.events if e["type"] == "started"
                      and e["context_id"] == context]  # fmt: skip
        channel: int = started["channel"]
        return channel

    def done(self, context: str) -> dict[str, Any]:
        (done,) = [e for e in self.events if e["type"] == "done" and e["context_id"] == context]
        return done

    def pcm(self, context: str) -> bytes:
        """The context's payloads, after checking their sequence numbers run 0, 1, 2, ..."""
        channel = self.channel(context)
        mine = [(seq, payload) for ch, seq, payload in self.frames if ch == channel]
        assert [seq for seq, _ in mine] == list(range(len(mine))), f"gap in {context}"
        return b"".join(payload for _, payload in mine)

    def frames_after_done(self, context: str) -> int:
        channel = self.channel(context)
        done_at = self.order.index(("e", self.events.index(self.done(context))))
        return sum(1 for kind, ch in self.order[done_at:] if kind == "f" and ch == channel)


async def receive(ws: Any, wire: Wire, until_done: set[str], timeout: float = 60) -> None:
    """Read into ``wire`` until every context in ``until_done`` has had its ``done``."""
    async with asyncio.timeout(timeout):
        while until_done:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                frame = decode_frame(msg)
                wire.frames.append((frame.channel, frame.sequence, frame.payload))
                wire.order.append(("f", frame.channel))
                continue
            event = json.loads(msg)
            wire.order.append(("e", len(wire.events)))
            wire.events.append(event)
            if event["type"] == "done":
                until_done.discard(event["context_id"])


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64)


def assert_same_audio(got: bytes, want: bytes) -> None:
    """Sample for sample (a mismatch reports the correlation, to tell drift from garbage)."""
    if got != want:
        n = min(len(got), len(want)) // 2
        corr = np.corrcoef(samples(got)[:n], samples(want)[:n])[0, 1] if n > 1 else 0.0
        raise AssertionError(f"{len(got)} vs {len(want)} bytes, correlation {corr:.4f}")


async def test_two_contexts_interleaved_each_decodes_to_its_own_text(
    quiet_server: ServerThread, server_log: list[logging.LogRecord]
) -> None:
    half = len(TEXT_A) // 2
    want_a = await solo(quiet_server, [TEXT_A[:half], TEXT_A[half:]])
    want_b = await solo(quiet_server, TEXT_B, speed=1.25)
    wire = Wire()
    async with connect(quiet_server) as ws:
        await send(ws, type="start", context_id="turn-a", format=PCM24, word_timestamps=True)
        await send(ws, type="start", context_id="turn-b", format=PCM24, speed=1.25)
        await send(ws, type="text", context_id="turn-a", text=TEXT_A[:half])
        await send(ws, type="text", context_id="turn-b", text=TEXT_B)
        await send(ws, type="text", context_id="turn-a", text=TEXT_A[half:])
        await send(ws, type="end", context_id="turn-b")
        await send(ws, type="end", context_id="turn-a")
        await receive(ws, wire, {"turn-a", "turn-b"})
    assert {e.get("context_id") for e in wire.events} == {"turn-a", "turn-b"}, wire.events
    assert wire.channel("turn-a") != wire.channel("turn-b")
    assert all(len(payload) == FRAME_BYTES for _, _, payload in wire.frames)
    # Both spoke at once: their frames interleave on the wire.
    channels = [ch for kind, ch in wire.order if kind == "f"]
    switches = sum(1 for x, y in pairwise(channels) if x != y)
    assert switches >= 2, channels
    assert_same_audio(wire.pcm("turn-a"), want_a)
    assert_same_audio(wire.pcm("turn-b"), want_b)
    done_a, done_b = wire.done("turn-a"), wire.done("turn-b")
    assert not done_a["cancelled"] and not done_b["cancelled"]
    # With word timestamps: the audio sent, the last frame's padding excluded.
    assert 0 <= len(want_a) // 2 - done_a["sent_samples"] < FRAME_BYTES // 2
    assert "sent_samples" not in done_b
    words = [w["word"] for e in wire.events if e["type"] == "words" for w in e["words"]]
    assert words[:3] == ["The", "quick", "brown"] and all(
        e["context_id"] == "turn-a" for e in wire.events if e["type"] == "words"
    )
    assert [r.getMessage() for r in server_log] == []


async def test_cancel_of_one_context_leaves_the_other_gapless(quiet_server: ServerThread) -> None:
    want_b = await solo(quiet_server, TEXT_B)
    want_c = await solo(quiet_server, "The next turn.")
    wire = Wire()
    async with connect(quiet_server) as ws:
        await send(ws, type="start", context_id="long", format=PCM24)
        await send(ws, type="text", context_id="long", text=LONG)
        await send(ws, type="end", context_id="long")
        await send(ws, type="start", context_id="b", format=PCM24)
        await send(ws, type="text", context_id="b", text=TEXT_B)
        await send(ws, type="end", context_id="b")
        async with asyncio.timeout(30):  # until both have sent audio
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    frame = decode_frame(msg)
                    wire.frames.append((frame.channel, frame.sequence, frame.payload))
                    wire.order.append(("f", frame.channel))
                else:
                    wire.order.append(("e", len(wire.events)))
                    wire.events.append(json.loads(msg))
                if len({ch for ch, _, _ in wire.frames}) == 2 and len(wire.frames) >= 10:
                    break
        # Barge-in: cancel the long turn and start the next one at once.
        await send(ws, type="cancel", context_id="long")
        await send(ws, type="start", context_id="c", format=PCM24)
        await send(ws, type="text", context_id="c", text="The next turn.")
        await send(ws, type="end", context_id="c")
        await receive(ws, wire, {"long", "b", "c"})
    done_long = wire.done("long")
    assert done_long["cancelled"] is True and wire.frames_after_done("long") == 0
    assert len(wire.pcm("long")) < len(want_b) * 4  # cut well short of ~20 s
    assert wire.done("b")["cancelled"] is False and wire.done("c")["cancelled"] is False
    assert_same_audio(wire.pcm("b"), want_b)
    assert_same_audio(wire.pcm("c"), want_c)


async def test_a_v1_client_sees_v1(quiet_server: ServerThread) -> None:
    """No context_id: bare 20 ms frames (no header), the same samples as v1.1's payloads,
    and events with exactly the v1 fields."""
    async with connect(quiet_server) as ws:
        await send(ws, type="start", format=PCM24)
        await send(ws, type="text", text=TEXT_B)
        await send(ws, type="end")
        events, frames = await collect(ws)
        await send(ws, type="flush")
        error = json.loads(await ws.recv())
    assert set(events[0]) == V1_STARTED and set(events[-1]) == V1_DONE
    assert all(set(e) == {"type", "index", "text", "start_ms"} for e in events[1:-1])
    assert error == {"type": "error", "code": "not_started", "message": "'flush' before 'start'"}
    assert all(len(f) == FRAME_BYTES for f in frames)
    wire = Wire()
    async with connect(quiet_server) as ws:
        await send(ws, type="start", context_id="x", format=PCM24)
        await send(ws, type="text", context_id="x", text=TEXT_B)
        await send(ws, type="end", context_id="x")
        await receive(ws, wire, {"x"})
    assert all(len(payload) == FRAME_BYTES for *_, payload in wire.frames)  # header taken off
    assert_same_audio(wire.pcm("x"), b"".join(frames))
    started = wire.events[0]
    assert set(started) == V1_STARTED | {"context_id", "channel", "codec_delay_ms"}
    assert started["codec_delay_ms"] == 0.0  # PCM: no codec delay (Opus: tests/transport/test_ws)
    assert set(wire.done("x")) == V1_DONE | {"context_id"}


async def test_the_context_limit_is_a_clear_error(quiet_server: ServerThread) -> None:
    wire = Wire()
    async with connect(quiet_server) as ws:
        for name in ("a", "b", "c"):
            await send(ws, type="start", context_id=name, format=PCM24)
            await send(ws, type="text", context_id=name, text=LONG)
        await send(ws, type="start", context_id="d", format=PCM24)
        events, _ = await collect(ws, until="error")
        assert events[-1]["code"] == "too_many_contexts" and events[-1]["context_id"] == "d"
        assert [e["context_id"] for e in events if e["type"] == "started"] == ["a", "b", "c"]
        await send(ws, type="cancel", context_id="a")
        await receive(ws, wire, {"a"})
        await send(ws, type="start", context_id="d", format=PCM24)
        await send(ws, type="text", context_id="d", text="Now there is room.")
        await send(ws, type="end", context_id="d")
        for name in ("b", "c"):
            await send(ws, type="cancel", context_id=name)
        await receive(ws, wire, {"b", "c", "d"})
    assert wire.done("d")["cancelled"] is False and len(wire.pcm("d")) > FRAME_BYTES * 25
    assert wire.done("b")["cancelled"] and wire.done("c")["cancelled"]


async def test_unknown_contexts_and_bad_ids_harm_nothing(
    quiet_server: ServerThread, server_log: list[logging.LogRecord]
) -> None:
    want = await solo(quiet_server, TEXT_A)
    wire = Wire()
    async with connect(quiet_server) as ws:
        await send(ws, type="start", context_id="real", format=PCM24)
        await send(ws, type="text", context_id="real", text=TEXT_A[:20])
        hostile: list[tuple[dict[str, Any], str]] = [
            ({"type": "flush", "context_id": "ghost"}, "unknown_context"),
            ({"type": "end", "context_id": "ghost"}, "unknown_context"),
            ({"type": "cancel", "context_id": "ghost"}, "unknown_context"),
            ({"type": "text", "context_id": "ghost", "text": "boo"}, "unknown_context"),
            ({"type": "start", "context_id": "real"}, "already_started"),
            ({"type": "text", "text": "no context"}, "protocol_mismatch"),
            ({"type": "cancel"}, "protocol_mismatch"),
            ({"type": "start", "context_id": "x" * 65}, "bad_value"),
            ({"type": "cancel", "context_id": "re al"}, "bad_value"),
            ({"type": "end", "context_id": ["real"]}, "bad_value"),
            ({"type": "cancel", "context_id": "\ud800"}, "bad_value"),
            ({"type": "start", "context_id": "new", "voice": "nobody"}, "unknown_voice"),
        ]
        for msg, _ in hostile:
            await ws.send(json.dumps(msg))
        await send(ws, type="text", context_id="real", text=TEXT_A[20:])
        await send(ws, type="end", context_id="real")
        await receive(ws, wire, {"real"})
    errors = [e for e in wire.events if e["type"] == "error"]
    assert [e["code"] for e in errors] == [code for _, code in hostile]
    assert [e.get("context_id") for e in errors][:5] == ["ghost"] * 4 + ["real"]
    assert_same_audio(wire.pcm("real"), want)
    assert [r.getMessage() for r in server_log] == []


async def test_a_v11_line_speaks_as_its_context(quiet_server: ServerThread) -> None:
    want = await solo(quiet_server, TEXT_B)
    wire = Wire()
    async with connect(quiet_server) as ws:
        await send(ws, type="line", context_id="chat-1", id="m1", text=TEXT_B, format=PCM24)
        await receive(ws, wire, {"chat-1"})
    started = next(e for e in wire.events if e["type"] == "started")
    assert (started["context_id"], started["id"]) == ("chat-1", "m1")
    assert wire.done("chat-1")["id"] == "m1"
    assert_same_audio(wire.pcm("chat-1"), want)
