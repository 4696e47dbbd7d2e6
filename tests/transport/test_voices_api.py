from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette

from emostream.transport.voices_api import voice_routes, voice_view
from emostream.voices.cloning.cache import EmbeddingCache
from emostream.voices.cloning.clip import Clip, ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder, cosine
from emostream.voices.cloning.enroll import Enroller
from emostream.voices.cloning.registry import VoiceRegistry, is_cloned_id
from tests.voices.cloning.test_clip import CATALOGUE
from tests.voices.voice_fixtures import RedisServer, to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


class CountingEncoder:
    """The real encoder, counting calls (to see the cache work)."""

    def __init__(self, inner: SpeakerEncoder) -> None:
        self.inner = inner
        self.version = inner.version
        self.calls = 0

    def embed_clip(self, clip: Clip) -> npt.NDArray[np.float32]:
        self.calls += 1
        return self.inner.embed_clip(clip)


@pytest.fixture(scope="module")
def real_encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


STOCK = {"af_heart", "joe"}


def _app(
    db: Path, encoder: CountingEncoder, cache: EmbeddingCache | None = None, *,
    owner_of: Any = lambda _request: None,
) -> tuple[Starlette, VoiceRegistry]:  # fmt: skip
    registry = VoiceRegistry(db)
    routes = voice_routes(registry, Enroller(ClipIntake(), encoder, cache=cache),
                          is_stock=STOCK.__contains__, owner_of=owner_of)  # fmt: skip
    return Starlette(routes=routes), registry


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


_names = itertools.count()


async def _post(client: httpx.AsyncClient, data: bytes, name: str | None = None
                ) -> httpx.Response:  # fmt: skip
    """Upload ``data`` as a clone called ``name`` (default: a new name each call)."""
    name = f"Streamer {next(_names)}" if name is None else name
    return await client.post(
        "/v1/voices", files={"file": ("clip.wav", data, "audio/wav")}, data={"name": name}
    )


async def test_register_restart_get_delete(
    tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech
) -> None:
    db = tmp_path / "voices.sqlite3"
    enc = CountingEncoder(real_encoder)
    app, registry = _app(db, enc)
    async with _client(app) as client:
        resp = await _post(client, to_bytes(*speech), name="  Alice 主播 ")
        assert resp.status_code == 201, resp.text
        body = resp.json()
        assert is_cloned_id(body["id"]) and body["name"] == "Alice 主播"
        assert resp.headers["location"] == f"/v1/voices/{body['id']}"
        assert body["speech_s"] >= 3.0 and body["encoder"] == real_encoder.version
    embedding = registry.get(body["id"]).embedding  # type: ignore[union-attr]
    registry.close()

    # "restart": a new registry and app over the same file
    app2, registry2 = _app(db, CountingEncoder(real_encoder))
    async with _client(app2) as client:
        got = await client.get(f"/v1/voices/{body['id']}")
        assert got.status_code == 200 and got.json() == body
        assert [voice_view(v, None) for v in registry2.voices()] == [body]
        assert body["state"] == "refine_unavailable" and body["refinement"] is None
        stored = registry2.get(body["id"])
        assert stored is not None and np.array_equal(stored.embedding, embedding)
        clip = registry2.clip(body["id"])
        assert clip is not None and clip[1] == 16000 and len(clip[0]) / 16000 > 3.0
        assert cosine(real_encoder.embed_audio(clip[0]), embedding) > 0.98  # stored clip re-embeds
        assert (await client.delete(f"/v1/voices/{body['id']}")).status_code == 204
        missing = await client.get(f"/v1/voices/{body['id']}")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_voice"
        assert (await client.delete(f"/v1/voices/{body['id']}")).status_code == 404
    assert len(registry2) == 0


@pytest.mark.parametrize("kind", sorted(CATALOGUE))
async def test_bad_clips_are_4xx_and_nothing_stored(
    kind: str, tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech
) -> None:
    make, code, status = CATALOGUE[kind]
    enc = CountingEncoder(real_encoder)
    app, registry = _app(tmp_path / "v.sqlite3", enc)
    async with _client(app) as client:
        resp = await _post(client, make(*speech))
    assert resp.status_code == status
    assert 400 <= resp.status_code < 500
    assert resp.json()["error"]["code"] == code
    assert resp.json()["error"]["type"] == "invalid_request_error"  # OpenAI's shape
    assert set(resp.json()["error"]) == {"code", "message", "type", "param"}
    assert len(registry) == 0 and enc.calls == 0


