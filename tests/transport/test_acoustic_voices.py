"""The shipped EmoStream acoustic model through the real server: stock speakers, emotion as
prosody, and a clone registered over HTTP and spoken over the WebSocket."""

from __future__ import annotations

import asyncio
import base64
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
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav
from tests.transport.conftest import collect

CLIP_TEXT = "This is my own voice, and I would like the stream to use it from now on."

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=str(tmp_path_factory.mktemp("fs2-data")), acoustic="on")


@pytest.fixture(scope="module")
def family(settings: Settings) -> AcousticFamily:
    loaded = load_acoustic_family(settings)
    assert loaded is not None
    return loaded


def fs2_app(settings: Settings, joe: PiperVoice, family: AcousticFamily) -> Any:
    from emostream.transport.app import create_app

    stock = [v for v in family.stock_voices() if v.info.id in ("af_heart", "am_michael")]
    catalog = VoiceCatalog([joe, *stock])
    catalog.family = family
    return create_app(settings, catalog=catalog)


@pytest.fixture(scope="module")
def fs2_server(
    settings: Settings, joe: PiperVoice, family: AcousticFamily
) -> Iterator[ServerThread]:
    with ServerThread(fs2_app(settings, joe, family)) as srv:
        yield srv


async def speak(
    url: str, start: dict[str, Any], text: str
) -> tuple[list[dict[str, Any]], np.ndarray]:
    async with websockets.connect(url, compression=None) as ws:
        await ws.send(
            json.dumps(
                {**start, "type": "start", "format": {"codec": "pcm_s16le", "sample_rate": 24000}}
            )
        )
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        events, chunks = await collect(ws, until=("done", "error"), timeout=120)
    return events, np.frombuffer(b"".join(chunks), dtype=np.int16).astype(np.float32) / 32768


async def test_stock_speaker_with_emotion(fs2_server: ServerThread) -> None:
    text = "Thanks for the follow, welcome to the stream."
    events, neutral = await speak(fs2_server.ws_url, {"voice": "af_heart"}, text)
    assert events[0]["controls"] == {"speed": True, "pitch_shift": True, "energy": True,
                                     "emotion": True, "speaker": True}  # fmt: skip
    assert events[-1]["type"] == "done" and 1.5 < len(neutral) / 24000 < 5.0
    assert np.sqrt(np.mean(neutral**2)) > 0.02
    _, sad = await speak(fs2_server.ws_url, {"voice": "af_heart", "emotion": "sad"}, text)
    assert len(sad) > len(neutral) * 1.05  # sad speaks slower (and pauses longer)


async def test_inline_reference_audio(fs2_server: ServerThread, joe: PiperVoice) -> None:
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    start = {"reference_audio": base64.b64encode(wav).decode()}
    events, audio = await speak(fs2_server.ws_url, start, "Same voice, sent inline.")
    assert events[0]["type"] == "started" and events[0]["voice"].startswith("ref_")
    assert events[-1]["type"] == "done" and len(audio) / 24000 > 1.0
    events, _ = await speak(fs2_server.ws_url, {"reference_audio": "%%%"}, "x")
    assert events[0]["type"] == "error" and events[0]["code"] == "bad_value"
    silent = io.BytesIO()
    sf.write(silent, np.zeros(16000 * 5, dtype=np.int16), 16000, format="WAV")
    events, _ = await speak(
        fs2_server.ws_url, {"reference_audio": base64.b64encode(silent.getvalue()).decode()}, "x"
    )
    assert events[0]["type"] == "error" and events[0]["code"] == "silent"


async def test_clone_registered_then_spoken(
    fs2_server: ServerThread, joe: PiperVoice, settings: Settings, family: AcousticFamily
) -> None:
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    async with httpx.AsyncClient(base_url=fs2_server.url, timeout=60) as client:
        r = await client.post(
            "/v1/voices",
            files={"file": ("me.wav", wav, "audio/wav")},
            data={"name": "Me"},
        )
        assert r.status_code == 201, r.text
        voice_id = r.json()["id"]
        listed = {v["id"]: v for v in (await client.get("/v1/voices")).json()["voices"]}
        assert (
            listed[voice_id]["speakable"] is True and listed[voice_id]["controls"][-1] == "speaker"
        )
    events, audio = await speak(
        fs2_server.ws_url, {"voice": voice_id}, "Hello from my cloned voice."
    )
    assert events[-1]["type"] == "done" and len(audio) / 24000 > 1.0


async def test_malformed_reference_audio_keeps_the_connection(fs2_server: ServerThread) -> None:
    async with websockets.connect(fs2_server.ws_url, compression=None) as ws:
        for ref in ["\u00e9t\u00e9 \u4f60\u597d", "", 5, "%%%"]:
            await ws.send(json.dumps({"type": "start", "reference_audio": ref}))
            event = json.loads(await ws.recv())
            assert event["type"] == "error" and event["code"] == "bad_value", (ref, event)
            assert "reference_audio" in event["message"]
        await ws.send(json.dumps({"type": "start", "voice": "af_heart"}))
        assert json.loads(await ws.recv())["type"] == "started"
        await ws.send(json.dumps({"type": "cancel"}))
        assert json.loads(await ws.recv())["type"] == "done"
