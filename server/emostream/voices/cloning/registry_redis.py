"""The shared voice registry: cloned voices in Redis, speakable from every host that uses it.

Several servers (hosts, Ray Serve ingress and model replicas) register and read clones in one
Redis; a clone made through one is found by all of them, and survives the loss of any one
server. Survival of Redis itself is Redis's persistence (``appendonly yes``, or RDB
snapshots): :attr:`RedisVoiceRegistry.persistent` says whether the server has it on, and a
warning is logged when it has neither (the README's "Cluster" section runs it with AOF).

Layout under ``prefix`` (default ``emostream:voices``), schema :data:`SCHEMA_VERSION`:

* ``<prefix>:schema`` -- the schema version of what is stored (a string integer);
* ``<prefix>:v:<id>`` -- one hash per clone: ``name created clip_sha256 duration_s speech_s
  encoder embedding owner clip_flac source_rate`` (embedding: little-endian float32 bytes;
  ``owner``, ``clip_flac`` and ``source_rate`` absent when there are none) and, since schema 2,
  its refinement: ``refine_state refine_since refine_job refine_notice refinement timbre``
  (:func:`emostream.voices.cloning.refine_state.record_fields`; absent: none);
* ``<prefix>:index`` -- sorted set of ids by creation time (listing oldest first);
* since schema 3, pronunciation dictionaries: ``<prefix>:d:<id>`` -- one hash each: ``name
  owner created updated entries`` (the checked entries as JSON; ``owner`` absent when there is
  none), and ``<prefix>:dindex`` -- sorted set of their ids by creation time.

A store written by a newer schema is refused at start; an older one is migrated in place by
the steps in :data:`MIGRATIONS` (1 -> 2: every clone marked ``refine_state ready``; 2 -> 3:
nothing to move, the dictionaries' keys are new). Calls are
synchronous and short (one round trip, or one pipeline), like the SQLite registry's; a
refinement update is a WATCH / MULTI transaction on the clone's hash, so its fields land
together, and never on a clone deleted meanwhile.

Outages fail closed: a call that cannot reach Redis (refused, reset, no answer within
``timeout_s``) raises :class:`~emostream.voices.cloning.registry.StoreUnavailable`, and for
``retry_after_s`` after it every call raises it at once without touching the network (calls run
on the event loop: a Redis that never answers costs one ``timeout_s`` per window, not one per
call). The first call after the window tries Redis again; redis-py reconnects by itself. One
warning is logged when an outage begins and one line when Redis answers again. Opening the
registry with Redis unreachable raises it too (a start-up error naming the URL, no log line).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np
import redis

from emostream.text.pron.lexicon import PronunciationDictionary, entries_from_json
from emostream.voices.cloning.refine_state import FIELDS as REFINE_FIELDS
from emostream.voices.cloning.refine_state import (
    RefineState,
    record_fields,
    record_from_fields,
)
from emostream.voices.cloning.registry import (
    ClonedVoice,
    FloatArray,
    RefineMove,
    StoreUnavailable,
    flac_clip,
    read_flac,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# What "cannot reach Redis" is (BusyLoadingError, a Redis still loading its data, is a
# ConnectionError); a ResponseError (a refused command) is not an outage and is raised as is.
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)

SCHEMA_VERSION = 3


def _mark_ready(r: redis.Redis, prefix: str) -> None:
    """Schema 1 -> 2: every clone gets ``refine_state ready`` (made before refinement)."""
    members: list[bytes] = r.zrange(f"{prefix}:index", 0, -1)  # type: ignore[assignment]
    pipe = r.pipeline(transaction=False)
    for member in members:
        pipe.hsetnx(f"{prefix}:v:{member.decode()}", "refine_state", RefineState.READY.value)
    pipe.execute()


def _dictionaries(r: redis.Redis, prefix: str) -> None:
    """Schema 2 -> 3: pronunciation dictionaries (new keys of their own: nothing to move)."""


# version -> the step that upgrades a store at that version to version + 1
MIGRATIONS: dict[int, Callable[[redis.Redis, str], None]] = {1: _mark_ready, 2: _dictionaries}
_DICT_FIELDS = ("name", "owner", "created", "updated", "entries")
_FIELDS = ("name", "created", "clip_sha256", "duration_s", "speech_s", "encoder", "embedding",
           "owner", "source_rate", *REFINE_FIELDS)  # fmt: skip


def redacted(url: str) -> str:
    """``url`` with its password (``user:pass@`` or ``?password=``) shown as ``***``."""
    netloc = urlsplit(url).netloc
    user, at, host = netloc.rpartition("@")
    if at and ":" in user:
        url = url.replace(netloc, f"{user.partition(':')[0]}:***@{host}", 1)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


class RedisVoiceRegistry:
    """Cloned voices in Redis (see the module docs). Thread-safe (redis-py's pool)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "emostream:voices",
        keep_clips: bool = True,
        client: redis.Redis | None = None,
        timeout_s: float = 1.0,
        retry_after_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.keep_clips = keep_clips
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._down_until = 0.0  # calls raise StoreUnavailable at once before this
        self._down_since: float | None = None  # when the outage in progress began
        self._r: redis.Redis = client or redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
            health_check_interval=30,
        )  # fmt: skip
        try:
            self._migrate()
            self.persistent = self._persistence()
        except UNREACHABLE as exc:
            self._r.close()
            raise StoreUnavailable(
                f"voice registry {redacted(url)} unreachable ({exc})", retry_after_s=retry_after_s
            ) from None

    # -- outages --------------------------------------------------------------------------

    def _call(self, op: Callable[[], T]) -> T:
        """``op()`` (Redis calls), failing closed: :class:`StoreUnavailable` when Redis cannot
        be reached, and at once while the window after a failure lasts."""
        now = self._clock()
        if now < self._down_until:
            raise self._unavailable(self._down_until - now)
        try:
            result = op()
        except UNREACHABLE as exc:
            self._failed(exc)
            raise self._unavailable(self.retry_after_s) from None
        if self._down_since is not None:
            log.info("voice registry on %s reachable again after %.1f s", redacted(self.url),
                     now - self._down_since)  # fmt: skip
            self._down_since = None
        return result

    def _failed(self, exc: Exception) -> None:
        now = self._clock()
        self._down_until = now + self.retry_after_s
        if self._down_since is None:
            self._down_since = now
            log.warning(
                "voice registry on %s unreachable (%s: %s): cloned-voice calls are refused "
                "(store_unavailable), Redis is tried again every %g s",
                redacted(self.url), type(exc).__name__, exc, self.retry_after_s,
            )  # fmt: skip
        else:
            log.debug("voice registry still unreachable: %s", exc)

    def _unavailable(self, retry_after_s: float) -> StoreUnavailable:
        return StoreUnavailable(
            f"voice registry {redacted(self.url)} unreachable", retry_after_s=retry_after_s
        )

    def check(self) -> None:
        """A PING (at once :class:`StoreUnavailable` inside the window after a failure)."""
        self._call(self._r.ping)

    # -- schema ---------------------------------------------------------------------------

    @property
    def _schema_key(self) -> str:
        return f"{self.prefix}:schema"

    def schema_version(self) -> int:
        raw = self._r.get(self._schema_key)
        return 0 if raw is None else int(raw)

    def _migrate(self) -> None:
        # SETNX: a fresh store takes the current version; several servers starting at once
        # agree on it.
        self._r.set(self._schema_key, SCHEMA_VERSION, nx=True)
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"voice registry {self.prefix!r} was written by a newer emostream "
                f"(schema {version}, this one knows {SCHEMA_VERSION})"
            )
        while version < SCHEMA_VERSION:
            step = MIGRATIONS[version]
            log.info("voice registry %s: migrating schema %d -> %d", self.prefix, version,
                     version + 1)  # fmt: skip
            step(self._r, self.prefix)
            version += 1
            self._r.set(self._schema_key, version)

    def _persistence(self) -> bool | None:
        """Whether the Redis server persists (AOF or RDB snapshots); None when it will not
        say (CONFIG disabled, as on some managed services)."""
        try:
            config: dict[Any, Any] = {}
            for name in ("appendonly", "save"):
                config.update(self._r.config_get(name))
        except redis.ResponseError:
            return None

        def text(value: Any) -> str:
            return value.decode() if isinstance(value, bytes) else str(value)

        values = {text(k): text(v) for k, v in config.items()}
        on = values.get("appendonly") == "yes" or bool(values.get("save", "").strip())
        if not on:
            log.warning(
                "voice registry on %s: Redis has no persistence (appendonly no, no save "
                "points): cloned voices are lost if Redis restarts", self.url,
            )  # fmt: skip
        return on

    # -- store ----------------------------------------------------------------------------

    def _key(self, voice_id: str) -> str:
        return f"{self.prefix}:v:{voice_id}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:index"

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
        mapping: dict[Any, Any] = {
            "name": voice.name,
            "created": repr(voice.created),
            "clip_sha256": voice.clip_sha256,
            "duration_s": repr(voice.duration_s),
            "speech_s": repr(voice.speech_s),
            "encoder": voice.encoder,
            "embedding": voice.embedding.astype("<f4").tobytes(),
        }
        if owner is not None:
            mapping["owner"] = owner
        if source_rate is not None:
            mapping["source_rate"] = str(int(source_rate))
        if clip_audio is not None and self.keep_clips:
            mapping["clip_flac"] = flac_clip(clip_audio, sample_rate)
        mapping.update(_present(record_fields(voice.refine)))
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._key(voice.id), mapping=mapping)
        pipe.zadd(self._index, {voice.id: voice.created})
        self._call(pipe.execute)
        log.info("cloned voice %s (%r) stored in %s", voice.id, voice.name, self.prefix)
        return voice

    @staticmethod
    def _voice(voice_id: str, values: list[Any]) -> ClonedVoice | None:
        name, created, sha, dur, speech, enc, emb, owner, rate, *refine = values
        if name is None or emb is None:
            return None
        return ClonedVoice(
            id=voice_id,
            name=name.decode(),
            created=float(created),
            clip_sha256=sha.decode(),
            duration_s=float(dur),
            speech_s=float(speech),
            encoder=enc.decode(),
            embedding=np.frombuffer(emb, dtype="<f4").astype(np.float32),
            owner=None if owner is None else owner.decode(),
            source_rate=None if rate is None else int(rate),
            refine=record_from_fields(dict(zip(REFINE_FIELDS, refine, strict=True))),
        )

    def get(self, voice_id: str) -> ClonedVoice | None:
        values = self._call(lambda: self._r.hmget(self._key(voice_id), list(_FIELDS)))
        return self._voice(voice_id, list(values))

    def update_refine(self, voice_id: str, move: RefineMove) -> ClonedVoice | None:
        """See :meth:`VoiceStore.update_refine`: WATCH the clone's hash, read it, MULTI the
        writes; a write by anyone in between (a delete among them) makes it read again."""
        key = self._key(voice_id)

        def op() -> ClonedVoice | None:
            with self._r.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        pipe.watch(key)  # type: ignore[no-untyped-call]
                        voice = self._voice(voice_id, list(pipe.hmget(key, list(_FIELDS))))
                        if voice is None:
                            pipe.unwatch()
                            return None
                        update = move(voice)
                        fields = record_fields(update.record)
                        mapping: dict[Any, Any] = _present(fields)
                        new = update.enrolment
                        if new is not None:
                            mapping.update(
                                embedding=np.asarray(new.embedding, "<f4").tobytes(),
                                encoder=new.encoder, clip_sha256=new.clip_sha256,
                                duration_s=repr(float(new.duration_s)),
                                speech_s=repr(float(new.speech_s)),
                                source_rate=str(int(new.source_rate)),
                            )  # fmt: skip
                            if self.keep_clips:
                                mapping["clip_flac"] = flac_clip(new.clip_audio, new.sample_rate)
                        absent = [k for k, v in fields.items() if v is None]
                        pipe.multi()
                        pipe.hset(key, mapping=mapping)
                        if absent:
                            pipe.hdel(key, *absent)
                        pipe.execute()
                        break
                    except redis.WatchError:
                        continue
            return self._voice(voice_id, list(self._r.hmget(key, list(_FIELDS))))

        return self._call(op)

    def voices(self, *, owner: str | None = None) -> list[ClonedVoice]:
        """All cloned voices (only ``owner``'s when given), oldest first."""
        members: list[bytes] = self._call(
            lambda: self._r.zrange(self._index, 0, -1)  # type: ignore[arg-type,return-value]
        )
        ids = [m.decode() for m in members]
        pipe = self._r.pipeline(transaction=False)
        for voice_id in ids:
            pipe.hmget(self._key(voice_id), list(_FIELDS))
        out = []
        for voice_id, values in zip(ids, self._call(pipe.execute), strict=True):
            voice = self._voice(voice_id, list(values))
            if voice is not None and (owner is None or voice.owner == owner):
                out.append(voice)
        return out

    def clip(self, voice_id: str) -> tuple[FloatArray, int] | None:
        """The stored reference clip ``(audio, sample_rate)``, if kept."""
        data = self._call(lambda: self._r.hget(self._key(voice_id), "clip_flac"))
        assert data is None or isinstance(data, bytes)  # decode_responses is off
        return None if data is None else read_flac(data)

    def delete(self, voice_id: str) -> bool:
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self._key(voice_id))
        pipe.zrem(self._index, voice_id)
        removed, _ = self._call(pipe.execute)
        return int(removed) > 0

    def __len__(self) -> int:
        return int(self._call(lambda: self._r.zcard(self._index)))

    # -- pronunciation dictionaries ----------------------------------------------------------

    def _dkey(self, dictionary_id: str) -> str:
        return f"{self.prefix}:d:{dictionary_id}"

    @property
    def _dindex(self) -> str:
        return f"{self.prefix}:dindex"

    @staticmethod
    def _dictionary(dictionary_id: str, values: list[Any]) -> PronunciationDictionary | None:
        name, owner, created, updated, entries = values
        if name is None or entries is None:
            return None
        return PronunciationDictionary(
            id=dictionary_id, name=name.decode(), entries=entries_from_json(entries.decode()),
            owner=None if owner is None else owner.decode(), created=float(created),
            updated=float(updated),
        )  # fmt: skip

    @staticmethod
    def _dmapping(d: PronunciationDictionary) -> dict[Any, Any]:
        mapping: dict[Any, Any] = {"name": d.name, "created": repr(d.created),
                                   "updated": repr(d.updated), "entries": d.entries_json()}
        if d.owner is not None:
            mapping["owner"] = d.owner
        return mapping

    def add_dictionary(self, dictionary: PronunciationDictionary) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._dkey(dictionary.id), mapping=self._dmapping(dictionary))
        pipe.zadd(self._dindex, {dictionary.id: dictionary.created})
        self._call(pipe.execute)

    def get_dictionary(self, dictionary_id: str) -> PronunciationDictionary | None:
        values = self._call(lambda: self._r.hmget(self._dkey(dictionary_id), list(_DICT_FIELDS)))
        return self._dictionary(dictionary_id, list(values))

    def dictionaries(self, *, owner: str | None = None) -> list[PronunciationDictionary]:
        members: list[bytes] = self._call(
            lambda: self._r.zrange(self._dindex, 0, -1)  # type: ignore[arg-type,return-value]
        )
        ids = [m.decode() for m in members]
        pipe = self._r.pipeline(transaction=False)
        for dictionary_id in ids:
            pipe.hmget(self._dkey(dictionary_id), list(_DICT_FIELDS))
        out = []
        for dictionary_id, values in zip(ids, self._call(pipe.execute), strict=True):
            found = self._dictionary(dictionary_id, list(values))
            if found is not None and (owner is None or found.owner == owner):
                out.append(found)
        return out

    def replace_dictionary(self, dictionary: PronunciationDictionary) -> bool:
        """WATCH the hash: written only where it still exists (a delete in between wins)."""
        key = self._dkey(dictionary.id)

        def op() -> bool:
            with self._r.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        pipe.watch(key)  # type: ignore[no-untyped-call]
                        if not pipe.exists(key):
                            pipe.unwatch()
                            return False
                        pipe.multi()
                        pipe.hset(key, mapping={"name": dictionary.name,
                                                "updated": repr(dictionary.updated),
                                                "entries": dictionary.entries_json()})  # fmt: skip
                        pipe.execute()
                        return True
                    except redis.WatchError:
                        continue

        return self._call(op)

    def delete_dictionary(self, dictionary_id: str) -> bool:
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self._dkey(dictionary_id))
        pipe.zrem(self._dindex, dictionary_id)
        removed, _ = self._call(pipe.execute)
        return int(removed) > 0

    def close(self) -> None:
        self._r.close()


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields with a value, as Redis stores them (numbers as their repr)."""
    return {k: repr(v) if isinstance(v, float) else v for k, v in fields.items() if v is not None}
