"""The voice registry's two backends: SQLite (one host, the default) and Redis (shared).

One contract for both; then what only the shared one promises: a clone registered by one
server is read by another, it survives a Redis restart (append-only file), and a store of a
newer schema is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from emostream.config import Settings
from emostream.voices.cloning.registries import open_registry
from emostream.voices.cloning.registry import VoiceRegistry, VoiceStore
from emostream.voices.cloning.registry_redis import SCHEMA_VERSION, RedisVoiceRegistry
from tests.voices.voice_fixtures import RedisServer


def _add(reg: VoiceStore, name: str, owner: str | None = None, *, seed: int = 0) -> str:
    emb = np.random.default_rng(seed).standard_normal(256).astype(np.float32)
    clip = np.sin(np.linspace(0, 300, 16000)).astype(np.float32) * 0.3
    return reg.add(name=name, embedding=emb, encoder="ge2e-1", clip_sha256="a" * 64,
                   duration_s=5.0, speech_s=4.5, clip_audio=clip, owner=owner).id  # fmt: skip


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VoiceStore]:
    if request.param == "sqlite":
        reg: VoiceStore = open_registry("", tmp_path)
        assert isinstance(reg, VoiceRegistry)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        reg = open_registry(server.url, tmp_path)
        assert isinstance(reg, RedisVoiceRegistry)
    yield reg
    reg.close()


def test_contract(store: VoiceStore) -> None:
    a = _add(store, "Alice", "alice", seed=1)
    b = _add(store, "Bob", "bob", seed=2)
    anon = _add(store, "Nobody", None, seed=3)
    assert len(store) == 3
    assert [v.id for v in store.voices()] == [a, b, anon]  # oldest first
    assert [v.id for v in store.voices(owner="bob")] == [b]
    got = store.get(a)
    assert got is not None and got.name == "Alice" and got.owner == "alice"
    want = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    np.testing.assert_array_equal(got.embedding, want)
    assert got.duration_s == 5.0 and got.encoder == "ge2e-1"
    none = store.get(anon)
    assert none is not None and none.owner is None
    clip = store.clip(b)
    assert clip is not None and clip[1] == 16000 and clip[0].shape == (16000,)
    assert store.get("clone_0000000000000000") is None
    assert store.clip("clone_0000000000000000") is None
    assert store.delete(b) is True
    assert store.delete(b) is False
    assert store.get(b) is None and len(store) == 2
    with pytest.raises(ValueError):
        _add(store, "   ")


def test_sqlite_stays_the_default(tmp_path: Path) -> None:
    settings = Settings.from_env({"EMOSTREAM_DATA_DIR": str(tmp_path)})
    assert settings.voice_registry_url == ""
    reg = open_registry(settings.voice_registry_url, settings.data_dir)
    assert isinstance(reg, VoiceRegistry) and reg.path == tmp_path / "voices.sqlite3"
    reg.close()
    with pytest.raises(ValueError):
        open_registry("postgres://x", tmp_path)


def test_a_clone_made_on_one_host_is_read_on_another(redis_server: RedisServer) -> None:
    host_a = RedisVoiceRegistry(redis_server.url)
    host_b = RedisVoiceRegistry(redis_server.url)
    vid = _add(host_a, "Shared", "alice", seed=7)
    seen = host_b.get(vid)
    assert seen is not None and seen.name == "Shared"
    assert [v.id for v in host_b.voices(owner="alice")] == [vid]
    assert host_b.delete(vid)
    assert host_a.get(vid) is None
    host_a.close()
    host_b.close()


def test_clones_survive_a_redis_restart(persistent_redis: RedisServer) -> None:
    reg = RedisVoiceRegistry(persistent_redis.url)
    assert reg.persistent is True
    vid = _add(reg, "Kept", seed=4)
    reg.close()
    persistent_redis.stop()
    persistent_redis.start()
    again = RedisVoiceRegistry(persistent_redis.url)
    got = again.get(vid)
    assert got is not None and got.name == "Kept"
    assert again.clip(vid) is not None
    again.close()


def test_without_persistence_it_says_so(redis_server: RedisServer) -> None:
    reg = RedisVoiceRegistry(redis_server.url)
    assert reg.persistent is False  # the fixture runs --save "" --appendonly no
    reg.close()


def test_schema_version_is_written_and_a_newer_one_refused(redis_server: RedisServer) -> None:
    reg = RedisVoiceRegistry(redis_server.url, prefix="t")
    assert reg.schema_version() == SCHEMA_VERSION
    reg._r.set("t:schema", SCHEMA_VERSION + 1)
    reg.close()
    with pytest.raises(RuntimeError, match="newer"):
        RedisVoiceRegistry(redis_server.url, prefix="t")
    other = RedisVoiceRegistry(redis_server.url, prefix="u")  # prefixes are separate stores
    assert len(other) == 0
    other.close()
