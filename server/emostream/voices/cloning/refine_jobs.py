"""Refinement jobs: a clone refined in the background, one at a time per server process.

:class:`Refinements` takes a request (:meth:`~Refinements.submit`: at registration, or
``POST /v1/voices/{id}/refine``), marks the voice ``refining`` in the registry (refused with
:class:`~emostream.voices.cloning.refine_state.RefineBusy` while another attempt is live) and
queues it; one consumer task runs the queue in order. A job:

1. takes its clip: the one just uploaded, or the stored one (checked again by the intake);
2. checks it can be refined against (:func:`~emostream.voices.cloning.refine_checks.refine_verdict`:
   one speaker, speech) -- else the voice is ``refine_skipped`` with the reason as a warning;
3. runs the refinement on the backend (:mod:`emostream.voices.cloning.refine_worker`: a niced
   worker process by default) -- ``refine_failed`` on a timeout or crash, ``refine_skipped``
   when the refiner finds too little clear speech;
4. writes the outcome with one :meth:`~emostream.voices.cloning.registry.VoiceStore.update_refine`
   (timbre, figures, state and, for a new clip, the clip and its embedding, together; a voice
   deleted meanwhile stays deleted), then calls ``on_settled(voice_id, state)`` (the service
   drops its built voice, so the next utterance speaks the refined one).

At most ``queue_size`` jobs are held (the one running included): past it a request is refused (:class:`QueueFull`) or, at
registration, the voice is ``refine_skipped`` (``refine_busy``). Closing the server settles
the jobs it still holds as ``refine_failed`` (``interrupted``) rather than leave them
``refining``; a server that died leaves them to ``stale_after_s``
(:func:`~emostream.voices.cloning.refine_state.view`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.voices.cloning.clip import Clip, ClipError
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine import RefineError
from emostream.voices.cloning.refine_checks import EmbedAudio, RefineChecks, refine_verdict
from emostream.voices.cloning.refine_state import (
    INTERRUPTED,
    Notice,
    QueueFull,
    Refined,
    RefineRecord,
    RefineState,
    RefineUnavailable,
    StaleJob,
    begin,
    fail,
    skip,
    succeed,
    view,
)
from emostream.voices.cloning.refine_worker import (
    Family,
    ProcessBackend,
    RefineBackend,
    RefineFailure,
    RefineTask,
    ThreadBackend,
    refiner_for,
)
from emostream.voices.cloning.registry import (
    ClonedVoice,
    Reenrolment,
    RefineUpdate,
    StoreUnavailable,
    VoiceStore,
    flac_clip,
)

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
T = TypeVar("T")
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]
SETTLE_RETRIES_S = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # a registry down when a job ends


@dataclass(frozen=True)
class _Job:
    voice_id: str
    token: str
    clip: Clip | None  # None: the stored clip
    embedding: FloatArray | None  # the new clip's (None: the stored embedding)
    encoder: str = ""
    checked: bool = False  # the clip passed refine_verdict already


class Refinements:
    """See the module docs. ``backend``: where refinements run (None: this server cannot
    refine, ``unavailable`` says why); ``embed_audio``: the project's GE2E for the clip checks;
    ``intake``: the clip intake (a stored clip is read through it again)."""

    def __init__(
        self,
        registry: VoiceStore,
        backend: RefineBackend | None,
        *,
        embed_audio: EmbedAudio,
        intake: Callable[[bytes], Clip],
        unavailable: str | None = None,
        checks: RefineChecks | None = None,
        queue_size: int = 4,
        stale_after_s: float = 720.0,
        offload: Offload | None = None,
        clock: Callable[[], float] = time.time,
        on_settled: Callable[[str, RefineState], None] | None = None,
    ) -> None:
        if backend is None and unavailable is None:
            unavailable = "refinement is not set up on this server"
        self.registry = registry
        self.backend = backend
        self.embed_audio = embed_audio
        self.intake = intake
        self.unavailable = unavailable
        self.checks = checks or RefineChecks()
        self.queue_size = queue_size
        self.stale_after_s = stale_after_s
        self._offload: Offload = offload or asyncio.to_thread
        self._clock = clock
        self.on_settled = on_settled
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._pending = 0  # accepted and not settled (queued, running, being queued)
        self._held: dict[str, _Job] = {}  # token -> job not settled yet
        self._consumer: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def available(self) -> bool:
        return self.unavailable is None and self.backend is not None

    @property
    def pending(self) -> int:
        return self._pending

    def view(self, voice: ClonedVoice) -> dict[str, Any]:
        """The voice's ``state``, ``refinement`` and notices as the API shows them."""
        return view(voice.refine, now=self._clock(), stale_after_s=self.stale_after_s,
                    unavailable=self.unavailable)  # fmt: skip

    async def _run(self, fn: Callable[[], T]) -> T:
        return cast(T, await self._offload(fn))

    async def verdict(self, clip: Clip) -> Notice | None:
        """Why ``clip`` cannot be refined against (None: it can). Off the event loop."""
        found = await self._run(lambda: refine_verdict(clip, self.embed_audio, self.checks))
        return None if found is None else Notice(found.code, found.message)

    async def submit(
        self,
        voice_id: str,
        *,
        clip: Clip | None = None,
        embedding: FloatArray | None = None,
        encoder: str = "",
        replace_clip: bool = False,
        checked: bool = False,
        when_full: Literal["raise", "skip"] = "raise",
    ) -> ClonedVoice | None:
        """Queue a refinement of ``voice_id`` against ``clip`` (None: its stored clip). With
        ``replace_clip`` the clip and its ``embedding`` (by ``encoder``) become the voice's
        when the refinement succeeds. The voice as now stored (``refining``), or None when
        there is no such voice.

        Raises :class:`RefineUnavailable`, :class:`~emostream.voices.cloning.refine_state.RefineBusy`,
        :class:`QueueFull` (``when_full="raise"``; ``"skip"``: the voice is settled
        ``refine_skipped`` instead) and
        :class:`~emostream.voices.cloning.registry.StoreUnavailable`."""
        if not self.available or self._closed:
            raise RefineUnavailable(self.unavailable or "the server is shutting down")
        token = secrets.token_hex(8)
        full = self._pending >= self.queue_size
        if full and when_full == "raise":
            raise QueueFull(f"{self._pending} refinements are waiting on this server")
        now = self._clock()
        stale = self.stale_after_s
        if full:  # registration while the queue is full: settled at once, as skipped
            busy = Notice("refine_busy", "the server had too many refinements waiting; "
                          f"POST /v1/voices/{voice_id}/refine to refine later")  # fmt: skip

            def skipped(v: ClonedVoice) -> RefineUpdate:
                begun = begin(v.refine, job=token, now=now, stale_after_s=stale)
                return RefineUpdate(skip(begun, job=token, notice=busy, now=now))

            return await self._run(lambda: self.registry.update_refine(voice_id, skipped))

        def begun(v: ClonedVoice) -> RefineUpdate:
            return RefineUpdate(begin(v.refine, job=token, now=now, stale_after_s=stale))

        self._pending += 1
        try:
            voice = await self._run(lambda: self.registry.update_refine(voice_id, begun))
        except BaseException:
            self._pending -= 1
            raise
        if voice is None:
            self._pending -= 1
            return None
        emb = None if embedding is None else np.asarray(embedding, np.float32)
        job = _Job(voice_id, token, clip, emb if replace_clip else None, encoder, checked)
        self._held[token] = job
        self._queue.put_nowait(job)
        if self._consumer is None:
            self._consumer = asyncio.get_running_loop().create_task(self._consume())
        return voice

    async def _consume(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                await self._process(job)
            except asyncio.CancelledError:
                raise  # closing: the job stays held, aclose settles it
            except Exception:
                log.exception("refinement of %s failed", job.voice_id)
            self._pending -= 1
            self._held.pop(job.token, None)

    async def _process(self, job: _Job) -> None:
        t0 = time.perf_counter()
        voice = await self._run(lambda: self.registry.get(job.voice_id))
        if voice is None or voice.refine.job != job.token:
            return  # deleted, or another attempt took over
        clip = job.clip
        if clip is None:
            clip, notice = await self._stored_clip(job.voice_id)
            if notice is not None:
                await self._settle(job, "skip", notice)
                return
            assert clip is not None
        if not job.checked:
            verdict = await self.verdict(clip)
            if verdict is not None:
                await self._settle(job, "skip", verdict)
                return
        embedding = voice.embedding if job.embedding is None else job.embedding
        source_rate = clip.source_sample_rate if job.clip is not None else (
            voice.source_rate or clip.sample_rate)  # fmt: skip
        task = RefineTask(embedding, clip.audio, clip.sample_rate, source_rate)
        assert self.backend is not None
        try:
            refinement = await self.backend.refine(task)
        except RefineError as exc:
            await self._settle(job, "skip", Notice(exc.code, exc.message))
            return
        except RefineFailure as exc:
            await self._settle(job, "fail", Notice(exc.code, exc.message))
            return
        except Exception as exc:
            log.exception("refinement of %s failed", job.voice_id)
            await self._settle(job, "fail", Notice("internal", f"refinement failed ({exc})"))
            return
        refined = Refined(refinement.timbre, refinement.summary(), self._clock(), clip.sha256)
        enrolment = None
        if job.embedding is not None:
            enrolment = Reenrolment(
                embedding=job.embedding, encoder=job.encoder, clip_sha256=clip.sha256,
                duration_s=clip.duration_s, speech_s=clip.speech_s,
                source_rate=clip.source_sample_rate, clip_audio=clip.audio,
                sample_rate=clip.sample_rate,
            )  # fmt: skip
        await self._settle(job, "succeed", refined=refined, enrolment=enrolment)
        log.info("voice %s refined in %.1f s (%s)", job.voice_id, time.perf_counter() - t0,
                 refinement.summary())  # fmt: skip

    async def _stored_clip(self, voice_id: str) -> tuple[Clip | None, Notice | None]:
        stored = await self._run(lambda: self.registry.clip(voice_id))
        if stored is None:
            return None, Notice("no_clip", "the server keeps no clip for this voice: POST a "
                                f"clip to /v1/voices/{voice_id}/refine")  # fmt: skip
        audio, rate = stored
        try:
            return await self._run(lambda: self.intake(flac_clip(audio, rate))), None
        except ClipError as exc:
            return None, Notice(exc.code, f"the stored clip: {exc.message}")

    async def _settle(
        self,
        job: _Job,
        outcome: str,
        notice: Notice | None = None,
        *,
        refined: Refined | None = None,
        enrolment: Reenrolment | None = None,
    ) -> None:
        now = self._clock()

        def move(voice: ClonedVoice) -> RefineUpdate:
            record: RefineRecord = voice.refine
            if outcome == "succeed":
                assert refined is not None
                return RefineUpdate(succeed(record, job=job.token, refined=refined, now=now),
                                    enrolment)  # fmt: skip
            assert notice is not None
            settle = skip if outcome == "skip" else fail
            return RefineUpdate(settle(record, job=job.token, notice=notice, now=now))

        for delay in (*SETTLE_RETRIES_S, None):
            try:
                voice = await self._run(lambda: self.registry.update_refine(job.voice_id, move))
                break
            except StaleJob:
                log.info("refinement %s of %s was overtaken; its result is dropped", job.token,
                         job.voice_id)  # fmt: skip
                return
            except StoreUnavailable:
                if delay is None:
                    log.warning("refinement of %s lost: the registry stayed unreachable",
                                job.voice_id)  # fmt: skip
                    return
                await asyncio.sleep(delay)
        if voice is not None and self.on_settled is not None:
            self.on_settled(job.voice_id, voice.refine.state)

    def _interrupt(self, job: _Job, notice: Notice) -> Callable[[], ClonedVoice | None]:
        now = self._clock()

        def move(voice: ClonedVoice) -> RefineUpdate:
            return RefineUpdate(fail(voice.refine, job=job.token, notice=notice, now=now))

        return lambda: self.registry.update_refine(job.voice_id, move)

    async def aclose(self) -> None:
        """Stop the queue; the jobs still held are settled ``refine_failed`` (interrupted)."""
        self._closed = True
        if self._consumer is not None:
            self._consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._consumer
        stopped = Notice(INTERRUPTED.code, "the server stopped before this refinement ran or "
                         "finished; POST /v1/voices/{id}/refine to try again")  # fmt: skip
        for job in list(self._held.values()):
            with contextlib.suppress(StaleJob, StoreUnavailable):
                await self._run(self._interrupt(job, stopped))
        self._held.clear()
        if self.backend is not None:
            await self.backend.aclose()


def refinements_for(
    settings: Settings,
    family: Family | None,
    registry: VoiceStore,
    *,
    encoder: SpeakerEncoder,
    intake: Callable[[bytes], Clip],
    on_settled: Callable[[str, RefineState], None] | None = None,
) -> Refinements:
    """The refinements of a server with ``settings`` whose acoustic ``family`` is loaded (None:
    none is, only stock voices of other models: refinement unavailable)."""
    backend: RefineBackend | None = None
    unavailable = None
    if not settings.clone_refine:
        unavailable = "refinement is off on this server (EMOSTREAM_CLONE_REFINE)"
    elif family is None:
        unavailable = ("this server has no model that speaks cloned voices (the EmoStream "
                       "acoustic model is not loaded), so it cannot refine them")  # fmt: skip
    elif settings.clone_refine_process or getattr(family, "decoder", None) is None:
        backend = ProcessBackend(settings, nice=settings.clone_refine_nice,
                                 sched_idle=settings.clone_refine_sched_idle,
                                 timeout_s=settings.clone_refine_timeout_s,
                                 idle_s=settings.clone_refine_idle_s)  # fmt: skip
    else:
        backend = ThreadBackend(family, refiner=refiner_for(settings, encoder))
    return Refinements(
        registry, backend, embed_audio=encoder.embed_audio, intake=intake,
        unavailable=unavailable, queue_size=settings.clone_refine_queue,
        stale_after_s=settings.clone_refine_timeout_s * (settings.clone_refine_queue + 2),
        on_settled=on_settled,
    )  # fmt: skip
