"""Speaker-embedding cache: Redis (shared by a fleet, with TTL) in front of an in-process LRU.

Keys are ``<namespace><encoder version>:<clip sha256>``, so a new encoder never reads an old
encoder's vectors and a clip uploaded to any server is embedded once per fleet.

Redis is optional and never on the failure path: every Redis error (refused, reset, timeout) is
counted as a *fallback* and the request is served from the in-process LRU (or by computing the
embedding). After an error Redis is left alone for ``retry_after_s`` (so a dead Redis costs one
connect timeout per window, not one per request), then tried again.

Metrics go to the ``CollectorRegistry`` passed in (none → plain counters in :class:`CacheStats`):

* ``emostream_embedding_cache_lookups_total{result="memory"|"redis"|"miss"}``
* ``emostream_embedding_cache_fallbacks_total`` — Redis operations that failed or were skipped
  because Redis was down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
V = TypeVar("V")


@dataclass
class CacheStats:
    """Plain counters (also mirrored to Prometheus when a registry is given)."""

    memory_hits: int = 0
    redis_hits: int = 0
    misses: int = 0
    fallbacks: int = 0
    stores: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "memory_hits": self.memory_hits,
            "redis_hits": self.redis_hits,
            "misses": self.misses,
            "fallbacks": self.fallbacks,
            "stores": self.stores,
        }


class LRU(Generic[V]):
    """A small ordered-dict LRU by string key (not thread-safe; used from one event loop).

    Holds at most ``capacity`` items (0: none); :meth:`put` past it drops the least recently
    used (:meth:`get` and :meth:`put` count as use)."""

    def __init__(self, capacity: int = 1024) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def pop(self, key: str) -> V | None:
        """Forget ``key``; its value, or None if it was not held."""
        return self._items.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)


def encode_vector(value: FloatArray) -> bytes:
    return np.ascontiguousarray(value, dtype="<f4").tobytes()


def decode_vector(raw: bytes, dim: int) -> FloatArray | None:
    if len(raw) != 4 * dim:
        return None
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


T = TypeVar("T")


class RedisGuard:
    """Keeps an optional Redis off the failure path, for every cache that uses one.

    :meth:`run` awaits one Redis call and answers None instead of raising; after an error Redis
    is left alone for ``retry_after_s`` (calls then answer None at once), so a dead Redis costs
    one timeout per window, not one per request. Every call that failed or was skipped calls
    ``on_fallback`` (the owner's counters); the first error of a window is logged as ``label``."""

    def __init__(
        self,
        *,
        label: str,
        on_fallback: Callable[[], None],
        retry_after_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.retry_after_s = retry_after_s
        self._on_fallback = on_fallback
        self._clock = clock
        self._down_until = 0.0

    @property
    def up(self) -> bool:
        return self._clock() >= self._down_until

    async def run(self, call: Callable[[], Awaitable[T]]) -> T | None:
        if not self.up:
            self._on_fallback()
            return None
        try:
            return await call()
        except Exception as exc:  # noqa: BLE001 - any Redis trouble means "serve without it"
            self._on_fallback()
            if self.up:
                log.warning(
                    "%s: redis unavailable (%s: %s); in-process only for %.0f s",
                    self.label, type(exc).__name__, exc, self.retry_after_s,
                )  # fmt: skip
            self._down_until = self._clock() + self.retry_after_s
            return None


async def close_redis(client: Any) -> None:
    """Close a ``redis.asyncio`` client (None: nothing), never raising."""
    if client is not None:
        try:
            await client.aclose()
        except Exception:
            log.debug("error closing a redis client", exc_info=True)


class EmbeddingCache:
    """Two-level embedding cache. All methods are coroutines and never raise for Redis trouble."""

    def __init__(
        self,
        *,
        redis_url: str = "",
        dim: int = 256,
        ttl_s: int = 30 * 24 * 3600,
        lru_size: int = 1024,
        namespace: str = "emostream:emb:",
        timeout_s: float = 0.5,
        retry_after_s: float = 5.0,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.dim = dim
        self.ttl_s = ttl_s
        self.namespace = namespace
        self.stats = CacheStats()
        self._lru: LRU[FloatArray] = LRU(lru_size)
        self._guard = RedisGuard(label="embedding cache", on_fallback=self._fallback,
                                 retry_after_s=retry_after_s, clock=clock)  # fmt: skip
        self._inflight: dict[str, asyncio.Future[FloatArray]] = {}
        self._redis: Any = None
        if redis_url:
            self._redis = make_redis_client(redis_url, timeout_s)
        self._lookups: Counter | None = None
        self._fallbacks: Counter | None = None
        if registry is not None:
            self._lookups = Counter(
                "emostream_embedding_cache_lookups",
                "Speaker-embedding cache lookups by where they were answered",
                ["result"],
                registry=registry,
            )
            self._fallbacks = Counter(
                "emostream_embedding_cache_fallbacks",
                "Redis operations that failed or were skipped (served in-process instead)",
                registry=registry,
            )

    @property
    def redis_enabled(self) -> bool:
        return self._redis is not None

    @property
    def redis_up(self) -> bool:
        return self._redis is not None and self._guard.up

    def key(self, version: str, sha256: str) -> str:
        return f"{self.namespace}{version}:{sha256}"

    # -- counters --------------------------------------------------------------------------

    def _count(self, result: str) -> None:
        if result == "memory":
            self.stats.memory_hits += 1
        elif result == "redis":
            self.stats.redis_hits += 1
        else:
            self.stats.misses += 1
        if self._lookups is not None:
            self._lookups.labels(result=result).inc()

    def _fallback(self) -> None:
        self.stats.fallbacks += 1
        if self._fallbacks is not None:
            self._fallbacks.inc()

    # -- redis, guarded ------------------------------------------------------------------------

    async def _redis_get(self, key: str) -> bytes | None:
        if self._redis is None:
            return None
        raw = await self._guard.run(lambda: self._redis.get(key))
        return raw if isinstance(raw, bytes) else None

    async def _redis_set(self, key: str, value: bytes) -> None:
        if self._redis is not None:
            await self._guard.run(lambda: self._redis.set(key, value, ex=self.ttl_s))

    # -- public API ----------------------------------------------------------------------------

    async def get(self, version: str, sha256: str) -> FloatArray | None:
        key = self.key(version, sha256)
        value = self._lru.get(key)
        if value is not None:
            self._count("memory")
            return value
        raw = await self._redis_get(key)
        if raw is not None:
            decoded = decode_vector(raw, self.dim)
            if decoded is not None:
                self._lru.put(key, decoded)
                self._count("redis")
                return decoded
            log.warning("ignoring a malformed cache entry %s (%d bytes)", key, len(raw))
        self._count("miss")
        return None

    async def put(self, version: str, sha256: str, value: FloatArray) -> None:
        if value.shape != (self.dim,):
            raise ValueError(f"embedding shape {value.shape}, expected ({self.dim},)")
        key = self.key(version, sha256)
        vec = np.asarray(value, dtype=np.float32)
        self._lru.put(key, vec)
        self.stats.stores += 1
        await self._redis_set(key, encode_vector(vec))

    async def get_or_compute(
        self, version: str, sha256: str, compute: Callable[[], Awaitable[FloatArray]]
    ) -> FloatArray:
        """The cached embedding, or ``await compute()`` stored; concurrent callers share one."""
        found = await self.get(version, sha256)
        if found is not None:
            return found
        key = self.key(version, sha256)
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[FloatArray] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await compute()
            await self.put(version, sha256, value)
            future.set_result(value)
            return value
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise, nobody else must
            raise
        finally:
            del self._inflight[key]

    async def ping(self) -> bool:
        """Whether Redis answers now (for health checks); False when not configured."""
        if self._redis is None:
            return False
        try:
            return bool(await self._redis.ping())
        except Exception:  # noqa: BLE001
            return False

    async def close(self) -> None:
        await close_redis(self._redis)


def make_redis_client(url: str, timeout_s: float) -> Any:
    """A ``redis.asyncio`` client with short timeouts and no retries (we fall back instead);
    None when the redis package is missing. Shared with the phrase cache."""
    try:
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry  # the asyncio one: redis 8.2 warns on the sync one
        from redis.backoff import NoBackoff
    except ImportError:
        log.warning(
            "redis_url set but the redis package is missing (pip install 'emostream[redis]')"
        )
        return None
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
        retry_on_error=[],
        health_check_interval=0,
    )
