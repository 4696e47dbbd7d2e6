"""The Starlette application: routes, static demo, start-up and shutdown."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from emostream.codec.encoders import warm as warm_encoders
from emostream.config import Settings
from emostream.engine.devices import DeviceSetup, frontend_settings, setup_device
from emostream.stream.metrics import Metrics
from emostream.stream.service import SpeechService
from emostream.text.frontend import TextFrontEnd
from emostream.transport import http
from emostream.transport.compat.routes import error_shape
from emostream.transport.compat.routes import routes as compat_routes
from emostream.transport.drain import Drain, hook_sigterm
from emostream.transport.edge.auth import authenticator, is_loopback
from emostream.transport.edge.guard import KEY_HEADERS, Guard, mint_token, principal_of
from emostream.transport.edge.limits import KeyLimits
from emostream.transport.edge.origins import EdgeRules
from emostream.transport.openai_api import (
    EXPOSED_HEADERS,
    SDK_HEADERS,
    model_routes,
    resolve_aliases,
)
from emostream.transport.rooms.api import room_routes
from emostream.transport.rooms.registry import RoomHub
from emostream.transport.pronunciation_api import dictionary_routes
from emostream.transport.voice_samples import SampleCache, sample
from emostream.transport.voices_api import voice_routes
from emostream.transport.websocket.connection import stream_endpoint
from emostream.voices.catalog import VoiceCatalog, load_catalog
from emostream.voices.cloning.cache import EmbeddingCache
from emostream.voices.cloning.clip import ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder, default_model_path
from emostream.voices.cloning.enroll import Enroller
from emostream.voices.cloning.registries import open_registry
from emostream.voices.cloning.registry import StoreUnavailable, VoiceStore
from emostream.voices.versions import model_versions

if TYPE_CHECKING:
    from emostream.voices.cloning.refine_jobs import Refinements

log = logging.getLogger(__name__)


def find_client_dir() -> Path | None:
    """The browser client/demo (``client_js/`` in a checkout or image)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "client_js"
        if (candidate / "index.html").is_file():
            return candidate
    return None


def _clones(registry: VoiceStore) -> int | str:
    """How many clones the registry holds, for the start-up line ("?" if it cannot say)."""
    try:
        return len(registry)
    except StoreUnavailable:
        return "?"


Handler = Callable[[Request, Exception], Awaitable[Response]]


def _shaped(handler: Handler) -> Handler:
    """``handler``, answering in the compatible API's error shape on its paths."""

    async def shaped(request: Request, exc: Exception) -> Response:
        response = await handler(request, exc)
        shape = error_shape(request.url.path)
        if shape is None:
            return response
        status = response.status_code
        if isinstance(exc, HTTPException):
            code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
            message = f"{request.method} {request.url.path[:100]}: {exc.detail}"
        else:
            code, message = "internal_error", "the server failed on this request; it is logged"
        out = shape(status, code, message)
        for name in ("allow", "retry-after"):
            if name in response.headers:
                out.headers[name] = response.headers[name]
        return out

    return shaped


