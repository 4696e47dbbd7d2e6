"""Cloned voices, persisted in SQLite so they survive a restart.

A cloned voice (:mod:`emostream.voices.cloning.voice_record`) is a name, an id, the speaker
embedding of its reference clip (with the encoder version that made it) and the cleaned clip
itself (16 kHz FLAC, so a later encoder can re-embed it and so emotion-by-reference can read its
prosody). Stock voices are not stored here; the catalog lists them beside these.

Since schema 3 a voice also carries its refinement (:mod:`emostream.voices.cloning.refine_state`:
state, the fitted timbre and its figures) and its clip's source sample rate; a move of the
refinement (and, with a new clip, the new clip and embedding) is written in one transaction by
:meth:`VoiceStore.update_refine`.

Since schema 4 the file also holds the callers' pronunciation dictionaries
(:class:`DictionaryStore`: a name, an owner and the checked entries as JSON;
:mod:`emostream.text.pron.lexicon`), in a table of their own.

Plain ``sqlite3`` (one connection, a lock, WAL journal): every call is short and synchronous, so
the HTTP layer may call it directly or through a thread. :class:`VoiceStore` is what the server
needs of a registry (any call may raise :class:`StoreUnavailable` while its store cannot be
reached); :mod:`emostream.voices.cloning.registry_redis` is the shared one (several hosts), and
:func:`emostream.voices.cloning.registries.open_registry` picks by ``Settings.voice_registry_url``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

import numpy as np

from emostream.text.pron.lexicon import PronunciationDictionary, entries_from_json
from emostream.voices.cloning.refine_state import FIELDS as REFINE_FIELDS
from emostream.voices.cloning.refine_state import record_fields, record_from_fields

# The record types live in voice_record; they are named here too (their historical home).
from emostream.voices.cloning.voice_record import (
    ID_PREFIX,
    NAME_MAX,
    ClonedVoice,
    FloatArray,
    Reenrolment,
    RefineMove,
    RefineUpdate,
    clean_name,
    flac_clip,
    is_cloned_id,
    new_voice_id,
    read_flac,
)

__all__ = [
    "ID_PREFIX",
    "NAME_MAX",
    "SCHEMA_VERSION",
    "ClonedVoice",
    "DictionaryStore",
    "FloatArray",
    "Reenrolment",
    "RefineMove",
    "RefineUpdate",
    "StoreUnavailable",
    "VoiceRegistry",
    "VoiceStore",
    "clean_name",
    "flac_clip",
    "is_cloned_id",
    "new_voice_id",
    "read_flac",
]

log = logging.getLogger(__name__)

# 2: owner (the API-key principal that made the clone); 3: source_rate and the refinement
# (refine_state, refine_since, refine_job, refine_notice, refinement, timbre); 4: the
# pronunciation_dictionaries table
SCHEMA_VERSION = 4
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cloned_voices (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created     REAL NOT NULL,
    clip_sha256 TEXT NOT NULL,
    duration_s  REAL NOT NULL,
    speech_s    REAL NOT NULL,
    encoder     TEXT NOT NULL,
    embedding   BLOB NOT NULL,
    clip_flac   BLOB,
    owner       TEXT
);
CREATE INDEX IF NOT EXISTS cloned_voices_created ON cloned_voices (created);
CREATE TABLE IF NOT EXISTS pronunciation_dictionaries (
    id      TEXT PRIMARY KEY,
    name    TEXT NOT NULL,
    owner   TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    entries TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS pronunciation_dictionaries_owner
    ON pronunciation_dictionaries (owner, created);
"""
# Columns added after schema 1, in order, with their types (a fresh file gets them the same way
# an old one does: ALTER TABLE ... ADD COLUMN).
_ADDED = (
    ("owner", "TEXT"),
    ("source_rate", "INTEGER"),
    ("refine_state", "TEXT"),
    ("refine_since", "REAL"),
    ("refine_job", "TEXT"),
    ("refine_notice", "TEXT"),
    ("refinement", "TEXT"),
    ("timbre", "BLOB"),
)


