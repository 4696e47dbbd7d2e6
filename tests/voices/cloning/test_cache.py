from __future__ import annotations

import asyncio

import numpy as np
import numpy.typing as npt
import pytest
from prometheus_client import CollectorRegistry

from emostream.voices.cloning.cache import LRU, EmbeddingCache
from tests.voices.voice_fixtures import RedisServer

V = "ge2e-test"


def _vec(seed: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).random(256).astype(np.float32)
    return v / np.linalg.norm(v)


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


def test_lru_evicts_least_recent() -> None:
    lru = LRU(2)
    lru.put("a", _vec(1))
    lru.put("b", _vec(2))
    assert lru.get("a") is not None  # a is now most recent
    lru.put("c", _vec(3))
    assert lru.get("b") is None and lru.get("a") is not None and len(lru) == 2


async def test_memory_only_cache_counts() -> None:
    registry = CollectorRegistry()
    cache = EmbeddingCache(registry=registry)
    assert await cache.get(V, "ab") is None
    await cache.put(V, "ab", _vec(1))
    got = await cache.get(V, "ab")
    assert got is not None and np.array_equal(got, _vec(1))
    assert cache.stats.as_dict() == {
        "memory_hits": 1, "redis_hits": 0, "misses": 1, "fallbacks": 0, "stores": 1,
    }  # fmt: skip
    assert _sample(registry, "emostream_embedding_cache_lookups_total", result="miss") == 1
    assert _sample(registry, "emostream_embedding_cache_lookups_total", result="memory") == 1
    # another encoder version is another key
    assert await cache.get("other-version", "ab") is None
    with pytest.raises(ValueError):
        await cache.put(V, "ab", np.zeros(3, np.float32))


async def test_get_or_compute_single_flight() -> None:
    cache = EmbeddingCache()
    calls = 0

    async def compute() -> npt.NDArray[np.float32]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return _vec(7)

    results = await asyncio.gather(*(cache.get_or_compute(V, "x", compute) for _ in range(5)))
    assert calls == 1
    assert all(np.array_equal(r, _vec(7)) for r in results)
    assert np.array_equal(await cache.get_or_compute(V, "x", compute), _vec(7))
    assert calls == 1

    async def broken() -> npt.NDArray[np.float32]:
        raise RuntimeError("encoder failed")

    with pytest.raises(RuntimeError):
        await cache.get_or_compute(V, "y", broken)
    assert np.array_equal(await cache.get_or_compute(V, "y", compute), _vec(7))


async def test_unreachable_redis_never_fails_a_request() -> None:
    registry = CollectorRegistry()
    # port 1 on loopback: connection refused at once
    cache = EmbeddingCache(redis_url="redis://127.0.0.1:1/0", registry=registry, retry_after_s=60)
    assert cache.redis_enabled
    assert await cache.get(V, "a") is None
    await cache.put(V, "a", _vec(1))
    got = await cache.get(V, "a")
    assert got is not None and np.array_equal(got, _vec(1))
    # first get failed (fallback, Redis marked down); the put skipped Redis (fallback)
    assert cache.stats.fallbacks == 2
    assert _sample(registry, "emostream_embedding_cache_fallbacks_total") == 2
    assert not cache.redis_up
    assert not await cache.ping()
    await cache.close()


async def test_redis_shares_embeddings_between_servers(redis_server: RedisServer) -> None:
    reg_a, reg_b = CollectorRegistry(), CollectorRegistry()
    a = EmbeddingCache(redis_url=redis_server.url, registry=reg_a, ttl_s=60)
    b = EmbeddingCache(redis_url=redis_server.url, registry=reg_b, ttl_s=60)
    assert await a.ping()
    await a.put(V, "shared", _vec(3))
    got = await b.get(V, "shared")  # b's memory is empty: this came from Redis
    assert got is not None and np.array_equal(got, _vec(3))
    assert b.stats.redis_hits == 1
    assert _sample(reg_b, "emostream_embedding_cache_lookups_total", result="redis") == 1
    got = await b.get(V, "shared")  # now from b's memory
    assert b.stats.memory_hits == 1
    # the TTL is set on the key
    ttl = await a._redis.ttl(a.key(V, "shared"))
    assert 0 < ttl <= 60
    # a malformed entry is ignored as a miss
    await a._redis.set(a.key(V, "bad"), b"xx")
    assert await b.get(V, "bad") is None
    assert a.stats.fallbacks == b.stats.fallbacks == 0
    await a.close()
    await b.close()


async def test_redis_stopped_mid_test_keeps_serving(redis_server: RedisServer) -> None:
    registry = CollectorRegistry()
    cache = EmbeddingCache(redis_url=redis_server.url, registry=registry, retry_after_s=0.0)
    calls = 0

    async def compute() -> npt.NDArray[np.float32]:
        nonlocal calls
        calls += 1
        return _vec(calls)

    first = await cache.get_or_compute(V, "k1", compute)
    assert cache.stats.fallbacks == 0
    redis_server.stop()
    # known key: served from memory, Redis not needed
    assert np.array_equal(await cache.get_or_compute(V, "k1", compute), first)
    # new key: Redis fails, the embedding is computed and served anyway
    second = await cache.get_or_compute(V, "k2", compute)
    assert calls == 2 and second.shape == (256,)
    assert cache.stats.fallbacks >= 2  # the failed get and the failed set
    assert _sample(registry, "emostream_embedding_cache_fallbacks_total") == cache.stats.fallbacks
    # Redis comes back: new entries reach it again
    redis_server.start()
    before = cache.stats.fallbacks
    await cache.put(V, "k3", _vec(9))
    other = EmbeddingCache(redis_url=redis_server.url)
    got = await other.get(V, "k3")
    assert got is not None and np.array_equal(got, _vec(9))
    assert cache.stats.fallbacks == before
    await cache.close()
    await other.close()
