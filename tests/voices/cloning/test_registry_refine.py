"""A clone's refinement in both registries: stored atomically (timbre, figures, state and a new
clip together, or nothing), kept across a restart, never written to a deleted clone; and the
schema migrations that brought it (SQLite 2 -> 3, Redis 1 -> 2)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from emostream.voices.cloning.refine_state import (
    TIMBRE_SHAPE,
    Notice,
    Refined,
    RefineState,
    StaleJob,
    begin,
    fail,
    succeed,
)
from emostream.voices.cloning.registries import open_registry
from emostream.voices.cloning.registry import (
    SCHEMA_VERSION,
    ClonedVoice,
    Reenrolment,
    RefineUpdate,
    VoiceRegistry,
    VoiceStore,
)
from emostream.voices.cloning.registry_redis import RedisVoiceRegistry
from tests.voices.voice_fixtures import RedisServer

STALE = 600.0
CLIP = (np.sin(np.linspace(0, 300, 16000)) * 0.3).astype(np.float32)


def _add(reg: VoiceStore, seed: int = 0) -> ClonedVoice:
    emb = np.random.default_rng(seed).standard_normal(256).astype(np.float32)
    return reg.add(name=f"v{seed}", embedding=emb, encoder="ge2e-1", clip_sha256="a" * 64,
                   duration_s=5.0, speech_s=4.5, clip_audio=CLIP, source_rate=44100)  # fmt: skip


def _refined(seed: int = 0) -> Refined:
    timbre = np.random.default_rng(seed).normal(0, 0.4, TIMBRE_SHAPE).astype(np.float32)
    return Refined(timbre, {"ge2e_similarity_after": 0.9, "seconds": 3.0}, 1000.0 + seed, "a" * 64)


def _begin(job: str, now: float = 10.0):  # type: ignore[no-untyped-def]
    return lambda v: RefineUpdate(begin(v.refine, job=job, now=now, stale_after_s=STALE))


def _succeed(job: str, refined: Refined, enrolment: Reenrolment | None = None):  # type: ignore[no-untyped-def]
    return lambda v: RefineUpdate(succeed(v.refine, job=job, refined=refined, now=20.0), enrolment)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VoiceStore]:
    if request.param == "sqlite":
        reg: VoiceStore = open_registry("", tmp_path)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        reg = open_registry(server.url, tmp_path)
    yield reg
    reg.close()


def test_refinement_lands_whole(store: VoiceStore) -> None:
    voice = _add(store)
    assert voice.refine.state is RefineState.READY and voice.source_rate == 44100
    got = store.get(voice.id)
    assert got is not None and got.refine.state is RefineState.READY and got.timbre is None
    begun = store.update_refine(voice.id, _begin("j1"))
    assert begun is not None and begun.refine.state is RefineState.REFINING
    done = _refined(1)
    after = store.update_refine(voice.id, _succeed("j1", done))
    assert after is not None and after.refine.state is RefineState.REFINED
    stored = store.get(voice.id)
    assert stored is not None and stored.timbre is not None
    np.testing.assert_array_equal(stored.timbre, done.timbre)
    assert stored.refine.refined is not None and stored.refine.refined.summary == done.summary
    np.testing.assert_array_equal(stored.embedding, voice.embedding)  # no new clip: unchanged
    assert [v.refine.state for v in store.voices()] == [RefineState.REFINED]


def test_a_refused_move_writes_nothing(store: VoiceStore) -> None:
    voice = _add(store)
    store.update_refine(voice.id, _begin("j1"))
    before = store.get(voice.id)
    with pytest.raises(StaleJob):  # another job's result
        store.update_refine(voice.id, _succeed("other", _refined()))

    def broken(v: ClonedVoice) -> RefineUpdate:
        raise RuntimeError("mid-way")

    with pytest.raises(RuntimeError):
        store.update_refine(voice.id, broken)
    after = store.get(voice.id)
    assert after is not None and before is not None and after.refine == before.refine


def test_a_failed_attempt_keeps_the_refinement(store: VoiceStore) -> None:
    voice = _add(store)
    first = _refined(1)
    store.update_refine(voice.id, _begin("j1"))
    store.update_refine(voice.id, _succeed("j1", first))
    store.update_refine(voice.id, _begin("j2", now=30.0))
    out = store.update_refine(voice.id, lambda v: RefineUpdate(
        fail(v.refine, job="j2", notice=Notice("timeout", "slow"), now=40.0)))  # fmt: skip
    assert out is not None and out.refine.state is RefineState.FAILED
    assert out.timbre is not None
    np.testing.assert_array_equal(out.timbre, first.timbre)


def test_a_new_clip_is_stored_with_its_refinement(store: VoiceStore) -> None:
    voice = _add(store)
    store.update_refine(voice.id, _begin("j1"))
    new_emb = np.full(256, 1 / 16, np.float32)
    new_clip = (np.cos(np.linspace(0, 500, 32000)) * 0.2).astype(np.float32)
    enrolment = Reenrolment(embedding=new_emb, encoder="ge2e-2", clip_sha256="b" * 64,
                            duration_s=2.0, speech_s=1.8, source_rate=8000,
                            clip_audio=new_clip)  # fmt: skip
    out = store.update_refine(voice.id, _succeed("j1", _refined(2), enrolment))
    assert out is not None
    assert out.clip_sha256 == "b" * 64 and out.encoder == "ge2e-2" and out.source_rate == 8000
    assert out.duration_s == 2.0 and out.speech_s == 1.8 and out.name == voice.name
    np.testing.assert_array_equal(out.embedding, new_emb)
    clip = store.clip(voice.id)
    assert clip is not None and clip[0].shape == (32000,)


def test_nothing_is_written_to_a_deleted_voice(store: VoiceStore) -> None:
    voice = _add(store)
    store.update_refine(voice.id, _begin("j1"))
    assert store.delete(voice.id)
    assert store.update_refine(voice.id, _succeed("j1", _refined())) is None
    assert store.get(voice.id) is None and len(store) == 0
    if isinstance(store, RedisVoiceRegistry):  # no hash half-made by the write
        assert store._r.exists(store._key(voice.id)) == 0


def test_refined_voice_survives_a_restart(tmp_path: Path) -> None:
    reg = VoiceRegistry.in_data_dir(tmp_path)
    voice = _add(reg)
    done = _refined(5)
    reg.update_refine(voice.id, _begin("j1"))
    reg.update_refine(voice.id, _succeed("j1", done))
    reg.close()
    again = VoiceRegistry.in_data_dir(tmp_path)
    got = again.get(voice.id)
    assert got is not None and got.refine.state is RefineState.REFINED
    assert got.timbre is not None
    np.testing.assert_array_equal(got.timbre, done.timbre)
    again.close()


def test_redis_refinement_survives_a_redis_restart(persistent_redis: RedisServer) -> None:
    reg = RedisVoiceRegistry(persistent_redis.url)
    voice = _add(reg)
    reg.update_refine(voice.id, _begin("j1"))
    reg.update_refine(voice.id, _succeed("j1", _refined(6)))
    reg.close()
    persistent_redis.stop()
    persistent_redis.start()
    reg = RedisVoiceRegistry(persistent_redis.url)
    got = reg.get(voice.id)
    assert got is not None and got.refine.state is RefineState.REFINED and got.timbre is not None
    reg.close()


V2_SCHEMA = """
CREATE TABLE cloned_voices (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL, clip_sha256 TEXT NOT NULL,
    duration_s REAL NOT NULL, speech_s REAL NOT NULL, encoder TEXT NOT NULL,
    embedding BLOB NOT NULL, clip_flac BLOB, owner TEXT
);
CREATE INDEX cloned_voices_created ON cloned_voices (created);
PRAGMA user_version=2;
"""


def test_sqlite_schema_2_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "voices.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(V2_SCHEMA)
    emb = np.full(256, 0.5, "<f4").tobytes()
    db.execute("INSERT INTO cloned_voices VALUES ('clone_0123456789abcdef', 'Old', 1.0, 'x', "
               "5.0, 4.0, 'e', ?, NULL, 'alice')", (emb,))  # fmt: skip
    db.commit()
    db.close()
    reg = VoiceRegistry(path)
    [old] = reg.voices()
    assert old.owner == "alice" and old.source_rate is None
    assert old.refine.state is RefineState.READY and old.timbre is None
    reg.update_refine(old.id, _begin("j1"))
    out = reg.update_refine(old.id, _succeed("j1", _refined()))
    assert out is not None and out.refine.state is RefineState.REFINED
    reg.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert SCHEMA_VERSION == 4  # 4: the pronunciation dictionaries' table (test_registry_dictionaries)


def test_sqlite_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "voices.sqlite3"
    VoiceRegistry(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(RuntimeError, match="newer"):
        VoiceRegistry(path)


def test_redis_schema_1_is_migrated(redis_server: RedisServer) -> None:
    r = redis.Redis.from_url(redis_server.url)
    prefix = "emostream:voices"
    r.set(f"{prefix}:schema", 1)
    r.hset(f"{prefix}:v:clone_0123456789abcdef", mapping={
        "name": "Old", "created": "1.0", "clip_sha256": "x", "duration_s": "5.0",
        "speech_s": "4.0", "encoder": "e", "embedding": np.zeros(256, "<f4").tobytes(),
    })  # fmt: skip
    r.zadd(f"{prefix}:index", {"clone_0123456789abcdef": 1.0})
    reg = RedisVoiceRegistry(redis_server.url)
    assert reg.schema_version() == 3  # 1 -> 2 -> 3 (3: pronunciation dictionaries, new keys)
    assert r.hget(f"{prefix}:v:clone_0123456789abcdef", "refine_state") == b"ready"
    [old] = reg.voices()
    assert old.refine.state is RefineState.READY and old.source_rate is None
    reg.close()
    r.close()