class StoreUnavailable(Exception):
    """A registry's store cannot be reached now (refused, timed out, gone): raised by any
    :class:`VoiceStore` call instead of the client library's error. ``message`` names the store
    (for logs and start-up errors, not for clients); ``retry_after_s``: when trying again is
    worth it. A write whose answer was lost may still have landed."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class VoiceStore(Protocol):
    """A registry of cloned voices: SQLite (:class:`VoiceRegistry`, one host) or Redis
    (:class:`~emostream.voices.cloning.registry_redis.RedisVoiceRegistry`, shared by hosts).
    Every call is short and synchronous, and raises :class:`StoreUnavailable` (nothing else)
    when the store cannot be reached."""

    def add(
        self,
        *,
        name: str,
        embedding: FloatArray,
        encoder: str,
        clip_sha256: str,
        duration_s: float,
        speech_s: float,
        clip_audio: FloatArray | None = None,
        sample_rate: int = 16000,
        owner: str | None = None,
        source_rate: int | None = None,
    ) -> ClonedVoice: ...

    def get(self, voice_id: str) -> ClonedVoice | None: ...

    def update_refine(self, voice_id: str, move: RefineMove) -> ClonedVoice | None:
        """Apply ``move`` to the stored voice and write what it returns, atomically (read and
        write in one transaction: another writer in between makes it read again; an exception
        from ``move`` writes nothing and is raised). The voice as written, or None when there
        is no such voice (deleted meanwhile: nothing is written)."""
        ...

    def voices(self, *, owner: str | None = None) -> list[ClonedVoice]: ...

    def clip(self, voice_id: str) -> tuple[FloatArray, int] | None: ...

    def delete(self, voice_id: str) -> bool: ...

    def __len__(self) -> int: ...

    def check(self) -> None:
        """Raise :class:`StoreUnavailable` if the store cannot be reached now (for health)."""

    def close(self) -> None: ...


class DictionaryStore(Protocol):
    """Pronunciation dictionaries, kept by the voice registry's store (SQLite or Redis). Calls
    are short and synchronous and raise :class:`StoreUnavailable` as a :class:`VoiceStore`'s
    do. Entries are stored as checked (:func:`~emostream.text.pron.lexicon.parse_entries`)."""

    def add_dictionary(self, dictionary: PronunciationDictionary) -> None: ...

    def get_dictionary(self, dictionary_id: str) -> PronunciationDictionary | None: ...

    def dictionaries(self, *, owner: str | None = None) -> list[PronunciationDictionary]:
        """All dictionaries (only ``owner``'s when given), oldest first."""
        ...

    def replace_dictionary(self, dictionary: PronunciationDictionary) -> bool:
        """Its name, entries and ``updated`` written over the stored one's; False when there
        is none (nothing written)."""
        ...

    def delete_dictionary(self, dictionary_id: str) -> bool: ...


class Registry(VoiceStore, DictionaryStore, Protocol):
    """What the server keeps: cloned voices and pronunciation dictionaries, in one store."""


class VoiceRegistry:
    """SQLite-backed store of cloned voices (and pronunciation dictionaries). Thread-safe."""

    def __init__(self, path: Path | str, *, keep_clips: bool = True) -> None:
        self.path = Path(path).expanduser()
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keep_clips = keep_clips
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path if str(path) == ":memory:" else self.path),
                                   check_same_thread=False, isolation_level=None)  # fmt: skip
        if str(path) != ":memory:":  # clips and embeddings are the owners' data: 0600
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.chmod(f"{self.path}{suffix}", 0o600)
        with self._lock:
            self._setup()

    def _setup(self, *, wait_s: float = 10.0) -> None:
        """WAL mode, schema and migrations. Several server workers open a new data folder at
        once, and switching a fresh file to WAL answers "database is locked" at once rather
        than through the busy timeout (4 processes opening one fresh file together: 47 of 400
        opens failed, the worker died at start-up): such a refusal is tried again for up to
        ``wait_s`` seconds."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02 + random.random() * 0.05)

    def _migrate(self) -> None:
        """Schema and migrations in one ``BEGIN IMMEDIATE`` transaction: of several processes
        opening one file, one migrates and the others then find it done."""
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} was written by a newer emostream (schema {version})"
                )
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(cloned_voices)")}
            for name, kind in _ADDED:  # schema 1 -> 2: owner; 2 -> 3: source rate, refinement
                if name not in columns:
                    self._db.execute(f"ALTER TABLE cloned_voices ADD COLUMN {name} {kind}")
            if version < SCHEMA_VERSION:
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    @classmethod
    def in_data_dir(cls, data_dir: str | Path, **kwargs: bool) -> VoiceRegistry:
        """The registry at ``<data_dir>/voices.sqlite3`` (``Settings.data_dir``)."""
        return cls(Path(data_dir).expanduser() / "voices.sqlite3", **kwargs)

    def add(
        self,
        *,
        name: str,
        embedding: FloatArray,
        encoder: str,
        clip_sha256: str,
        duration_s: float,
        speech_s: float,
        clip_audio: FloatArray | None = None,
        sample_rate: int = 16000,
        owner: str | None = None,
        source_rate: int | None = None,
    ) -> ClonedVoice:
        voice = ClonedVoice.new(
            name=name,
            embedding=embedding,
            encoder=encoder,
            clip_sha256=clip_sha256,
            duration_s=duration_s,
            speech_s=speech_s,
            owner=owner,
            source_rate=source_rate,
        )
        flac = (
            flac_clip(clip_audio, sample_rate)
            if clip_audio is not None and self.keep_clips
            else None
        )
        values = {**self._base(voice), "clip_flac": flac, **record_fields(voice.refine)}
        with self._lock:
            self._db.execute(
                f"INSERT INTO cloned_voices ({', '.join(values)}) "
                f"VALUES ({', '.join('?' * len(values))})",
                tuple(values.values()),
            )
        log.info("cloned voice %s (%r) stored", voice.id, voice.name)
        return voice

    @staticmethod
    def _base(voice: ClonedVoice) -> dict[str, object]:
        return {
            "id": voice.id, "name": voice.name, "created": voice.created,
            "clip_sha256": voice.clip_sha256, "duration_s": voice.duration_s,
            "speech_s": voice.speech_s, "encoder": voice.encoder,
            "embedding": voice.embedding.astype("<f4").tobytes(), "owner": voice.owner,
            "source_rate": voice.source_rate,
        }  # fmt: skip

    @staticmethod
    def _row(row: tuple[object, ...]) -> ClonedVoice:
        vid, name, created, sha, dur, speech, enc, emb, owner, rate, *refine = row
        assert isinstance(emb, bytes)
        return ClonedVoice(
            id=str(vid),
            name=str(name),
            created=float(created),  # type: ignore[arg-type]
            clip_sha256=str(sha),
            duration_s=float(dur),  # type: ignore[arg-type]
            speech_s=float(speech),  # type: ignore[arg-type]
            encoder=str(enc),
            embedding=np.frombuffer(emb, dtype="<f4").astype(np.float32),
            owner=None if owner is None else str(owner),
            source_rate=None if rate is None else int(rate),  # type: ignore[call-overload]
            refine=record_from_fields(dict(zip(REFINE_FIELDS, refine, strict=True))),
        )

    _COLUMNS = ("id, name, created, clip_sha256, duration_s, speech_s, encoder, embedding, owner, "
                "source_rate, " + ", ".join(REFINE_FIELDS))  # fmt: skip

    def get(self, voice_id: str) -> ClonedVoice | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._COLUMNS} FROM cloned_voices WHERE id = ?", (voice_id,)
            ).fetchone()
        return None if row is None else self._row(row)

    def update_refine(self, voice_id: str, move: RefineMove) -> ClonedVoice | None:
        """See :meth:`VoiceStore.update_refine`: one ``BEGIN IMMEDIATE`` transaction (other
        processes on the same file wait for it, through SQLite's busy timeout)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    f"SELECT {self._COLUMNS} FROM cloned_voices WHERE id = ?", (voice_id,)
                ).fetchone()
                if row is None:
                    self._db.execute("ROLLBACK")
                    return None
                update = move(self._row(row))
                values: dict[str, object] = dict(record_fields(update.record))
                new = update.enrolment
                if new is not None:
                    values.update(
                        embedding=np.asarray(new.embedding, "<f4").tobytes(), encoder=new.encoder,
                        clip_sha256=new.clip_sha256, duration_s=float(new.duration_s),
                        speech_s=float(new.speech_s), source_rate=int(new.source_rate),
                        clip_flac=flac_clip(new.clip_audio, new.sample_rate)
                        if self.keep_clips else None,
                    )  # fmt: skip
                self._db.execute(
                    f"UPDATE cloned_voices SET {', '.join(f'{k} = ?' for k in values)} "
                    "WHERE id = ?",
                    (*values.values(), voice_id),
                )
                row = self._db.execute(
                    f"SELECT {self._COLUMNS} FROM cloned_voices WHERE id = ?", (voice_id,)
                ).fetchone()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self._row(row)

    def voices(self, *, owner: str | None = None) -> list[ClonedVoice]:
        """All cloned voices (only ``owner``'s when given), oldest first."""
        where, args = ("WHERE owner = ?", (owner,)) if owner is not None else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._COLUMNS} FROM cloned_voices {where} ORDER BY created, id", args
            ).fetchall()
        return [self._row(r) for r in rows]

    def clip(self, voice_id: str) -> tuple[FloatArray, int] | None:
        """The stored reference clip ``(audio, sample_rate)``, if kept."""
        with self._lock:
            row = self._db.execute(
                "SELECT clip_flac FROM cloned_voices WHERE id = ?", (voice_id,)
            ).fetchone()
        if row is None or row[0] is None:
            return None
        return read_flac(row[0])

    def delete(self, voice_id: str) -> bool:
        with self._lock:
            cur = self._db.execute("DELETE FROM cloned_voices WHERE id = ?", (voice_id,))
        return cur.rowcount > 0

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM cloned_voices").fetchone()[0])

    # -- pronunciation dictionaries ----------------------------------------------------------
    _DICT_COLUMNS = "id, name, owner, created, updated, entries"

    @staticmethod
    def _dictionary(row: tuple[object, ...]) -> PronunciationDictionary:
        did, name, owner, created, updated, entries = row
        return PronunciationDictionary(
            id=str(did), name=str(name), entries=entries_from_json(str(entries)),
            owner=None if owner is None else str(owner), created=float(created),  # type: ignore[arg-type]
            updated=float(updated),  # type: ignore[arg-type]
        )  # fmt: skip

    def add_dictionary(self, dictionary: PronunciationDictionary) -> None:
        d = dictionary
        with self._lock:
            self._db.execute(
                f"INSERT INTO pronunciation_dictionaries ({self._DICT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (d.id, d.name, d.owner, d.created, d.updated, d.entries_json()),
            )

    def get_dictionary(self, dictionary_id: str) -> PronunciationDictionary | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._DICT_COLUMNS} FROM pronunciation_dictionaries WHERE id = ?",
                (dictionary_id,),
            ).fetchone()
        return None if row is None else self._dictionary(row)

    def dictionaries(self, *, owner: str | None = None) -> list[PronunciationDictionary]:
        where, args = ("WHERE owner = ?", (owner,)) if owner is not None else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._DICT_COLUMNS} FROM pronunciation_dictionaries {where} "
                "ORDER BY created, id", args,
            ).fetchall()  # fmt: skip
        return [self._dictionary(r) for r in rows]

    def replace_dictionary(self, dictionary: PronunciationDictionary) -> bool:
        d = dictionary
        with self._lock:
            cur = self._db.execute(
                "UPDATE pronunciation_dictionaries SET name = ?, entries = ?, updated = ? "
                "WHERE id = ?",
                (d.name, d.entries_json(), d.updated, d.id),
            )
        return cur.rowcount > 0

    def delete_dictionary(self, dictionary_id: str) -> bool:
        with self._lock:
            cur = self._db.execute(
                "DELETE FROM pronunciation_dictionaries WHERE id = ?", (dictionary_id,)
            )
        return cur.rowcount > 0

    def check(self) -> None:
        """A local file: always reachable."""

    def close(self) -> None:
        with self._lock:
            self._db.close()