async def test_form_errors(tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech) -> None:
    app, registry = _app(tmp_path / "v.sqlite3", CountingEncoder(real_encoder))
    good = to_bytes(*speech)
    async with _client(app) as client:
        resp = await client.post("/v1/voices", json={"name": "x"})
        assert resp.status_code == 415 and resp.json()["error"]["code"] == "bad_content_type"
        resp = await client.post("/v1/voices", files={"name": (None, "x")})
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "missing_file"
        resp = await client.post("/v1/voices", files={"file": ("a.wav", good, "audio/wav")})
        assert resp.json()["error"]["code"] == "bad_name"
        for name in ("   ", "x" * 65, "bad\x00name"):
            resp = await _post(client, good, name=name)
            assert resp.status_code == 400 and resp.json()["error"]["code"] == "bad_name"
    assert len(registry) == 0


async def test_second_upload_hits_the_redis_cache(
    tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech, redis_server: RedisServer
) -> None:
    """Two servers share Redis: the second embeds nothing; then Redis dies and both still serve."""
    data = to_bytes(*speech)
    reg_a, reg_b = CollectorRegistry(), CollectorRegistry()
    cache_a = EmbeddingCache(redis_url=redis_server.url, registry=reg_a, retry_after_s=0)
    cache_b = EmbeddingCache(redis_url=redis_server.url, registry=reg_b, retry_after_s=0)
    enc_a, enc_b = CountingEncoder(real_encoder), CountingEncoder(real_encoder)
    app_a, _ = _app(tmp_path / "a.sqlite3", enc_a, cache_a)
    app_b, _ = _app(tmp_path / "b.sqlite3", enc_b, cache_b)
    async with _client(app_a) as a, _client(app_b) as b:
        assert (await _post(a, data)).status_code == 201
        assert (await _post(b, data)).status_code == 201
        assert enc_a.calls == 1 and enc_b.calls == 0
        hits = reg_b.get_sample_value(
            "emostream_embedding_cache_lookups_total", {"result": "redis"}
        )
        assert hits == 1
        redis_server.stop()
        assert (await _post(b, data)).status_code == 201  # from b's memory
        other = to_bytes(speech[0][::-1].copy(), speech[1])  # a new clip: must be embedded
        assert (await _post(b, other)).status_code == 201
        assert enc_b.calls == 1
        fallbacks = reg_b.get_sample_value("emostream_embedding_cache_fallbacks_total")
        assert fallbacks is not None and fallbacks >= 1
    await cache_a.close()
    await cache_b.close()


async def test_a_clone_is_found_by_its_name(
    tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech
) -> None:
    """The name given at upload works where the id does (any case); unique per key: 409."""
    app, registry = _app(tmp_path / "v.sqlite3", CountingEncoder(real_encoder))
    data = to_bytes(*speech)
    async with _client(app) as client:
        made = (await _post(client, data, name="Chat Voice")).json()
        got = await client.get("/v1/voices/chat voice")
        assert got.status_code == 200 and got.json()["id"] == made["id"]
        for name, why in (("CHAT VOICE ", "already have"), ("AF_HEART", "stock voice"),
                          ("clone_0123456789abcdef", "look like")):  # fmt: skip
            clash = await _post(client, data, name=name)
            assert clash.status_code == 409, clash.text
            assert clash.json()["error"]["code"] == "name_taken"
            assert why in clash.json()["error"]["message"]
        assert len(registry) == 1
        assert (await client.delete("/v1/voices/Chat Voice")).status_code == 204
        assert (await _post(client, data, name="Chat Voice")).status_code == 201  # free again


async def test_names_are_unique_per_key_and_private(
    tmp_path: Path, real_encoder: SpeakerEncoder, speech: Speech
) -> None:
    app, _ = _app(tmp_path / "v.sqlite3", CountingEncoder(real_encoder),
                  owner_of=lambda request: request.headers.get("x-key"))  # fmt: skip
    data = to_bytes(*speech)
    async with _client(app) as client:
        alice = {"x-key": "alice"}
        made = await client.post("/v1/voices", files={"file": ("c.wav", data, "audio/wav")},
                                 data={"name": "Me"}, headers=alice)  # fmt: skip
        bob = await client.post("/v1/voices", files={"file": ("c.wav", data, "audio/wav")},
                                data={"name": "Me"}, headers={"x-key": "bob"})  # fmt: skip
        assert made.status_code == 201 and bob.status_code == 201  # another key's name
        assert (await client.get("/v1/voices/Me", headers=alice)).json()["id"] == made.json()["id"]
        carol = await client.get("/v1/voices/Me", headers={"x-key": "carol"})
        assert carol.status_code == 404 and len(carol.content) <= 300