def create_app(
    settings: Settings | None = None,
    *,
    catalog: VoiceCatalog | None = None,
    service: SpeechService | None = None,
    device: Callable[[Settings], Awaitable[DeviceSetup]] | None = None,
) -> Starlette:
    """Build the app. Voices load at start-up unless a ``catalog`` or ``service`` is given.
    ``device``: what sets up the runner (default :func:`setup_device`; the Ray Serve ingress
    gives its own, :func:`emostream.cluster.ray_runner.ray_device`).

    Raises :class:`~emostream.transport.edge.auth.ConfigError` when the security settings refuse
    (a non-loopback host with no API keys, unless ``allow_unauthenticated``; an allowed origin
    or host that is not one), and :class:`~emostream.voices.cloning.registry.StoreUnavailable` when
    the voice registry's Redis cannot be reached. Later, while it cannot, every route that
    needs it answers ``503 store_unavailable``
    (:func:`emostream.transport.http.store_unavailable`)."""
    settings = settings or Settings.from_env()
    device_setup = device
    auth = authenticator(settings)
    rules = EdgeRules.from_settings(settings)
    registry = open_registry(
        settings.voice_registry_url, settings.data_dir,
        timeout_s=settings.voice_registry_timeout_s, retry_after_s=settings.voice_registry_retry_s,
    )  # fmt: skip
    if not auth.enabled:  # loopback, or allow_unauthenticated on a public host
        level = logging.INFO if is_loopback(settings.host) else logging.WARNING
        log.log(level, "no API keys: every caller is trusted (host %s)", settings.host)
    limits = KeyLimits.from_settings(settings)
    drain = Drain(settings.drain_timeout_s)
    metrics = service.metrics if service is not None else Metrics()
    cache = EmbeddingCache(redis_url=settings.redis_url, registry=metrics.registry)
    encoder = SpeakerEncoder(default_model_path(settings.models_dir), threads=settings.cpu_threads)
    holder: list[SpeechService] = []  # the service, once the lifespan has built it
    refiners: list[Refinements] = []  # the refinement queue, likewise
    # One enrolment path: POST /v1/voices uploads and WebSocket reference_audio clips.
    intake = ClipIntake()
    enroller = Enroller(intake, encoder, cache=cache)
    rooms = rooms_for(settings, metrics)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        device = None
        svc = service
        sys.setswitchinterval(settings.switch_interval_ms / 1000.0)
        if svc is None:
            device = await (device_setup or setup_device)(settings)
            voices = catalog or load_catalog(frontend_settings(settings))
            TextFrontEnd.warm()  # the handle splitter's word list, before the first request
            await device.prepare(voices, acoustic_graphs=settings.acoustic_graphs)
            svc = SpeechService(
                replace(settings, default_voice=voices.default_for(settings.default_voice)),
                voices,
                runner=device.runner,
                metrics=metrics,
                registry=registry,
                embed_reference=enroller.embed,
                model_versions=model_versions(settings, voices),
            )
            if device.report:
                metrics.gpu_memory.set(float(device.report.get("reserved_bytes", 0)))
        await asyncio.to_thread(warm_encoders)  # FFmpeg (aac) before the first request
        app.state.service = svc
        app.state.registry = registry
        app.state.voice_aliases = resolve_aliases(
            svc.settings.voice_aliases(), svc.catalog, svc.settings.default_voice
        )
        if settings.engine == "process":  # the engine sees the device, not this process
            svc.watch_loop()
        holder.append(svc)
        running = svc
        from emostream.voices.cloning.refine_jobs import refinements_for  # not at import

        refinements = refinements_for(
            settings, svc.catalog.family, registry, encoder=encoder, intake=intake,
            on_settled=running.refined,
        )  # fmt: skip
        refiners.append(refinements)
        app.state.refinements = refinements
        restore_sigterm = hook_sigterm(drain, lambda: running.active)
        log.info(
            "emostream ready: %d voice(s), %d cloned, device=%s, redis=%s",
            len(svc.catalog), _clones(registry), settings.device, settings.redis_url or "off",
        )  # fmt: skip
        try:
            yield
        finally:
            restore_sigterm()
            rooms.close_all("shutting_down", "the server is shutting down; reconnect shortly")
            await refinements.aclose()
            await svc.aclose()
            if device is not None:
                await device.close()
            await cache.close()
            registry.close()

    routes: list[BaseRoute] = [
        WebSocketRoute("/v1/stream", stream_endpoint),
        Route("/v1/audio/speech", http.speech, methods=["POST"]),
        Route("/v1/voices", http.voices, methods=["GET"]),
        Route("/v1/voices/{voice_id}/sample", sample, methods=["GET"]),
        *model_routes(),
        *voice_routes(
            registry,
            enroller,
            on_change=lambda event, vid: holder[0].forget(event, vid) if holder else None,
            owner_of=principal_of,
            limits=limits,
            metrics=metrics,
            refinements=lambda: refiners[0] if refiners else None,
            is_stock=lambda vid: bool(holder) and vid in holder[0].catalog,
            stock_view=http.stock_voice_view,
            unknown=http.unknown_voice_message,
        ),
        *dictionary_routes(registry, owner_of=principal_of),  # docs/protocol.md, Pronunciation
        *compat_routes(),  # ElevenLabs' and Cartesia's APIs (docs/compat.md)
        Route("/v1/tokens", mint_token, methods=["POST"]),
        Route("/healthz", http.healthz, methods=["GET"]),
        Route("/metrics", http.metrics, methods=["GET"]),
    ]
    client = find_client_dir()
    routes += room_routes(client)  # rooms, their listeners and the /live page (docs/live.md)
    if client is not None:
        routes.append(Mount("/", StaticFiles(directory=client, html=True), name="client"))
    middleware = [Middleware(Guard, auth=auth, rules=rules, metrics=metrics, shape=error_shape)]
    cors = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    if cors:
        middleware.insert(0, Middleware(
            CORSMiddleware, allow_origins=cors, allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", *SDK_HEADERS, *KEY_HEADERS],
            expose_headers=list(EXPOSED_HEADERS), max_age=600,
        ))  # fmt: skip
    app = Starlette(
        routes=routes, lifespan=lifespan, middleware=middleware,
        exception_handlers={StoreUnavailable: http.store_unavailable,
                            HTTPException: _shaped(http.http_exception),
                            500: _shaped(http.internal_error)},
    )  # fmt: skip
    app.state.auth = auth
    app.state.limits = limits
    app.state.drain = drain
    app.state.rooms = rooms
    app.state.samples = SampleCache()
    return app


def rooms_for(settings: Settings, metrics: Metrics) -> RoomHub:
    """The process's rooms, kept in ``data_dir``; none under several workers (each would hold
    rooms of its own, and a listener would reach another's)."""
    why_not = ""
    if settings.workers > 1:
        why_not = "rooms live in one server process: serve with --workers 1 to use them"
    return RoomHub(
        path=Path(settings.data_dir).expanduser() / "rooms.json", max_rooms=settings.max_rooms,
        max_listeners=settings.room_max_listeners,
        queue_bytes=settings.room_listener_queue_bytes, why_not=why_not, metrics=metrics,
    )  # fmt: skip
