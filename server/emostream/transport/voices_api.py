"""HTTP routes for cloned voices: ``POST /v1/voices``, ``GET|DELETE /v1/voices/{id}``,
``POST /v1/voices/{id}/refine``.

The app mounts ``voice_routes(...)``; ``GET /v1/voices`` (stock and cloned together) stays with
the app (:func:`emostream.transport.http.voices`).

``POST /v1/voices`` takes ``multipart/form-data`` with ``file`` (the reference clip: WAV, FLAC,
Ogg Vorbis/Opus, MP3; WebM/MP4 with PyAV) and ``name``, enrols the clip
(:meth:`emostream.voices.cloning.enroll.Enroller.enroll`) and answers ``201`` with the voice as JSON
(``id`` among it). Every refusal is ``4xx`` with ``{"error": {"code", "message"}}`` and nothing
stored; clip codes are those of :class:`emostream.voices.cloning.clip.ClipError`. While the registry
cannot be reached every route raises :class:`~emostream.voices.cloning.registry.StoreUnavailable`, which
the app answers ``503 store_unavailable``; an upload is refused so before its quota is charged
or its clip read.

A new clone is usable at once and is then refined in the background
(:mod:`emostream.voices.cloning.refine_jobs`): its JSON carries ``state`` (``ready``,
``refining``, ``refined``, ``refine_failed`` with ``error``, ``refine_skipped`` with
``warning``, ``refine_unavailable``) and ``refinement`` (the figures of the refinement it speaks
with, or null). ``POST /v1/voices/{id}/refine`` refines it again: with no body against its
stored clip, or with a multipart ``file`` (checked as at registration, and for one speaker and
speech: ``400 multiple_speakers`` / ``not_speech``; a clip that fails is refused, nothing
changed) against that clip, which
replaces the stored clip and embedding once refined. It answers ``202`` with the voice
(``refining``); ``409 refine_in_progress`` while an attempt is queued or running (no queueing
behind it: ask again when it settles), ``409 refine_unavailable`` on a server that cannot
refine, ``503 refine_busy`` (``Retry-After``) when the server's queue is full. Each refine
request counts against the key's clone quota.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.stream.metrics import Metrics
from emostream.transport.edge.limits import KeyLimits, LimitExceeded
from emostream.transport.errors import error
from emostream.voices.cloning.clip import ClipError
from emostream.voices.cloning.enroll import Enroller
from emostream.voices.cloning.refine_state import QueueFull, RefineBusy, RefineUnavailable, view
from emostream.voices.cloning.registry import (
    ClonedVoice,
    StoreUnavailable,
    VoiceStore,
    clean_name,
    is_cloned_id,
)
from emostream.voices.names import name_clash, named

if TYPE_CHECKING:  # the queue is built at start-up (the app imports it then)
    from emostream.voices.cloning.refine_jobs import Refinements

log = logging.getLogger(__name__)

MULTIPART_SLACK = 64 * 1024  # bytes of form overhead allowed beyond the clip limit
NO_REFINER = "refinement is not set up on this server"
REFINE_RETRY_S = 30  # Retry-After of refine_busy: about one refinement


def voice_view(voice: ClonedVoice, refinements: Refinements | None) -> dict[str, Any]:
    """A cloned voice as the API shows it: its record and its refinement's state."""
    if refinements is not None:
        return {**voice.as_dict(), **refinements.view(voice)}
    return {**voice.as_dict(), **view(voice.refine, now=time.time(), stale_after_s=float("inf"),
                                      unavailable=NO_REFINER)}  # fmt: skip


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def voice_routes(
    registry: VoiceStore,
    enroller: Enroller,
    *,
    prefix: str = "/v1/voices",
    on_change: Callable[[str, str], None] | None = None,
    owner_of: Callable[[Request], str | None] = lambda _request: None,
    limits: KeyLimits | None = None,
    metrics: Metrics | None = None,
    refinements: Callable[[], Refinements | None] = lambda: None,
    is_stock: Callable[[str], bool] = lambda _id: False,
    stock_view: Callable[[Request, str], dict[str, Any] | None] = lambda _r, _id: None,
    unknown: Callable[[Request, str], str] = lambda _r, v: f"no voice {v[:40]!r}",
) -> list[Route]:
    """Routes for the cloned-voice API.

    ``enroller`` turns an upload into a checked clip and its embedding (through its cache, so a
    clip uploaded again is not re-embedded) and runs blocking work off the event loop.
    ``on_change(event, voice_id)`` is called with ``"created"`` / ``"deleted"`` (for the app's
    catalog or metrics). ``owner_of(request)`` is the caller's principal (``None``: auth off, where
    every clone is everyone's); a clone belongs to the principal that made it, and another
    principal's clone answers ``404`` as if it did not exist. ``limits`` counts uploads and
    refine requests per key (``429 clone_quota``); ``metrics`` counts the refusals.
    ``refinements()``: the server's refinement queue (None: it refines nothing; the app's is
    built at start-up, hence a getter).

    A clone is found by its id or by the name it was given (any case; names are unique among a
    principal's clones, and may not be a stock voice's id: ``is_stock``; ``409 name_taken``).
    ``GET`` of a stock voice answers ``stock_view(request, id)``; a voice found nowhere is
    ``404 unknown_voice`` with ``unknown(request, asked)`` (short, with the closest names).
    """
    names_lock = threading.Lock()  # a name's check and the clone's insert, together
    max_bytes = enroller.max_bytes

    def refuse(status: int, code: str, message: str, *, param: str | None = None) -> Response:
        if metrics is not None:
            metrics.errors.labels(code).inc()
        return error(status, code, message, param=param)

    def owned(request: Request, voice_id: str) -> ClonedVoice | None:
        """The caller's clone with this id, or else with this name (one, any case)."""
        owner = owner_of(request)
        voice = registry.get(voice_id) if is_cloned_id(voice_id) else None
        if voice is None and not is_cloned_id(voice_id) and not is_stock(voice_id):
            found = named(registry.voices(owner=owner), voice_id)
            voice = found[0] if len(found) == 1 else None
        return voice if voice is not None and (owner is None or voice.owner == owner) else None

    def missing(request: Request, voice_id: str) -> Response:
        return error(404, "unknown_voice", unknown(request, voice_id))

    def charge(owner: str | None) -> None:
        if limits is None:
            return
        try:
            limits.charge_clone(owner)
        except LimitExceeded as exc:
            response = refuse(429, exc.code, exc.message)
            response.headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
            raise _Refused(response) from None

    async def upload(request: Request, *, named: bool) -> tuple[bytes | None, str | None]:
        """The form's clip bytes (None: no ``file``) and ``name``; raises :class:`_Refused`."""
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_bytes + MULTIPART_SLACK:
            raise _Refused(error(
                413, "oversized", f"the upload is over {max_bytes / 1e6:.1f} MB; too large"
            ))  # fmt: skip
        try:
            async with request.form(max_files=1, max_fields=8) as form:
                file = form.get("file")
                name = form.get("name")
                if not isinstance(file, UploadFile):
                    if named:
                        raise _Refused(error(400, "missing_file", "the form needs a 'file' "
                                             "part (the clip)", param="file"))  # fmt: skip
                    return None, None
                data = await file.read(max_bytes + 1)
        except _Refused:
            raise
        except ClipError as exc:  # pragma: no cover - defensive
            raise _Refused(error(exc.http_status, exc.code, exc.message, param="file")) from None
        except Exception as exc:  # noqa: BLE001 - malformed multipart bodies raise various errors
            raise _Refused(error(400, "bad_form", f"malformed multipart body: {exc}")) from None
        return data, name if isinstance(name, str) else None

    async def create(request: Request) -> Response:
        owner = owner_of(request)
        registry.check()  # a registry known to be down: refused before any work or quota
        try:
            charge(owner)
            ctype = request.headers.get("content-type", "")
            if not ctype.startswith("multipart/form-data"):
                return error(415, "bad_content_type",
                             "send multipart/form-data with 'file' and 'name'")  # fmt: skip
            data, name = await upload(request, named=True)
        except _Refused as refused:
            return refused.response
        assert data is not None
        if name is None:
            return error(400, "bad_name", "the form needs a 'name' field", param="name")
        try:
            name = clean_name(name)
        except ValueError as exc:
            return error(400, "bad_name", str(exc), param="name")
        clash = name_clash(name, registry.voices(owner=owner), is_stock)
        if clash is not None:  # before the clip is read and embedded
            return refuse(409, "name_taken", clash, param="name")
        try:
            enrolment = await enroller.enroll(data)
        except ClipError as exc:
            log.info("clip refused: %s (%s)", exc.code, exc.message)
            return error(exc.http_status, exc.code, exc.message, param="file")
        clip, final_name = enrolment.clip, name

        def add() -> ClonedVoice | str:
            with names_lock:  # the same name uploaded twice at once: one of them is refused
                taken = name_clash(final_name, registry.voices(owner=owner), is_stock)
                if taken is not None:
                    return taken
                return registry.add(
                    name=final_name,
                    embedding=enrolment.embedding,
                    encoder=enroller.encoder.version,
                    clip_sha256=clip.sha256,
                    duration_s=clip.duration_s,
                    speech_s=clip.speech_s,
                    clip_audio=clip.audio,
                    sample_rate=clip.sample_rate,
                    owner=owner,
                    source_rate=clip.source_sample_rate,
                )

        added = await enroller.run(add)
        if isinstance(added, str):
            return refuse(409, "name_taken", added, param="name")
        voice = added
        if on_change is not None:
            on_change("created", voice.id)
        queue = refinements()
        if queue is not None and queue.available:
            try:  # the clone is usable now; its refinement follows in the background
                voice = await queue.submit(voice.id, clip=clip, when_full="skip") or voice
            except (StoreUnavailable, RefineBusy, RefineUnavailable) as exc:
                log.warning("voice %s stays zero-shot: refinement not queued (%s)", voice.id, exc)
        return JSONResponse(
            voice_view(voice, queue), status_code=201, headers={"Location": f"{prefix}/{voice.id}"}
        )

    async def read(request: Request) -> Response:
        voice_id = request.path_params["voice_id"]
        voice = owned(request, voice_id)
        if voice is not None:
            return JSONResponse(voice_view(voice, refinements()))
        stock = stock_view(request, voice_id)
        return JSONResponse(stock) if stock is not None else missing(request, voice_id)

    async def refine(request: Request) -> Response:
        voice_id = request.path_params["voice_id"]
        registry.check()
        voice = owned(request, voice_id)
        if voice is None:
            return missing(request, voice_id)
        voice_id = voice.id
        queue = refinements()
        if queue is None or not queue.available:
            reason = NO_REFINER if queue is None else queue.unavailable
            return refuse(409, "refine_unavailable", reason or NO_REFINER)
        ctype = request.headers.get("content-type", "")
        try:
            charge(owner_of(request))
            data = None
            if ctype.startswith("multipart/form-data"):
                data, _ = await upload(request, named=False)
            elif int(request.headers.get("content-length") or 0) > 0:
                return error(415, "bad_content_type",
                             "send no body, or multipart/form-data with a 'file'")  # fmt: skip
        except _Refused as refused:
            return refused.response
        clip = embedding = None
        if data is not None:  # a new clip: every check before anything is queued
            try:
                enrolment = await enroller.enroll(data)
            except ClipError as exc:
                log.info("clip refused: %s (%s)", exc.code, exc.message)
                return error(exc.http_status, exc.code, exc.message, param="file")
            notice = await queue.verdict(enrolment.clip)
            if notice is not None:
                return refuse(400, notice.code, notice.message, param="file")
            clip, embedding = enrolment.clip, enrolment.embedding
        try:
            queued = await queue.submit(
                voice_id, clip=clip, embedding=embedding, encoder=enroller.encoder.version,
                replace_clip=clip is not None, checked=clip is not None,
            )  # fmt: skip
        except RefineBusy as exc:
            return refuse(409, "refine_in_progress", f"{exc}: ask again once it has settled")
        except RefineUnavailable as exc:
            return refuse(409, "refine_unavailable", str(exc))
        except QueueFull as exc:
            response = refuse(503, "refine_busy", f"{exc}; try again later")
            response.headers["Retry-After"] = str(REFINE_RETRY_S)
            return response
        if queued is None:
            return missing(request, voice_id)
        return JSONResponse(voice_view(queued, queue), status_code=202,
                            headers={"Location": f"{prefix}/{voice_id}"})  # fmt: skip

    async def delete(request: Request) -> Response:
        voice = owned(request, request.path_params["voice_id"])
        if voice is None or not registry.delete(voice.id):
            return missing(request, request.path_params["voice_id"])
        if on_change is not None:
            on_change("deleted", voice.id)
        return Response(status_code=204)

    return [
        Route(prefix, create, methods=["POST"]),
        Route(prefix + "/{voice_id}", read, methods=["GET"]),
        Route(prefix + "/{voice_id}", delete, methods=["DELETE"]),
        Route(prefix + "/{voice_id}/refine", refine, methods=["POST"]),
    ]
