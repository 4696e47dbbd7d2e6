"""The Redis voice registry lost and found again through the real server.

While Redis is down every route that needs the registry answers ``503 store_unavailable`` with
``Retry-After`` (JSON, no traceback), a WebSocket ``start`` naming a clone gets an ``error``
event with that code and the connection goes on, ``/healthz`` says ``degraded``; once Redis is
back the same server answers again, without a restart."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.cloning.registry_redis import RedisVoiceRegistry
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect
from tests.voices.voice_fixtures import RedisServer, persistent_redis  # noqa: F401

RETRY_S = 1.0
UPLOAD = {"file": ("c.wav", b"RIFF", "audio/wav")}  # refused before it is read


def _clone(url: str) -> str:
    """A clone registered straight in Redis (as another host would)."""
    reg = RedisVoiceRegistry(url)
    vid = reg.add(name="Mine", embedding=np.ones(256, dtype=np.float32), encoder="ge2e-1",
                  clip_sha256="a" * 64, duration_s=5.0, speech_s=4.5).id  # fmt: skip
    reg.close()
    return vid


def _requests(vid: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("GET", "/v1/voices", {}),
        ("POST", "/v1/voices", {"files": UPLOAD, "data": {"name": "me"}}),
        ("GET", f"/v1/voices/{vid}", {}),
        ("DELETE", f"/v1/voices/{vid}", {}),
        ("POST", "/v1/audio/speech", {"json": {"input": "Hello there.", "voice": vid}}),
    ]


async def test_redis_down_fails_closed_and_back_without_restart(
    joe: PiperVoice,
    persistent_redis: RedisServer,  # noqa: F811
    tmp_path: Path,
    server_log: list[logging.LogRecord],
) -> None:
    vid = _clone(persistent_redis.url)
    settings = Settings(data_dir=str(tmp_path), voice_registry_url=persistent_redis.url,
                        voice_registry_retry_s=RETRY_S)  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
            listed = (await client.get("/v1/voices")).json()["voices"]
            assert vid in [v["id"] for v in listed]
            assert (await client.get("/healthz")).json()["voice_registry"] == "ok"

            await asyncio.to_thread(persistent_redis.stop)
            server_log.clear()
            for method, path, kwargs in _requests(vid):
                r = await client.request(method, path, **kwargs)
                assert r.status_code == 503, (method, path, r.text)
                assert r.json()["error"]["code"] == "store_unavailable", (method, path)
                assert 1 <= int(r.headers["Retry-After"]) <= RETRY_S + 1
            health = await client.get("/healthz")
            assert health.status_code == 200  # stock voices still speak
            assert health.json()["status"] == "degraded"
            assert health.json()["voice_registry"] == "unavailable"

            async with websockets.connect(srv.ws_url, compression=None) as ws:
                await ws.send(json.dumps({"type": "start", "voice": vid}))
                refused = json.loads(await ws.recv())
                assert refused["type"] == "error" and refused["code"] == "store_unavailable"
                await ws.send(json.dumps({"type": "start", "voice": "joe"}))  # still usable
                await ws.send(json.dumps({"type": "text", "text": "Still here."}))
                await ws.send(json.dumps({"type": "end"}))
                events, audio = await collect(ws)
                assert events[0]["type"] == "started" and events[-1]["type"] == "done"
                assert audio
            async with websockets.connect(srv.ws_url, compression=None) as ws:  # v1.1, a line
                await ws.send(json.dumps({"type": "start", "context_id": "c1", "voice": vid}))
                refused = json.loads(await ws.recv())
                assert (refused["code"], refused["context_id"]) == ("store_unavailable", "c1")
                await ws.send(json.dumps({"type": "line", "context_id": "c2", "id": "l1",
                                          "text": "Hi.", "voice": vid}))  # fmt: skip
                refused = json.loads(await ws.recv())
                assert (refused["code"], refused["id"]) == ("store_unavailable", "l1")
            metrics = (await client.get("/metrics")).text
            found = re.search(r'emostream_errors_total\{code="store_unavailable"\} (\S+)', metrics)
            assert found is not None and float(found.group(1)) >= 8

            # one warning for the outage, no error, no traceback
            assert all(r.exc_info is None and r.levelno < logging.ERROR for r in server_log)
            outage = [r for r in server_log if r.name == "emostream.voices.cloning.registry_redis"]
            assert len(outage) == 1 and "unreachable" in outage[0].getMessage()

            await asyncio.to_thread(persistent_redis.start)
            await asyncio.sleep(RETRY_S + 0.1)
            r = await client.get(f"/v1/voices/{vid}")
            assert r.status_code == 200 and r.json()["name"] == "Mine"
            health = (await client.get("/healthz")).json()
            assert health["status"] == "ok" and health["voice_registry"] == "ok"
            assert (await client.delete(f"/v1/voices/{vid}")).status_code == 204
