"""HTTP API over a real loopback server."""

from __future__ import annotations

import io
import struct

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ServerThread


async def test_speech_wav_streams_plausible_audio(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        body = {"model": "tts-1", "input": "Hello from the OpenAI compatible endpoint.", "voice": "joe",
                "response_format": "wav"}  # fmt: skip
        async with client.stream("POST", "/v1/audio/speech", json=body) as r:
            assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
            chunks = [c async for c in r.aiter_bytes()]
    data = b"".join(chunks)
    pcm = np.frombuffer(data[44:], dtype=np.int16).astype(np.float32) / 32768
    assert 1.5 < len(pcm) / 24000 < 5.0 and np.sqrt(np.mean(pcm**2)) > 0.02


async def test_speech_ogg_opus_decodes(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post("/v1/audio/speech", json={"input": "Short and sweet.", "speed": 1.2})
    assert r.status_code == 200 and r.headers["content-type"] == "audio/ogg"
    audio, sr = sf.read(io.BytesIO(r.content))
    assert sr == 48000 and 0.5 < len(audio) / sr < 3.0
    head = r.content.index(b"OpusHead")  # pre-skip: the "audio" encoder's 6.5 ms look-ahead
    assert struct.unpack("<H", r.content[head + 10 : head + 12]) == (312,)


async def test_speech_pcm(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post(
            "/v1/audio/speech", json={"input": "Raw samples.", "response_format": "pcm"}
        )
    assert r.status_code == 200 and len(r.content) % 2 == 0 and len(r.content) > 24000


@pytest.mark.parametrize(
    "body,status,code",
    [
        (b"{nope", 400, "bad_json"),
        (b'"just a string"', 400, "bad_message"),
        (b'{"voice": "joe"}', 400, "empty_text"),
        (b'{"input": "   "}', 400, "empty_text"),
        (b'{"input": "..."}', 400, "empty_text"),
        ('{"input": "안녕하세요"}'.encode(), 400, "empty_text"),  # no front end reads Hangul
        (b'{"input": "hi", "voice": "nobody"}', 404, "unknown_voice"),
        (b'{"input": "hi", "response_format": "ogg"}', 400, "bad_format"),
        (b'{"input": "hi", "sample_rate": 44100, "response_format": "pcm"}', 400, "bad_format"),
        (b'{"input": "hi", "speed": 7}', 400, "bad_value"),
        (b'{"input": "hi", "emotion": "happy"}', 400, "unsupported_control"),
    ],
)
async def test_speech_errors(server: ServerThread, body: bytes, status: int, code: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.post(
            "/v1/audio/speech", content=body, headers={"content-type": "application/json"}
        )
    assert r.status_code == status
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]


async def test_speech_too_long(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.post("/v1/audio/speech", json={"input": "a " * 1500})
    assert r.status_code == 413 and r.json()["error"]["code"] == "text_too_long"


async def test_voices_health_metrics(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        voices = (await client.get("/v1/voices")).json()["voices"]
        assert voices[0]["id"] == "joe" and voices[0]["controls"] == ["speed"]
        assert voices[0]["language"] == "en-US"
        health = (await client.get("/healthz")).json()
        assert health["status"] == "ok"
        await client.post("/v1/audio/speech", json={"input": "Count me.", "response_format": "pcm"})
        text = (await client.get("/metrics")).text
    assert "emostream_first_audio_seconds_bucket" in text
    assert 'emostream_utterances_total{outcome="ok",transport="http"}' in text
    assert "emostream_active_streams" in text
