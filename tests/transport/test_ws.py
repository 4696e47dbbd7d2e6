"""The WebSocket protocol over a real loopback server (uvicorn, websockets-sansio)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import numpy as np
import pytest
import websockets

from emostream.stream.service import SpeechService
from emostream.voices.base import Voice
from tests.conftest import ServerThread
from tests.transport.conftest import collect


def connect(server: ServerThread) -> Any:
    return websockets.connect(server.ws_url, compression=None, max_size=None)


def decode_opus(packets: list[bytes], rate: int) -> np.ndarray:
    import opuslib_next as opus

    dec = opus.Decoder(rate, 1)
    pcm = b"".join(dec.decode(p, rate // 50) for p in packets)
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768


async def test_speaks_opus_of_plausible_length(server: ServerThread) -> None:
    text = "Hello there, this is a streaming test of the embedded voice."
    async with connect(server) as ws:
        await ws.send(
            json.dumps(
                {
                    "type": "start",
                    "format": {"codec": "opus", "sample_rate": 48000},
                    "timestamps": True,
                }
            )
        )
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        events, packets = await collect(ws)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "done"
    assert events[0]["controls"]["speed"] is True and events[0]["controls"]["pitch_shift"] is False
    segs = [e for e in events if e["type"] == "segment"]
    assert [s["text"] for s in segs] == [
        "Hello there,",
        "this is a streaming test of the embedded voice.",
    ]
    stamps = [e for e in events if e["type"] == "timestamps"]
    assert len(stamps) == 2 and stamps[1]["units"][0]["start_ms"] >= segs[1]["start_ms"]
    audio = decode_opus(packets, 48000)
    seconds = len(audio) / 48000
    # ~10 words of English: 2.5–6 s is plausible speech, silence or garbage is not.
    assert 2.5 < seconds < 6.0
    assert np.sqrt(np.mean(audio**2)) > 0.02
    done = events[-1]
    assert done["cancelled"] is False and abs(done["audio_ms"] - 1000 * seconds) < 25
    assert done["first_audio_ms"] is not None and done["rtf"] > 0


async def test_pcm_token_by_token_and_reuse(server: ServerThread) -> None:
    async with connect(server) as ws:
        for _ in range(2):  # a second utterance on the same connection
            await ws.send(
                json.dumps(
                    {"type": "start", "format": {"codec": "pcm_s16le", "sample_rate": 16000}}
                )
            )
            for token in [
                "Streaming",
                "tokens",
                "one",
                "by",
                "one,",
                "like",
                "a",
                "chat",
                "model",
                "does.",
            ]:
                await ws.send(json.dumps({"type": "text", "text": token + " "}))
            await ws.send(json.dumps({"type": "end"}))
            events, chunks = await collect(ws)
            assert all(len(c) == 640 for c in chunks)  # 20 ms of s16le at 16 kHz
            samples = sum(len(c) for c in chunks) // 2
            assert 1.5 < samples / 16000 < 5.0
            assert events[-1]["type"] == "done"


async def test_bad_inputs_do_not_break_the_connection(server: ServerThread) -> None:
    async with connect(server) as ws:
        bad = ["{oops", json.dumps({"type": "text", "text": "x"}), json.dumps({"type": "nope"}),
               json.dumps({"type": "start", "voice": "nobody"}),
               json.dumps({"type": "start", "format": {"sample_rate": 8000}}),
               json.dumps({"type": "start", "pitch_shift": 4})]  # fmt: skip
        codes = []
        for raw in bad:
            await ws.send(raw)
            codes.append(json.loads(await ws.recv())["code"])
        await ws.send(b"\x00binary")
        codes.append(json.loads(await ws.recv())["code"])
        assert codes == ["bad_json", "not_started", "unknown_type", "unknown_voice", "bad_format",
                         "unsupported_control", "binary_not_allowed"]  # fmt: skip
        await ws.send(json.dumps({"type": "start"}))
        await ws.send(json.dumps({"type": "text", "text": "x" * 2500}))  # over the 2000 limit
        events, _ = await collect(ws, until="error")
        assert events[-1]["code"] == "text_too_long"
        await ws.send(json.dumps({"type": "text", "text": "Still alive."}))
        await ws.send(json.dumps({"type": "end"}))
        events, packets = await collect(ws)
        assert packets and events[-1]["type"] == "done"


async def start_long_utterance(ws: Any, sentence: str) -> None:
    """Send ten copies of ``sentence`` as one utterance and wait for its first audio."""
    await ws.send(json.dumps({"type": "start"}))
    await ws.send(json.dumps({"type": "text", "text": " ".join([sentence] * 10)}))
    await ws.send(json.dumps({"type": "end"}))
    while not isinstance(await ws.recv(), bytes):
        pass


async def test_cancel_stops_audio_quickly(server: ServerThread) -> None:
    async with connect(server) as ws:
        await start_long_utterance(ws, "This is a long sentence that keeps the server busy.")
        await ws.send(json.dumps({"type": "cancel"}))
        t0 = time.monotonic()
        late_audio_after = None
        async with asyncio.timeout(10):
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    late_audio_after = time.monotonic() - t0
                    continue
                event = json.loads(msg)
                if event["type"] == "done":
                    break
        assert event["cancelled"] is True
        # Packets already in flight may still arrive, but none are produced 50 ms later.
        assert late_audio_after is None or late_audio_after < 0.05
        await ws.send(json.dumps({"type": "start"}))
        assert json.loads(await ws.recv())["type"] == "started"


async def test_disconnect_mid_utterance_leaves_nothing_running(server: ServerThread) -> None:
    import httpx

    async with connect(server) as ws:
        await start_long_utterance(ws, "Nobody will hear the end of this sentence.")
    async with httpx.AsyncClient(base_url=server.url) as client:
        for _ in range(100):
            if (await client.get("/healthz")).json()["active_streams"] == 0:
                break
            await asyncio.sleep(0.05)
        assert (await client.get("/healthz")).json()["active_streams"] == 0


async def test_other_streams_unaffected_by_a_bad_one(server: ServerThread) -> None:
    async def good() -> float:
        async with connect(server) as ws:
            await ws.send(json.dumps({"type": "start"}))
            await ws.send(json.dumps({"type": "text", "text": "I am the well behaved stream."}))
            await ws.send(json.dumps({"type": "end"}))
            events, packets = await collect(ws)
            assert events[-1]["type"] == "done"
            return len(packets) * 0.02

    async def bad() -> None:
        async with connect(server) as ws:
            await ws.send("garbage")
            await ws.send(json.dumps({"type": "start"}))
            await ws.send(json.dumps({"type": "text", "text": "I will vanish"}))
            await ws.close()

    seconds, _ = await asyncio.gather(good(), bad())
    assert seconds > 1.0


async def test_an_utterance_looks_its_voice_up_once(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The protocol's lookup finds the voice and the utterance speaks what it found (the
    connection once looked it up again before speaking)."""
    looked: list[str] = []
    voice = SpeechService.voice

    def counted(service: SpeechService, voice_id: str) -> Voice | None:
        looked.append(voice_id)
        return voice(service, voice_id)

    monkeypatch.setattr(SpeechService, "voice", counted)
    async with connect(server) as ws:
        await ws.send(json.dumps({"type": "start", "format": {"codec": "pcm_s16le"}}))
        await ws.send(json.dumps({"type": "text", "text": "Once is enough."}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws)
    assert events[0]["type"] == "started" and events[-1]["cancelled"] is False and audio
    assert looked == [events[0]["voice"]]
