"""The voice catalogue through the real server with every voice loaded: the default listing,
filters, every listed voice's sample (decoded, not silent), clones by name, the default voice
of a text's language, and short unknown-voice errors on every route."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf
import websockets

from emostream.config import Settings
from emostream.voices.catalog import VoiceCatalog, load_catalog
from emostream.voices.piper_voice import PiperVoice
from emostream.voices.stock_voices import STOCK_VOICES
from tests.conftest import ServerThread, clip_wav
from tests.transport.conftest import collect

pytestmark = pytest.mark.slow
CLIP_TEXT = "This is my own voice, and I would like the stream to use it from now on."


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=str(tmp_path_factory.mktemp("catalog-data")), acoustic="on",
                    clone_refine=False, cpu_threads=1)  # fmt: skip


@pytest.fixture(scope="module")
def catalog(settings: Settings) -> VoiceCatalog:
    return load_catalog(settings)


@pytest.fixture(scope="module")
def server(settings: Settings, catalog: VoiceCatalog) -> Iterator[ServerThread]:
    from emostream.transport.app import create_app

    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        yield srv


@pytest.fixture(scope="module")
def listed(server: ServerThread) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.url}/v1/voices", timeout=30).json()
    return body


def test_the_default_listing_is_the_named_voices(listed: dict[str, Any]) -> None:
    voices = listed["voices"]
    assert len(voices) <= 80
    assert {v["id"] for v in voices} == {v.id for v in STOCK_VOICES}
    for v in voices:
        assert v["language"] and v["gender"] in ("female", "male") and v["description"], v
        assert v["sample_url"] == f"/v1/voices/{v['id']}/sample"
    assert listed["defaults"] == {"en": "af_heart", "zh": "zf_xiaoxiao"}
    assert listed["default"] == "af_heart" and listed["hidden"] == 600
    assert sorted(v["id"] for v in voices if v["default"]) == ["af_heart", "zf_xiaoxiao"]


def test_filters_and_all(server: ServerThread) -> None:
    def ids(query: str) -> list[str]:
        r = httpx.get(f"{server.url}/v1/voices?{query}", timeout=30)
        assert r.status_code == 200, r.text
        return [v["id"] for v in r.json()["voices"]]

    assert len(ids("all=true")) == 631
    assert len(ids("tag=corpus")) == 600
    assert sorted(ids("language=zh")) == sorted(v.id for v in STOCK_VOICES if v.id[0] == "z")
    assert sorted(ids("language=en-GB&gender=male")) == ["bm_daniel", "bm_george", "bm_lewis"]
    assert set(ids("tag=warm")) == {v.id for v in STOCK_VOICES if v.tone == "warm"}
    bad = httpx.get(f"{server.url}/v1/voices?gender=robot", timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "gender"
    stock = httpx.get(f"{server.url}/v1/voices/af_heart", timeout=30).json()
    assert stock["id"] == "af_heart" and stock["gender"] == "female"


def test_every_listed_voice_has_a_sample_that_plays(
    server: ServerThread, listed: dict[str, Any]
) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for v in listed["voices"]:
            r = client.get(v["sample_url"])
            assert r.status_code == 200 and r.headers["content-type"] == "audio/wav", v["id"]
            audio, rate = sf.read(io.BytesIO(r.content), dtype="float32")
            assert rate == v["sample_rate"], v["id"]  # the rate listed is the rate served
            assert 1.0 < len(audio) / rate < 8.0, v["id"]
            rms_db = 20 * np.log10(np.sqrt(np.mean(audio**2)) + 1e-9)
            assert rms_db > -40, (v["id"], rms_db)
        again = client.get("/v1/voices/af_heart/sample")
        assert again.headers["x-emostream-sample"] == "hit"
        opus = client.get("/v1/voices/zh_cross042/sample?format=opus")
        assert opus.status_code == 200 and opus.content[:4] == b"OggS"
        assert client.get("/v1/voices/af_heart/sample?format=x").status_code == 400


def test_speech_without_a_voice_speaks_the_texts_language(server: ServerThread) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for text, voice in (
            ("Hello there!", "af_heart"),
            ("你好，欢迎来到直播间。", "zf_xiaoxiao"),
        ):
            r = client.post("/v1/audio/speech", json={"input": text, "response_format": "wav"})
            assert r.status_code == 200 and r.headers["x-emostream-voice"] == voice
            _, rate = sf.read(io.BytesIO(r.content))
            assert rate == 24000  # what GET /v1/voices lists as sample_rate


async def test_unknown_voices_are_short_everywhere(server: ServerThread) -> None:
    asked = "af_hart"
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        answers = [
            await client.post("/v1/audio/speech", json={"input": "Hi.", "voice": asked}),
            await client.post("/v1/audio/speech",
                              json={"model": "tts-1", "input": "Hi.", "voice": asked}),
            await client.get(f"/v1/voices/{asked}"),
            await client.get(f"/v1/voices/{asked}/sample"),
            await client.post("/v1/audio/speech", json={"input": "Hi.", "voice": "x" * 4000}),
        ]  # fmt: skip
    for r in answers:
        assert r.status_code in (400, 404) and len(r.content) <= 300, (r.status_code, r.content)
        assert r.json()["error"]["code"] == "unknown_voice"
    assert all("af_heart" in r.json()["error"]["message"] for r in answers[:4])
    async with websockets.connect(server.ws_url, compression=None) as ws:
        await ws.send(json.dumps({"type": "start", "voice": asked}))
        raw = await ws.recv()
    assert isinstance(raw, str) and len(raw.encode()) <= 300 and "af_heart" in raw


async def test_a_clone_is_used_by_its_name(server: ServerThread, joe: PiperVoice) -> None:
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
        r = await client.post("/v1/voices", files={"file": ("me.wav", wav, "audio/wav")},
                              data={"name": "Stream Voice"})  # fmt: skip
        assert r.status_code == 201, r.text
        clone_id = r.json()["id"]
        again = await client.post("/v1/voices", files={"file": ("me.wav", wav, "audio/wav")},
                                  data={"name": "stream voice"})  # fmt: skip
        assert again.status_code == 409 and again.json()["error"]["code"] == "name_taken"
        mine = (await client.get("/v1/voices?type=cloned")).json()["voices"]
        assert [(v["id"], v["name"], v["speakable"]) for v in mine] == [
            (clone_id, "Stream Voice", True)]  # fmt: skip
        speech = await client.post(
            "/v1/audio/speech",
            json={
                "input": "Hello from my own voice.",
                "voice": "Stream Voice",
                "response_format": "wav",
            },
        )
        assert speech.status_code == 200 and speech.headers["x-emostream-voice"] == clone_id
        sample = await client.get("/v1/voices/stream voice/sample")
        assert sample.status_code == 200 and sample.headers["x-emostream-voice"] == clone_id
    async with websockets.connect(server.ws_url, compression=None) as ws:
        await ws.send(
            json.dumps(
                {
                    "type": "start",
                    "voice": "Stream Voice",
                    "format": {"codec": "pcm_s16le", "sample_rate": 24000},
                }
            )
        )
        await ws.send(json.dumps({"type": "text", "text": "Hello from my own voice."}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws, until=("done", "error"), timeout=120)
    assert events[0]["type"] == "started" and events[0]["voice"] == clone_id
    assert events[-1]["type"] == "done" and len(b"".join(audio)) > 24000
