"""The speech service one server process runs: voices, runner, limits and metrics,
shared by the WebSocket and HTTP layers."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from emostream.codec.packetizer import OutputFormat, opus_lookahead
from emostream.config import Settings
from emostream.engine.admission import Admits, Verdict
from emostream.engine.heap_trim import HeapTrimmer, libc_malloc_trim
from emostream.engine.runner import Joinable, Runner, StreamAffine, ThreadRunner
from emostream.stream.headroom import HeadroomPolicy, LoopLag, tick
from emostream.stream.headroom import decide as decide_headroom
from emostream.stream.metrics import Metrics
from emostream.stream.phrases.cache import PhraseCache
from emostream.stream.phrases.key import phrase_params, voice_identity
from emostream.stream.phrases.utterance import cached_utterance
from emostream.stream.streamer import (
    Event,
    Packet,
    UtteranceRequest,
    UtteranceStats,
    stream_utterance,
)
from emostream.voices.base import Voice, VoiceInfo
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.cloning.cache import LRU
from emostream.voices.cloning.registry import ClonedVoice, StoreUnavailable, VoiceStore
from emostream.voices.per_language import TimbreIndex

# How long a refused client is told to wait when nothing better is known (the stream limit).
BUSY_RETRY_S = 1.0

log = logging.getLogger(__name__)

# How long a closing service waits for the model calls its runner still runs (each call is
# one bounded piece of text or one decode window: well under a second on CPU).
CLOSE_WAIT_S = 10.0


# How long a built clone is used before the registry is asked whether it changed (a refinement
# or a new clip settled by another process; this process's own refinements replace it at once).
CLONE_REFRESH_S = 10.0


@dataclass
class _Built:
    """A clone voice as built, the registry state it was built from, and when it was checked."""

    voice: Voice
    stamp: tuple[str, float | None]
    checked_at: float


def _stamp(clone: ClonedVoice) -> tuple[str, float | None]:
    refined = clone.refine.refined
    return clone.clip_sha256, None if refined is None else refined.at


def _segment_voice(request: UtteranceRequest, segment: str) -> str:
    """The identity of the voice that speaks ``segment`` (a phrase-cache key's link)."""
    return voice_identity(request.voice_for(segment)[0])


class Busy(Exception):
    """The process is at ``max_streams`` utterances, or the runner's admission refused the
    utterance; ``retry_after_s``: when a new start is likely to be admitted (the ``busy``
    error's ``retry_after_ms``, HTTP's ``Retry-After``)."""

    def __init__(self, message: str, *, retry_after_s: float = BUSY_RETRY_S) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Slot:
    """One admitted utterance's place under ``max_streams`` (:meth:`SpeechService.admit`).

    Released exactly once, however often :meth:`release` is called. ``degraded``: the
    lighter path the runner's admission put it on (``"lite"``), "" when none; the
    ``started`` event says so."""

    def __init__(self, service: SpeechService, *, degraded: str = "") -> None:
        self._service: SpeechService | None = service
        self.degraded = degraded

    @property
    def released(self) -> bool:
        return self._service is None

    def release(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            service.active -= 1
            service.metrics.active_streams.set(service.active)


class SpeechService:
    def __init__(
        self,
        settings: Settings,
        catalog: VoiceCatalog,
        *,
        runner: Runner | None = None,
        metrics: Metrics | None = None,
        registry: VoiceStore | None = None,
        embed_reference: Callable[[bytes], Awaitable[npt.NDArray[np.float32]]] | None = None,
        voice_cache_size: int | None = None,
        phrase_cache: PhraseCache | None = None,
        model_versions: Mapping[str, str] | None = None,
        clone_refresh_s: float = CLONE_REFRESH_S,
    ) -> None:
        """``voice_cache_size``: how many cloned voices, and how many inline-reference voices,
        stay built (an LRU of each; default ``settings.voice_cache_size``, 256). An evicted
        clone is built again from the ``registry`` on its next use, an evicted reference voice
        from ``embed_reference`` (which caches embeddings by clip) when its clip comes again.

        ``phrase_cache``: where spoken utterances are kept (default: one built from the
        ``phrase_cache_*`` settings and ``redis_url``; none when ``phrase_cache_bytes`` is 0);
        ``model_versions``: ``{VoiceInfo.model: version}`` of the loaded families
        (:func:`emostream.voices.versions.model_versions`), part of the cache's keys (a family
        missing from it counts as version "")."""
        self.settings = settings
        self.output_format(OutputFormat())  # FormatError now, not per stream
        self.catalog = catalog
        self.registry = registry
        size = settings.voice_cache_size if voice_cache_size is None else voice_cache_size
        self._clones: LRU[_Built] = LRU(size)  # registry clones, by id
        self._embed_reference = embed_reference
        self._references: LRU[Voice] = LRU(size)  # inline clips, by "ref_" + clip hash
        self.runner: Runner = runner or ThreadRunner(workers=settings.decode_workers)
        self.metrics = metrics or Metrics()
        if phrase_cache is None and settings.phrase_cache_bytes > 0:
            phrase_cache = PhraseCache(
                max_bytes=settings.phrase_cache_bytes,
                redis_url=settings.redis_url if settings.phrase_cache_redis else "",
                ttl_s=settings.phrase_cache_ttl_s,
                metrics=self.metrics,
            )
        self.phrase_cache = phrase_cache
        self.model_versions = dict(model_versions or {})
        self.clone_refresh_s = clone_refresh_s
        self.active = 0
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid():x}"
        self._trimmer = HeapTrimmer(settings.memory_trim_interval_s)
        self._trim = libc_malloc_trim() if settings.memory_trim_interval_s > 0 else None
        self._trims: set[asyncio.Task[None]] = set()
        # The front end's own headroom (engine=process; the CPU path's admission reads its
        # loop lag itself): watched once watch_loop() runs.
        self.loop_lag = LoopLag()
        self.headroom = HeadroomPolicy(bound_s=settings.frontend_loop_lag_bound_ms / 1000.0)
        self._loop_watch: asyncio.Task[None] | None = None
        self._timbres: TimbreIndex | None = None

    @property
    def can_clone(self) -> bool:
        """Whether a loaded model speaks arbitrary speaker embeddings."""
        return self.catalog.family is not None

    def voice(self, voice_id: str) -> Voice | None:
        """A stock voice, or a cloned one (registry embedding, and its refined timbre when it
        has one) when a model can speak it. A built clone is checked against the registry
        again once it is ``clone_refresh_s`` old (another process may have refined it or
        given it a new clip); while the registry cannot be reached it is used as built."""
        found = self.catalog.get(voice_id) or self._references.get(voice_id)
        family = self.catalog.family
        if found is not None or family is None or self.registry is None:
            return found
        now = time.monotonic()
        cached = self._clones.get(voice_id)
        if cached is not None and now - cached.checked_at < self.clone_refresh_s:
            return cached.voice
        try:
            clone = self.registry.get(voice_id)
        except StoreUnavailable:
            if cached is None:
                raise
            return cached.voice
        if clone is None:
            self._clones.pop(voice_id)
            return None
        stamp = _stamp(clone)
        if cached is not None and cached.stamp == stamp:
            cached.checked_at = now
            return cached.voice
        voice = family.clone(clone.id, clone.embedding, description=f"cloned voice {clone.name!r}",
                             timbre=clone.timbre)  # fmt: skip
        self._clones.put(voice_id, _Built(voice, stamp, now))
        return voice

    async def reference_voice(self, clip: bytes) -> Voice:
        """A voice for an inline reference clip (WebSocket ``start.reference_audio``): the clip's
        speaker embedding (cached by the clip's SHA-256) on the model family. Raises
        ``ClipError`` for a bad clip and ``RuntimeError`` if no loaded model can clone."""
        family = self.catalog.family
        if family is None or self._embed_reference is None:
            raise RuntimeError("no loaded model speaks arbitrary speakers")
        voice_id = "ref_" + hashlib.sha256(clip).hexdigest()[:16]
        cached = self._references.get(voice_id)
        if cached is not None:
            return cached
        embedding = await self._embed_reference(clip)
        voice = family.clone(voice_id, embedding, description="inline reference clip")
        self._references.put(voice_id, voice)
        return voice

    def timbre_match(self, voice: Voice, language: str) -> Voice | None:
        """The stock voice of ``language`` nearest in timbre to ``voice`` (a voice per
        language: a language the request leaves out), or None (``voice`` has no speaker
        embedding, or no stock voice speaks ``language``)."""
        if self._timbres is None:
            stock = (self.catalog.get(info.id) for info in self.catalog.infos())
            self._timbres = TimbreIndex(v for v in stock if v is not None)
        return self._timbres.nearest(voice, language)

    def voice_info(self, voice_id: str) -> VoiceInfo | None:
        voice = self.voice(voice_id)
        return voice.info if voice is not None else None

    def forget(self, event: str, voice_id: str) -> None:
        """Registry change hook: drop a deleted (or refined) clone's built voice."""
        if event in ("deleted", "refined"):
            self._clones.pop(voice_id)

    def refined(self, voice_id: str, state: str) -> None:
        """A refinement of ``voice_id`` settled (``state``): its next utterance builds the voice
        again from the registry (a refined timbre, a new clip), and the outcome is counted."""
        self.forget("refined", voice_id)
        self.metrics.refinements.labels(str(state)).inc()

    def watch_loop(self) -> None:
        """Start measuring the event loop's lag (:mod:`emostream.stream.headroom`); from then
        on :meth:`admit` refuses while it is past ``frontend_loop_lag_bound_ms``."""
        if self._loop_watch is None:
            gauge = self.metrics.loop_lag
            lag = self.loop_lag

            def report(_: float) -> None:
                gauge.set(lag.p95(time.monotonic()))

            self._loop_watch = asyncio.get_running_loop().create_task(tick(lag, report=report))

    def new_stream_id(self) -> str:
        return f"s-{self._prefix}-{next(self._ids)}"

    def admit(self) -> Slot:
        """Take a stream slot now, or raise :class:`Busy` at ``max_streams`` or when the
        runner's admission refuses (:class:`~emostream.engine.admission.Admits`: the engine
        process would be pushed past its first-audio bound, or the CPU path past its measured
        capacity, :mod:`emostream.engine.cpu_admission`).

        Transports admit before they answer (``started``, an HTTP status), so a refused
        utterance is refused before anything else was sent; the check and the count happen
        with no ``await`` between them."""
        if self.active >= self.settings.max_streams:
            self.metrics.errors.labels("busy").inc()
            raise Busy(f"server at its stream limit ({self.settings.max_streams} utterances)")
        if self._loop_watch is not None and self.settings.engine_admission:
            verdict = decide_headroom(self.loop_lag, self.headroom, time.monotonic())
            if not verdict.admitted:  # this front end is behind: refused before any work
                self.metrics.errors.labels("busy").inc()
                self.metrics.refusals.labels(verdict.reason).inc()
                late_ms = verdict.first_audio_after_s * 1000  # (decide puts the p95 there)
                raise Busy(f"front end at capacity (event loop {late_ms:.0f} ms late)",
                           retry_after_s=verdict.retry_after_s)  # fmt: skip
        degraded = ""
        if isinstance(self.runner, Admits):  # the engine process: is the device full?
            decision = self.runner.admit()
            if decision.verdict is Verdict.LITE:  # full, and the runner has a lighter path
                degraded = "lite"
                self.metrics.degraded.inc()
            elif not decision.admitted:
                self.metrics.errors.labels("busy").inc()
                self.metrics.refusals.labels(decision.reason or "refused").inc()
                raise Busy(f"engine at capacity ({decision.reason})",
                           retry_after_s=decision.retry_after_s or BUSY_RETRY_S)  # fmt: skip
        self.active += 1
        self.metrics.active_streams.set(self.active)
        return Slot(self, degraded=degraded)

    @asynccontextmanager
    async def utterance(
        self,
        request: UtteranceRequest,
        segments: AsyncIterator[str],
        *,
        transport: str,
        slot: Slot | None = None,
        cache: bool = False,
        cache_scope: str = "",
        replay_lead_s: float | None = None,
    ) -> AsyncIterator[tuple[AsyncIterator[Packet | Event], UtteranceStats]]:
        """Give the utterance's output iterator and its stats, in the stream ``slot`` the
        caller was admitted to (without one, admit now: :class:`Busy` at the limit).

        ``cache``: serve the utterance from the phrase cache when it holds it, else store it
        once spoken (False: neither; a lookup counted as ``bypass``); ``cache_scope``: who
        shares its entries (a principal; ignored with ``phrase_cache_shared``);
        ``replay_lead_s``: how far ahead of real time a replay keeps the listener (None: as
        fast as the consumer takes it). See :mod:`emostream.stream.phrases.utterance`.

        On exit (normal, error or cancellation) the slot is released, queued model work
        for the stream is dropped and metrics are recorded.
        """
        if slot is None:
            slot = self.admit()
        stats = UtteranceStats()
        outcome = "cancelled"
        out = self._output(
            request, segments, stats, cache, cache_scope, replay_lead_s, slot.degraded
        )
        try:
            yield out, stats
            outcome = "ok"
        except Exception:
            outcome = "error"
            raise
        finally:
            slot.release()
            self.runner.cancel(request.stream_id)
            aclose = getattr(out, "aclose", None)
            if aclose is not None:
                await aclose()
            self.metrics.utterances.labels(transport, outcome).inc()
            rate = request.fmt.sample_rate
            if stats.audio_samples:
                self.metrics.audio_seconds.labels(transport).inc(stats.audio_samples / rate)
                if not stats.cached:
                    self.metrics.rtf.observe(stats.compute_s / (stats.audio_samples / rate))
            if stats.first_audio_at is not None:
                self.metrics.first_audio.labels(transport).observe(
                    stats.first_audio_at - stats.started_at
                )
            self._trim_heap_later()

    def _trim_heap_later(self) -> None:
        """An utterance ended: trim the heap now or when :class:`HeapTrimmer` allows."""
        if self._trim is None:
            return
        delay = self._trimmer.request(time.monotonic())
        if delay is None:
            return
        task = asyncio.get_running_loop().create_task(self._trim_heap(delay, self._trim))
        self._trims.add(task)
        task.add_done_callback(self._trims.discard)

    async def _trim_heap(self, delay: float, trim: Callable[[], bool]) -> None:
        try:
            await asyncio.sleep(delay)
            await asyncio.to_thread(trim)
        finally:
            self._trimmer.trimmed(time.monotonic())

    @functools.cached_property
    def opus_delay_ms(self) -> float:
        """The look-ahead of this server's Opus encoder in ms (how far a fresh decoder's
        output lags the stream timeline): 6.5 for "audio", 2.5 for "lowdelay"."""
        fmt = self.output_format(OutputFormat())
        return 1000.0 * opus_lookahead(fmt) / fmt.sample_rate

    def output_format(self, fmt: OutputFormat) -> OutputFormat:
        """``fmt`` as this server encodes it: the client picks codec, rate and bitrate (the
        settings' bitrate where it names none), the settings pick the Opus encoder's
        complexity and application (raises FormatError)."""
        return replace(
            fmt,
            bitrate=self.settings.opus_bitrate if fmt.bitrate is None else fmt.bitrate,
            complexity=self.settings.opus_complexity,
            application=self.settings.opus_application,  # type: ignore[arg-type]
        )

    def _output(
        self,
        request: UtteranceRequest,
        segments: AsyncIterator[str],
        stats: UtteranceStats,
        cache: bool,
        scope: str,
        lead_s: float | None,
        degraded: str = "",
    ) -> AsyncIterator[Packet | Event]:
        fmt = self.output_format(request.fmt)
        if fmt != request.fmt:
            request = replace(request, fmt=fmt)

        def live(texts: AsyncIterator[str]) -> AsyncIterator[Packet | Event]:
            out = stream_utterance(request, texts, self.runner, stats=stats,
                                   max_audio_s=self.settings.max_utterance_audio_s)  # fmt: skip
            if isinstance(self.runner, StreamAffine):  # one backend for the stream's life
                return self.runner.bind(request.stream_id, out, degraded=degraded)
            return out

        phrases = self.phrase_cache
        if phrases is None or not phrases.enabled:
            return live(segments)
        if not cache:
            phrases.bypassed()
            return live(segments)
        settings = self.settings
        params = phrase_params(
            request.voice,
            request.controls,
            request.fmt,
            model_version=self.model_versions.get(request.voice.info.model, ""),
            timestamps=request.timestamps,
            word_timestamps=request.word_timestamps,
            scope="" if settings.phrase_cache_shared else scope,
        )
        voice_of = None
        if request.voices:  # a voice per language: each segment's voice is in the key
            voice_of = functools.partial(_segment_voice, request)
        return cached_utterance(
            segments, live=live, cache=phrases, params=params, stats=stats,
            sample_rate=request.fmt.sample_rate, hold_s=settings.phrase_cache_hold_ms / 1000.0,
            lead_s=lead_s, clock=time.monotonic, voice_of=voice_of,
        )  # fmt: skip

    def close(self) -> None:
        self.runner.close()

    async def aclose(self) -> None:
        """:meth:`close`, then wait (off the event loop, up to :data:`CLOSE_WAIT_S`) for the
        model calls still running (:class:`~emostream.engine.runner.Joinable`), then the
        phrase cache (its Redis writes and client)."""
        self.close()
        for task in list(self._trims):
            task.cancel()
        if self._loop_watch is not None:
            self._loop_watch.cancel()
        runner = self.runner
        if isinstance(runner, Joinable) and not await asyncio.to_thread(runner.join, CLOSE_WAIT_S):
            log.warning("a model call was still running %.0f s after close", CLOSE_WAIT_S)
        if self.phrase_cache is not None:
            await self.phrase_cache.close()
