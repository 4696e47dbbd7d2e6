"""Pronunciation dictionaries in the voice registry: one contract for SQLite and Redis, kept
across a restart of the server (SQLite file) and of Redis (append-only file), and an older
SQLite file (schema 3) migrated in place with its clones."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from emostream.text.pron.lexicon import PronunciationDictionary, parse_entries
from emostream.voices.cloning.registries import open_registry
from emostream.voices.cloning.registry import SCHEMA_VERSION, Registry, VoiceRegistry
from emostream.voices.cloning.registry_redis import RedisVoiceRegistry
from tests.voices.voice_fixtures import RedisServer

ENTRIES = parse_entries([{"word": "Nguyen", "ipa": "/wɪn/"}, {"word": "行长", "pinyin": "hang2 zhang3"},
                         {"word": "Siobhan", "respelling": "shiv awn"}])  # fmt: skip


def _new(name: str, owner: str | None) -> PronunciationDictionary:
    return PronunciationDictionary.new(name, ENTRIES, owner)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    if request.param == "sqlite":
        reg = open_registry("", tmp_path)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        reg = open_registry(server.url, tmp_path)
    yield reg
    reg.close()


def test_contract(store: Registry) -> None:
    a, b, anon = _new("a", "alice"), _new("b", "bob"), _new("c", None)
    for d in (a, b, anon):
        store.add_dictionary(d)
    assert [d.id for d in store.dictionaries()] == [a.id, b.id, anon.id]  # oldest first
    assert [d.id for d in store.dictionaries(owner="bob")] == [b.id]
    got = store.get_dictionary(a.id)
    assert got == a  # entries, owner, times: as written
    assert store.get_dictionary(anon.id) == anon and anon.owner is None
    assert store.get_dictionary("pdict_0000000000000000") is None
    new = PronunciationDictionary(a.id, "renamed", ENTRIES[:1], "alice", a.created, a.created + 5)
    assert store.replace_dictionary(new) is True
    assert store.get_dictionary(a.id) == new
    assert store.delete_dictionary(b.id) is True and store.delete_dictionary(b.id) is False
    assert store.replace_dictionary(_new("gone", "bob")) is False  # none with that id: no write
    assert store.get_dictionary(b.id) is None and len(store.dictionaries()) == 2
    assert len(store) == 0  # dictionaries are no clones


def test_kept_across_a_restart(tmp_path: Path) -> None:
    reg = VoiceRegistry.in_data_dir(tmp_path)
    d = _new("names", "alice")
    reg.add_dictionary(d)
    reg.close()
    again = VoiceRegistry.in_data_dir(tmp_path)  # a new server on the same data folder
    assert again.get_dictionary(d.id) == d
    assert [x.id for x in again.dictionaries(owner="alice")] == [d.id]
    again.close()


def test_kept_across_a_redis_restart(persistent_redis: RedisServer) -> None:
    reg = RedisVoiceRegistry(persistent_redis.url)
    d = _new("names", "alice")
    reg.add_dictionary(d)
    reg.close()
    persistent_redis.stop()
    persistent_redis.start()
    again = RedisVoiceRegistry(persistent_redis.url)
    assert again.get_dictionary(d.id) == d
    again.close()


V3_SCHEMA = """
CREATE TABLE cloned_voices (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL, clip_sha256 TEXT NOT NULL,
    duration_s REAL NOT NULL, speech_s REAL NOT NULL, encoder TEXT NOT NULL,
    embedding BLOB NOT NULL, clip_flac BLOB, owner TEXT, source_rate INTEGER,
    refine_state TEXT, refine_since REAL, refine_job TEXT, refine_notice TEXT, refinement TEXT,
    timbre BLOB
);
CREATE INDEX cloned_voices_created ON cloned_voices (created);
PRAGMA user_version=3;
"""


def test_sqlite_schema_3_gets_the_table(tmp_path: Path) -> None:
    path = tmp_path / "voices.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(V3_SCHEMA)
    db.execute("INSERT INTO cloned_voices (id, name, created, clip_sha256, duration_s, speech_s, "
               "encoder, embedding, owner) VALUES ('clone_0123456789abcdef', 'Old', 1.0, 'x', "
               "5.0, 4.0, 'e', ?, 'alice')", (np.zeros(256, "<f4").tobytes(),))  # fmt: skip
    db.commit()
    db.close()
    reg = VoiceRegistry(path)
    assert [v.name for v in reg.voices()] == ["Old"]
    d = _new("names", "alice")
    reg.add_dictionary(d)
    assert reg.get_dictionary(d.id) == d
    reg.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
