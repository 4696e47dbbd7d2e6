"""Cloned voices carry their owner (schema 2); a schema-1 database is upgraded in place."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import numpy as np

from emostream.voices.cloning.registry import SCHEMA_VERSION, VoiceRegistry

V1_SCHEMA = """
CREATE TABLE cloned_voices (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL, clip_sha256 TEXT NOT NULL,
    duration_s REAL NOT NULL, speech_s REAL NOT NULL, encoder TEXT NOT NULL,
    embedding BLOB NOT NULL, clip_flac BLOB
);
PRAGMA user_version=1;
"""


def _add(reg: VoiceRegistry, name: str, owner: str | None) -> str:
    emb = np.ones(256, dtype=np.float32)
    return reg.add(name=name, embedding=emb, encoder="e", clip_sha256="0" * 64,
                   duration_s=5.0, speech_s=4.0, owner=owner).id  # fmt: skip


def test_owner_is_stored_and_filters(tmp_path: Path) -> None:
    reg = VoiceRegistry(tmp_path / "v.sqlite3")
    a = _add(reg, "A", "alice")
    b = _add(reg, "B", "bob")
    anon = _add(reg, "N", None)
    assert [v.id for v in reg.voices(owner="alice")] == [a]
    assert {v.id for v in reg.voices()} == {a, b, anon}
    reg.close()
    again = VoiceRegistry(tmp_path / "v.sqlite3")
    got = again.get(b)
    assert got is not None and got.owner == "bob"
    none = again.get(anon)
    assert none is not None and none.owner is None
    assert stat.S_IMODE((tmp_path / "v.sqlite3").stat().st_mode) == 0o600
    again.close()


def test_schema_1_database_gets_an_owner_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    emb = np.zeros(256, dtype="<f4").tobytes()
    db.execute("INSERT INTO cloned_voices VALUES ('clone_0123456789abcdef', 'Old', 1.0, 'x', "
               "5.0, 4.0, 'e', ?, NULL)", (emb,))  # fmt: skip
    db.commit()
    db.close()
    reg = VoiceRegistry(path)
    [old] = reg.voices()
    assert old.id == "clone_0123456789abcdef" and old.owner is None
    new = _add(reg, "New", "alice")
    assert [v.id for v in reg.voices(owner="alice")] == [new]
    reg.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
