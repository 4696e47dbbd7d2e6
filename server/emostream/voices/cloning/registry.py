"""Cloned voices, persisted in SQLite so they survive a restart.

A cloned voice is a name, an id, the speaker embedding of its reference clip (with the encoder
version that made it) and the cleaned clip itself (16 kHz FLAC, so a later encoder can re-embed it
and so emotion-by-reference can read its prosody). Stock voices are not stored here; the catalog
lists them beside these.

Plain ``sqlite3`` (one connection, a lock, WAL journal): every call is short and synchronous, so
the HTTP layer may call it directly or through a thread. :class:`VoiceStore` is what the server
needs of a registry (any call may raise :class:`StoreUnavailable` while its store cannot be
reached); :mod:`emostream.voices.cloning.registry_redis` is the shared one (several hosts), and
:func:`emostream.voices.cloning.registries.open_registry` picks by ``Settings.voice_registry_url``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import random
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import soundfile as sf

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]

SCHEMA_VERSION = 2  # 2: owner (the API-key principal that made the clone)
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
"""

ID_PREFIX = "clone_"
_ID_RE = re.compile(r"^clone_[0-9a-f]{16}$")
NAME_MAX = 64


def is_cloned_id(voice_id: str) -> bool:
    """Whether ``voice_id`` has the shape of a cloned-voice id (stock ids never do)."""
    return bool(_ID_RE.match(voice_id))


def clean_name(name: str, *, max_chars: int = NAME_MAX) -> str:
    """Trimmed display name; raises ``ValueError`` when empty, too long or holding control chars."""
    name = name.strip()
    if not name:
        raise ValueError("'name' must not be empty")
    if len(name) > max_chars:
        raise ValueError(f"'name' is over {max_chars} characters")
    if any(not ch.isprintable() for ch in name):
        raise ValueError("'name' holds control characters")
    return name


@dataclass(frozen=True)
class ClonedVoice:
    id: str
    name: str
    created: float  # unix seconds
    clip_sha256: str
    duration_s: float
    speech_s: float
    encoder: str
    embedding: FloatArray
    owner: str | None = None  # the API-key principal that made it; None: made with auth off

    @classmethod
    def new(
        cls,
        *,
        name: str,
        embedding: FloatArray,
        encoder: str,
        clip_sha256: str,
        duration_s: float,
        speech_s: float,
        owner: str | None = None,
    ) -> ClonedVoice:
        """A voice being registered now: a fresh id, the name cleaned (every store)."""
        return cls(
            id=new_voice_id(),
            name=clean_name(name),
            created=time.time(),
            clip_sha256=clip_sha256,
            duration_s=float(duration_s),
            speech_s=float(speech_s),
            encoder=encoder,
            embedding=np.asarray(embedding, dtype=np.float32),
            owner=owner,
        )

    def as_dict(self) -> dict[str, object]:
        """What the voices API shows (the embedding stays on the server)."""
        return {
            "id": self.id,
            "name": self.name,
            "type": "cloned",
            "created": datetime.fromtimestamp(self.created, UTC).isoformat(timespec="seconds"),
            "clip_sha256": self.clip_sha256,
            "duration_s": round(self.duration_s, 3),
            "speech_s": round(self.speech_s, 3),
            "encoder": self.encoder,
        }


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
    ) -> ClonedVoice: ...

    def get(self, voice_id: str) -> ClonedVoice | None: ...

    def voices(self, *, owner: str | None = None) -> list[ClonedVoice]: ...

    def clip(self, voice_id: str) -> tuple[FloatArray, int] | None: ...

    def delete(self, voice_id: str) -> bool: ...

    def __len__(self) -> int: ...

    def check(self) -> None:
        """Raise :class:`StoreUnavailable` if the store cannot be reached now (for health)."""

    def close(self) -> None: ...


def new_voice_id() -> str:
    return ID_PREFIX + secrets.token_hex(8)


def flac_clip(audio: FloatArray, sample_rate: int) -> bytes:
    """A reference clip as stored: 16-bit FLAC."""
    buf = io.BytesIO()
    sf.write(buf, audio, sample_rate, format="FLAC", subtype="PCM_16")
    return buf.getvalue()


def read_flac(data: bytes) -> tuple[FloatArray, int]:
    audio, rate = sf.read(io.BytesIO(data), dtype="float32")
    return np.asarray(audio, dtype=np.float32), int(rate)


class VoiceRegistry:
    """SQLite-backed store of cloned voices. Thread-safe."""

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
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path} was written by a newer emostream (schema {version})")
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(cloned_voices)")}
        if "owner" not in columns:  # schema 1: clones made before keys existed
            self._db.execute("ALTER TABLE cloned_voices ADD COLUMN owner TEXT")
        if version < SCHEMA_VERSION:
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

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
    ) -> ClonedVoice:
        voice = ClonedVoice.new(
            name=name,
            embedding=embedding,
            encoder=encoder,
            clip_sha256=clip_sha256,
            duration_s=duration_s,
            speech_s=speech_s,
            owner=owner,
        )
        flac = (
            flac_clip(clip_audio, sample_rate)
            if clip_audio is not None and self.keep_clips
            else None
        )
        with self._lock:
            self._db.execute(
                f"INSERT INTO cloned_voices ({self._COLUMNS}, clip_flac) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (voice.id, voice.name, voice.created, voice.clip_sha256, voice.duration_s,
                 voice.speech_s, voice.encoder, voice.embedding.astype("<f4").tobytes(),
                 voice.owner, flac),
            )  # fmt: skip
        log.info("cloned voice %s (%r) stored", voice.id, voice.name)
        return voice

    @staticmethod
    def _row(row: tuple[object, ...]) -> ClonedVoice:
        vid, name, created, sha, dur, speech, enc, emb, owner = row
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
        )

    _COLUMNS = "id, name, created, clip_sha256, duration_s, speech_s, encoder, embedding, owner"

    def get(self, voice_id: str) -> ClonedVoice | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._COLUMNS} FROM cloned_voices WHERE id = ?", (voice_id,)
            ).fetchone()
        return None if row is None else self._row(row)

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

    def check(self) -> None:
        """A local file: always reachable."""

    def close(self) -> None:
        with self._lock:
            self._db.close()
