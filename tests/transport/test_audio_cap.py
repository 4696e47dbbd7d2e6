"""The per-utterance audio cap (``max_utterance_audio_s``): on the WebSocket the audio stops
there, then ``error`` ``audio_too_long`` and a ``done`` with ``truncated`` and ``cancelled``;
``POST /v1/audio/speech`` names the cap in ``X-EmoStream-Max-Audio-S`` and its body ends there.
The connection stays usable; shorter utterances are untouched."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import websockets

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect

CAP_S = 2.0
LONG = "Nine oh five, and then " + "9:05 " * 40  # far more than 2 s read out


@pytest.fixture(scope="module")
def capped(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    data = str(tmp_path_factory.mktemp("cap"))
    settings = Settings(data_dir=data, max_utterance_audio_s=CAP_S, phrase_cache_bytes=0)
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def cut_count(url: str) -> float:
    """``emostream_errors_total{code="audio_too_long"}`` now."""
    async with httpx.AsyncClient(base_url=url) as client:
        for line in (await client.get("/metrics")).text.splitlines():
            if line.startswith('emostream_errors_total{code="audio_too_long"}'):
                return float(line.split()[-1])
    return 0.0


async def test_websocket_audio_stops_at_the_cap(capped: ServerThread) -> None:
    before = await cut_count(capped.url)
    async with websockets.connect(capped.ws_url, max_size=None, compression=None) as ws:
        fmt = {"codec": "pcm_s16le", "sample_rate": 24000}
        await ws.send(json.dumps({"type": "start", "format": fmt}))
        await ws.send(json.dumps({"type": "text", "text": LONG}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws, timeout=60)
        codes = [e.get("code") or e["type"] for e in events if e["type"] != "segment"]
        assert codes == ["started", "audio_too_long", "done"], codes
        assert "2 s" in events[-2]["message"]
        done = events[-1]
        assert done["truncated"] is True and done["cancelled"] is True
        assert done["audio_ms"] == 2000.0
        assert sum(len(a) for a in audio) == 2 * 24000 * 2  # 2 s of s16 at 24 kHz, exactly
        await ws.send(json.dumps({"type": "start"}))  # the connection is still usable
        await ws.send(json.dumps({"type": "text", "text": "Short."}))
        await ws.send(json.dumps({"type": "end"}))
        events, _ = await collect(ws, timeout=30)
        assert events[-1]["type"] == "done" and events[-1]["cancelled"] is False
        assert "truncated" not in events[-1]
    assert await cut_count(capped.url) == before + 1


async def test_http_body_ends_at_the_cap(capped: ServerThread) -> None:
    before = await cut_count(capped.url)
    async with httpx.AsyncClient(base_url=capped.url, timeout=60) as client:
        r = await client.post("/v1/audio/speech", json={"input": LONG, "response_format": "pcm"})
        assert r.status_code == 200 and r.headers["X-EmoStream-Max-Audio-S"] == "2"
        assert len(r.content) == 2 * 24000 * 2
        r = await client.post("/v1/audio/speech", json={"input": "Hi.", "response_format": "pcm"})
        assert r.status_code == 200 and 0 < len(r.content) < 2 * 24000 * 2
    assert await cut_count(capped.url) == before + 1
