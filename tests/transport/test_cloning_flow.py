"""Cloned voices through the real server: registered and listed, and honestly refused for
speech while no shipped model takes a speaker embedding."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import websockets

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav

CLIP_TEXT = "This is my voice. I would like every reply on the stream to sound like this, please."


async def test_register_list_and_refuse_to_speak_a_clone(
    server: ServerThread, joe: PiperVoice
) -> None:
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post(
            "/v1/voices", files={"file": ("me.wav", wav, "audio/wav")}, data={"name": "Me (cloning flow)"}
        )
        assert r.status_code == 201, r.text
        voice_id = r.json()["id"]
        listed = {v["id"]: v for v in (await client.get("/v1/voices")).json()["voices"]}
        assert listed["joe"]["speakable"] is True
        assert (
            listed[voice_id]["speakable"] is False and "did not load" in listed[voice_id]["reason"]
        )
        r = await client.post("/v1/audio/speech", json={"input": "Hi.", "voice": voice_id})
        assert r.status_code == 409 and r.json()["error"]["code"] == "voice_unavailable"
        bad = await client.post(
            "/v1/voices", files={"file": ("x.wav", b"RIFFjunk", "audio/wav")}, data={"name": "X"}
        )
        assert bad.status_code in (400, 415, 422) and bad.json()["error"]["code"]
    async with websockets.connect(server.ws_url, compression=None) as ws:
        await ws.send(json.dumps({"type": "start", "voice": voice_id}))
        assert json.loads(await ws.recv())["code"] == "voice_unavailable"
        await ws.send(json.dumps({"type": "start", "reference_audio": "UklGRg=="}))
        err = json.loads(await ws.recv())
        assert err["code"] == "unsupported_control" and "speaker" in err["message"]
        await ws.send(json.dumps({"type": "start", "prompt": "用开心的语气"}))
        err = json.loads(await ws.recv())
        assert err["code"] == "unsupported_control" and "emotion" in err["message"]
        await ws.send(json.dumps({"type": "start", "prompt": "just read it plainly"}))
        assert json.loads(await ws.recv())["type"] == "started"
    assert np.frombuffer(wav[44:], dtype=np.int16).size > 16000 * 3
