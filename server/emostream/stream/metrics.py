"""Prometheus metrics for one app instance (own registry; no process-global state).

With several worker processes (``emostream serve --workers N``) each process writes its
samples to ``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode, which the CLI
sets up) and :meth:`Metrics.render` reports the sum over all live workers, whichever worker
answers the scrape.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0)
_RTF_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.first_audio = Histogram(
            "emostream_first_audio_seconds",
            "Time from the first speakable text to the first audio packet sent",
            ["transport"], buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.rtf = Histogram(
            "emostream_rtf", "Model compute time / audio duration per utterance",
            buckets=_RTF_BUCKETS, registry=r,
        )  # fmt: skip
        self.active_streams = Gauge(
            "emostream_active_streams", "Utterances being synthesised now", registry=r,
            multiprocess_mode="livesum",
        )  # fmt: skip
        self.audio_seconds = Counter(
            "emostream_audio_seconds", "Audio produced, seconds", ["transport"], registry=r
        )
        self.utterances = Counter(
            "emostream_utterances", "Utterances finished", ["transport", "outcome"], registry=r
        )
        self.errors = Counter("emostream_errors", "Errors sent, by code", ["code"], registry=r)
        self.refused_messages = Counter(
            "emostream_refused_stream_messages",
            "Messages for a refused start's utterance (text, flush, end, cancel), dropped "
            "without an answer, by type", ["type"], registry=r,
        )  # fmt: skip
        self.refinements = Counter(
            "emostream_clone_refinements",
            "Clone refinements settled by this process, by outcome (refined, refine_failed, "
            "refine_skipped)", ["outcome"], registry=r,
        )  # fmt: skip
        self.refusals = Counter(
            "emostream_admission_refusals",
            "Utterances refused busy by the runner's admission, by reason", ["reason"],
            registry=r,
        )  # fmt: skip
        self.loop_lag = Gauge(
            "emostream_loop_lag_p95_seconds",
            "The event loop's p95 lag over the last second (engine=process front ends)",
            registry=r,
        )
        self.degraded = Counter(
            "emostream_degraded_streams", "Utterances admitted on a lighter path", registry=r
        )
        # Phrase cache (engine.phrase_cache): lookups by where they were answered (memory,
        # redis, miss; bypass: the client asked for no cache), entries stored and evicted, what
        # was not stored (too_large, incomplete: cancelled or failed), bytes and entries held
        # in process, Redis operations that failed or were skipped.
        self.phrase_cache_lookups = Counter(
            "emostream_phrase_cache_lookups", "Phrase-cache lookups by result", ["result"],
            registry=r,
        )  # fmt: skip
        self.phrase_cache_stores = Counter(
            "emostream_phrase_cache_stores", "Utterances stored in the phrase cache", registry=r
        )
        self.phrase_cache_skipped = Counter(
            "emostream_phrase_cache_skipped", "Utterances not stored, by reason", ["reason"],
            registry=r,
        )  # fmt: skip
        self.phrase_cache_evictions = Counter(
            "emostream_phrase_cache_evictions", "Phrases evicted by the byte bound", registry=r
        )
        self.phrase_cache_bytes = Gauge(
            "emostream_phrase_cache_bytes", "Bytes held by the in-process phrase cache",
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.phrase_cache_entries = Gauge(
            "emostream_phrase_cache_entries", "Phrases held by the in-process phrase cache",
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.phrase_cache_fallbacks = Counter(
            "emostream_phrase_cache_redis_fallbacks",
            "Phrase-cache Redis operations that failed or were skipped", registry=r,
        )  # fmt: skip
        self.gpu_memory = Gauge(
            "emostream_gpu_memory_bytes", "GPU memory held by the server's processes",
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip

    def render(self) -> bytes:
        path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not path:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=path)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
