"""HTTP routes for cloned voices: ``POST /v1/voices``, ``GET|DELETE /v1/voices/{id}``.

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
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from emostream.stream.metrics import Metrics
from emostream.transport.edge.limits import KeyLimits, LimitExceeded
from emostream.transport.errors import error
from emostream.voices.cloning.clip import ClipError
from emostream.voices.cloning.enroll import Enroller
from emostream.voices.cloning.registry import ClonedVoice, VoiceStore, clean_name

log = logging.getLogger(__name__)

MULTIPART_SLACK = 64 * 1024  # bytes of form overhead allowed beyond the clip limit


def voice_routes(
    registry: VoiceStore,
    enroller: Enroller,
    *,
    prefix: str = "/v1/voices",
    on_change: Callable[[str, str], None] | None = None,
    owner_of: Callable[[Request], str | None] = lambda _request: None,
    limits: KeyLimits | None = None,
    metrics: Metrics | None = None,
) -> list[Route]:
    """Routes for the cloned-voice API.

    ``enroller`` turns an upload into a checked clip and its embedding (through its cache, so a
    clip uploaded again is not re-embedded) and runs blocking work off the event loop.
    ``on_change(event, voice_id)`` is called with ``"created"`` / ``"deleted"`` (for the app's
    catalog or metrics). ``owner_of(request)`` is the caller's principal (``None``: auth off, where
    every clone is everyone's); a clone belongs to the principal that made it, and another
    principal's clone answers ``404`` as if it did not exist. ``limits`` counts uploads per key
    (``429 clone_quota``); ``metrics`` counts the refusals.
    """
    max_bytes = enroller.max_bytes

    def refuse(status: int, code: str, message: str) -> Response:
        if metrics is not None:
            metrics.errors.labels(code).inc()
        return error(status, code, message)

    def owned(request: Request, voice_id: str) -> ClonedVoice | None:
        voice = registry.get(voice_id)
        owner = owner_of(request)
        return voice if voice is not None and (owner is None or voice.owner == owner) else None

    async def create(request: Request) -> Response:
        owner = owner_of(request)
        registry.check()  # a registry known to be down: refused before any work or quota
        if limits is not None:
            try:
                limits.charge_clone(owner)
            except LimitExceeded as exc:
                response = refuse(429, exc.code, exc.message)
                response.headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
                return response
        ctype = request.headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            return error(415, "bad_content_type", "send multipart/form-data with 'file' and 'name'")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_bytes + MULTIPART_SLACK:
            return error(
                413, "oversized", f"the upload is over {max_bytes / 1e6:.1f} MB; too large"
            )
        try:
            async with request.form(max_files=1, max_fields=8) as form:
                upload = form.get("file")
                name = form.get("name")
                if not isinstance(upload, UploadFile):
                    return error(400, "missing_file", "the form needs a 'file' part (the clip)",
                                 param="file")  # fmt: skip
                data = await upload.read(max_bytes + 1)
        except ClipError as exc:  # pragma: no cover - defensive
            return error(exc.http_status, exc.code, exc.message, param="file")
        except Exception as exc:  # noqa: BLE001 - malformed multipart bodies raise various errors
            return error(400, "bad_form", f"malformed multipart body: {exc}")
        if not isinstance(name, str):
            return error(400, "bad_name", "the form needs a 'name' field", param="name")
        try:
            name = clean_name(name)
        except ValueError as exc:
            return error(400, "bad_name", str(exc), param="name")
        try:
            enrolment = await enroller.enroll(data)
        except ClipError as exc:
            log.info("clip refused: %s (%s)", exc.code, exc.message)
            return error(exc.http_status, exc.code, exc.message, param="file")
        clip, final_name = enrolment.clip, name
        voice = await enroller.run(
            lambda: registry.add(
                name=final_name,
                embedding=enrolment.embedding,
                encoder=enroller.encoder.version,
                clip_sha256=clip.sha256,
                duration_s=clip.duration_s,
                speech_s=clip.speech_s,
                clip_audio=clip.audio,
                sample_rate=clip.sample_rate,
                owner=owner,
            )
        )
        if on_change is not None:
            on_change("created", voice.id)
        return JSONResponse(
            voice.as_dict(), status_code=201, headers={"Location": f"{prefix}/{voice.id}"}
        )

    async def read(request: Request) -> Response:
        voice_id = request.path_params["voice_id"]
        voice = owned(request, voice_id)
        if voice is None:
            return error(404, "unknown_voice", f"no cloned voice {voice_id!r}")
        return JSONResponse(voice.as_dict())

    async def delete(request: Request) -> Response:
        voice_id = request.path_params["voice_id"]
        if owned(request, voice_id) is None or not registry.delete(voice_id):
            return error(404, "unknown_voice", f"no cloned voice {voice_id!r}")
        if on_change is not None:
            on_change("deleted", voice_id)
        return Response(status_code=204)

    return [
        Route(prefix, create, methods=["POST"]),
        Route(prefix + "/{voice_id}", read, methods=["GET"]),
        Route(prefix + "/{voice_id}", delete, methods=["DELETE"]),
    ]
