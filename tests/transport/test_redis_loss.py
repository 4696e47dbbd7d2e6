"""Redis loss through the real server: a Redis that refuses, one that accepts but never answers,
and one killed mid-way; every clone upload still succeeds (the in-process cache and the encoder
serve it) and the fallbacks are counted in ``/metrics``."""

from __future__ import annotations

import asyncio
import io
import itertools
import re
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
import soundfile as sf

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav, free_port
from tests.voices.voice_fixtures import RedisServer

CLIP_TEXT = "This is my own voice, and I would like the stream to use it from now on."


@pytest.fixture(scope="module")
def wavs(joe: PiperVoice) -> list[bytes]:
    """Four clips with different bytes (each a cache miss the first time)."""
    audio, rate = sf.read(io.BytesIO(clip_wav(joe, CLIP_TEXT)), dtype="float32")
    out = []
    for gain in (0.9, 0.8, 0.7, 0.6):
        buf = io.BytesIO()
        sf.write(buf, audio * gain, rate, format="WAV", subtype="PCM_16")
        out.append(buf.getvalue())
    return out


@pytest.fixture
def blackhole() -> Iterator[str]:
    """A port that accepts TCP connections (kernel backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"redis://127.0.0.1:{s.getsockname()[1]}/0"


def serve(joe: PiperVoice, redis_url: str, data_dir: str) -> ServerThread:
    settings = Settings(data_dir=data_dir, redis_url=redis_url)
    return ServerThread(create_app(settings, catalog=VoiceCatalog([joe])))


_names = itertools.count()


async def upload(client: httpx.AsyncClient, wav: bytes) -> float:
    t0 = time.monotonic()
    r = await client.post(  # a new name each time: names are unique per key
        "/v1/voices", files={"file": ("c.wav", wav, "audio/wav")},
        data={"name": f"me {next(_names)}"},
    )  # fmt: skip
    assert r.status_code == 201, r.text
    return time.monotonic() - t0


def fallbacks(metrics: str) -> float:
    m = re.search(r"^emostream_embedding_cache_fallbacks_total (\S+)$", metrics, re.MULTILINE)
    assert m is not None
    return float(m.group(1))


@pytest.mark.parametrize("kind", ["refused", "blackhole"])
async def test_unreachable_redis_at_start(
    kind: str, joe: PiperVoice, wavs: list[bytes], blackhole: str, tmp_path: object
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0" if kind == "refused" else blackhole
    with serve(joe, url, str(tmp_path)) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
            took = [await upload(client, w) for w in (wavs[0], wavs[1], wavs[0])]
            metrics = (await client.get("/metrics")).text
            health = await client.get("/healthz")
    assert health.status_code == 200
    assert fallbacks(metrics) >= 2  # the first get failed, later calls skipped Redis
    assert max(took) < 10, took  # one 0.5 s timeout at most, never a hang
    print(f"redis {kind}: uploads {', '.join(f'{t:.2f}' for t in took)} s")


async def test_redis_killed_mid_way(
    joe: PiperVoice, wavs: list[bytes], redis_server: RedisServer, tmp_path: object
) -> None:
    with serve(joe, redis_server.url, str(tmp_path)) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
            await upload(client, wavs[0])
            assert fallbacks((await client.get("/metrics")).text) == 0  # Redis was used
            await asyncio.to_thread(redis_server.stop)
            for wav in (wavs[2], wavs[0], wavs[3]):  # new clips and a known one
                await upload(client, wav)
            assert fallbacks((await client.get("/metrics")).text) >= 1
            listed = (await client.get("/v1/voices")).json()["voices"]
    assert sum(v.get("type") == "cloned" for v in listed) == 4
