"""The phrase cache: whole spoken utterances by key, in process (bounded in bytes) and
optionally in Redis (shared by a fleet, with a TTL).

In process, phrases sit in an LRU bounded by the bytes they hold (:attr:`Phrase.nbytes`);
storing past ``max_bytes`` evicts the least recently used, and a phrase over
``max_entry_bytes`` is never stored. A prefix index (reference counts of every entry's
:attr:`~emostream.stream.phrases.key.KeyChain.prefixes`) answers "could a cached phrase start
with these segments?" without I/O.

Redis, when a client is given (``redis_url``), follows the embedding cache's rules
(:mod:`emostream.voices.cloning.cache`): never on the failure path, every error counted as a fallback
and Redis left alone for ``retry_after_s``. Entries go in as ``<namespace><key>`` with their
prefix markers ``<namespace>p:<prefix>``, written in the background after the utterance.

Not thread-safe: used from one event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from emostream.stream.metrics import Metrics
from emostream.stream.phrases.record import Phrase, decode_phrase
from emostream.voices.cloning.cache import RedisGuard, close_redis, make_redis_client

log = logging.getLogger(__name__)


@dataclass
class PhraseCacheStats:
    """Plain counters (mirrored to Prometheus when :class:`Metrics` are given)."""

    memory_hits: int = 0
    redis_hits: int = 0
    misses: int = 0
    bypassed: int = 0
    stores: int = 0
    evictions: int = 0
    too_large: int = 0
    incomplete: int = 0
    fallbacks: int = 0


class PhraseCache:
    def __init__(
        self,
        *,
        max_bytes: int = 64 << 20,
        max_entry_bytes: int | None = None,
        redis_url: str = "",
        ttl_s: int = 24 * 3600,
        namespace: str = "emostream:phrase:v1:",
        timeout_s: float = 0.5,
        retry_after_s: float = 5.0,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        redis_client: Any = None,
    ) -> None:
        """``max_bytes``: the in-process bound (0: nothing kept in process);
        ``max_entry_bytes``: the largest phrase stored (default ``max_bytes // 16``, at least
        1 MiB when Redis is on); ``redis_url`` (or a ready ``redis_client``): also keep phrases
        in Redis for ``ttl_s`` seconds."""
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.max_bytes = max_bytes
        self._redis: Any = redis_client
        if self._redis is None and redis_url:
            self._redis = make_redis_client(redis_url, timeout_s)
        if max_entry_bytes is None:
            max_entry_bytes = max_bytes // 16
            if self._redis is not None:
                max_entry_bytes = max(max_entry_bytes, 1 << 20)
        self.max_entry_bytes = max_entry_bytes
        self.ttl_s = ttl_s
        self.namespace = namespace
        self.stats = PhraseCacheStats()
        self.metrics = metrics
        self._guard = RedisGuard(label="phrase cache", on_fallback=self._fallback,
                                 retry_after_s=retry_after_s, clock=clock)  # fmt: skip
        self._entries: OrderedDict[str, tuple[Phrase, tuple[str, ...]]] = OrderedDict()
        self._prefixes: dict[str, int] = {}
        self._bytes = 0
        self._writes: set[asyncio.Task[None]] = set()

    @property
    def enabled(self) -> bool:
        """Whether anything can be stored (in process or in Redis)."""
        return self.max_entry_bytes > 0 and (self.max_bytes > 0 or self._redis is not None)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    # -- lookups -------------------------------------------------------------------------------

    async def has_prefix(self, prefix: str) -> bool:
        """Whether a cached phrase (in process, else in Redis) starts with ``prefix``."""
        if prefix in self._prefixes:
            return True
        if self._redis is None:
            return False
        return bool(await self._guarded("exists", self.namespace + "p:" + prefix))

    async def get(self, key: str) -> Phrase | None:
        """The phrase stored under ``key`` (a Redis hit is kept in process too)."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self._count("memory")
            return found[0]
        if self._redis is not None:
            raw = await self._guarded("get", self.namespace + key)
            phrase = decode_phrase(raw) if isinstance(raw, bytes) else None
            if phrase is not None:
                self._keep(key, phrase, ())
                self._count("redis")
                return phrase
            if raw is not None:
                log.warning("ignoring a malformed phrase-cache entry %s", key)
        self._count("miss")
        return None

    def bypassed(self) -> None:
        """Count a lookup the client asked to skip (``cache: false``)."""
        self._count("bypass")

    # -- stores --------------------------------------------------------------------------------

    def put(self, key: str, phrase: Phrase, prefixes: Sequence[str]) -> bool:
        """Store a complete utterance under ``key`` (``prefixes``: its chain's prefix keys);
        False when it is over ``max_entry_bytes``. Redis is written in the background."""
        if phrase.nbytes > self.max_entry_bytes:
            self.not_stored("too_large")
            return False
        self._keep(key, phrase, tuple(prefixes))
        self.stats.stores += 1
        if self.metrics is not None:
            self.metrics.phrase_cache_stores.inc()
        if self._redis is not None:
            task = asyncio.get_running_loop().create_task(self._write(key, phrase, prefixes))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        return True

    def not_stored(self, reason: str) -> None:
        """Count an utterance that was not stored (``too_large``, ``incomplete``)."""
        if reason == "too_large":
            self.stats.too_large += 1
        else:
            self.stats.incomplete += 1
        if self.metrics is not None:
            self.metrics.phrase_cache_skipped.labels(reason).inc()

    def _keep(self, key: str, phrase: Phrase, prefixes: tuple[str, ...]) -> None:
        if phrase.nbytes > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._drop(old)
            prefixes = prefixes or old[1]
        self._entries[key] = (phrase, prefixes)
        self._bytes += phrase.nbytes
        for p in prefixes:
            self._prefixes[p] = self._prefixes.get(p, 0) + 1
        while self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._drop(evicted)
            self.stats.evictions += 1
            if self.metrics is not None:
                self.metrics.phrase_cache_evictions.inc()
        self._gauges()

    def _drop(self, entry: tuple[Phrase, tuple[str, ...]]) -> None:
        phrase, prefixes = entry
        self._bytes -= phrase.nbytes
        for p in prefixes:
            left = self._prefixes[p] - 1
            if left:
                self._prefixes[p] = left
            else:
                del self._prefixes[p]

    def _gauges(self) -> None:
        if self.metrics is not None:
            self.metrics.phrase_cache_bytes.set(self._bytes)
            self.metrics.phrase_cache_entries.set(len(self._entries))

    def _count(self, result: str) -> None:
        if result == "memory":
            self.stats.memory_hits += 1
        elif result == "redis":
            self.stats.redis_hits += 1
        elif result == "bypass":
            self.stats.bypassed += 1
        else:
            self.stats.misses += 1
        if self.metrics is not None:
            self.metrics.phrase_cache_lookups.labels(result).inc()

    # -- redis, guarded ------------------------------------------------------------------------

    async def _write(self, key: str, phrase: Phrase, prefixes: Sequence[str]) -> None:
        async def write() -> None:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.set(self.namespace + key, phrase.encode(), ex=self.ttl_s)
                for p in prefixes:
                    pipe.set(self.namespace + "p:" + p, b"1", ex=self.ttl_s)
                await pipe.execute()

        await self._guard.run(write)

    async def _guarded(self, op: str, key: str) -> Any:
        return await self._guard.run(lambda: getattr(self._redis, op)(key))

    def _fallback(self) -> None:
        self.stats.fallbacks += 1
        if self.metrics is not None:
            self.metrics.phrase_cache_fallbacks.inc()

    async def close(self) -> None:
        """Finish background writes (briefly) and close the Redis client."""
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=1.0)
        for task in list(self._writes):
            task.cancel()
        await close_redis(self._redis)
