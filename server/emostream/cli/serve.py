"""``emostream serve``: the server, in one process or several (``--workers``), or on Ray Serve."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import sys
import tempfile
from types import FrameType
from typing import TYPE_CHECKING

from emostream.cli.exits import EXIT_UNAVAILABLE

if TYPE_CHECKING:
    from emostream.config import Settings



def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    import uvicorn

    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.transport.edge.access_log import log_config
    from emostream.transport.edge.auth import ConfigError, authenticator
    from emostream.transport.edge.origins import EdgeRules
    from emostream.transport.edge.request_timeouts import GuardedHttpProtocol
    from emostream.transport.websocket.utf8 import Utf8CheckedProtocol
    from emostream.voices.cloning.registries import open_registry
    from emostream.voices.cloning.registry import StoreUnavailable

    cli = {
        "host": args.host, "port": args.port, "device": args.device,
        "redis_url": args.redis_url, "workers": args.workers,
        "api_keys_file": args.api_keys_file,
        "allow_unauthenticated": True if args.allow_unauthenticated else None,
    }  # fmt: skip
    settings = Settings.from_env(**cli)
    _configure_logging(settings.log_level)
    try:
        authenticator(settings)  # refuse to start before any model loads
        EdgeRules.from_settings(settings)
    except ConfigError as exc:
        print(f"emostream serve: {exc}", file=sys.stderr)
        return 2
    if args.ray:
        # A Ray Serve application (README "Cluster"; the [ray] extra): ingress + model replicas.
        from emostream.cluster.deploy import serve_ray

        return serve_ray(replace(settings, ray_address=args.ray_address or settings.ray_address))
    # Workers must share the token secret (a token minted by one is checked by another).
    if not settings.token_secret:
        cli["token_secret"] = secrets.token_hex(32)
        settings = Settings.from_env(**cli)
    # SIGTERM: the app drains first (transport.drain); once uvicorn has shut down it raises
    # the signal again, which this handler turns into exit status 0.
    signal.signal(signal.SIGTERM, _exit_zero)
    options: dict[str, object] = {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop" if sys.platform != "win32" else "asyncio",
        "http": GuardedHttpProtocol,  # httptools with header/body read deadlines (slowloris)
        "ws": Utf8CheckedProtocol,  # websockets-sansio; a text message not UTF-8: 1007, one line
        "ws_per_message_deflate": False,  # Opus does not compress; deflate only costs CPU
        # the largest frame: a start with reference_audio (the app holds others to max_message_bytes)
        "ws_max_size": max(settings.max_message_bytes, settings.max_start_bytes),
        "log_level": settings.log_level,
        "log_config": log_config(),  # uvicorn's, with query strings redacted (?access_token=)
        "timeout_graceful_shutdown": 5,  # after the app's own drain (drain_timeout_s)
    }
    try:  # the voice registry first: a Redis that cannot be reached is one line, not a trace
        if settings.workers <= 1:
            app = create_app(settings)
        else:  # (each worker opens its own; this one only checks)
            open_registry(settings.voice_registry_url, settings.data_dir,
                          timeout_s=settings.voice_registry_timeout_s).close()  # fmt: skip
    except StoreUnavailable as exc:
        print(f"emostream serve: {exc}; start it or change EMOSTREAM_VOICE_REGISTRY_URL",
              file=sys.stderr)  # fmt: skip
        return EXIT_UNAVAILABLE
    if settings.workers <= 1:
        try:
            uvicorn.run(app, **options)  # type: ignore[arg-type]
        except SystemExit as exc:  # _exit_zero, once uvicorn has shut down
            _exit_now_if_model_busy(app, exc.code)
            raise
        _exit_now_if_model_busy(app, 0)
        return 0
    # Several processes on one port (each with its own models, GPU engine and event loop):
    # workers are spawned fresh and read their settings from the environment.
    for name, value in cli.items():
        if value is not None:
            os.environ[f"EMOSTREAM_{name.upper()}"] = str(value)
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="emostream-metrics-")
    engine = None
    if settings.engine == "process" and not settings.engine_socket:
        # One engine process owns the device for every worker (engine.process).
        from emostream.engine.process import EngineHandle

        engine = EngineHandle.spawn(settings)
        os.environ["EMOSTREAM_ENGINE_SOCKET"] = engine.socket_path
    try:
        _run_workers(settings, options)
    finally:
        if engine is not None:
            engine.stop()
    return 0


def _run_workers(settings: Settings, options: dict[str, object]) -> None:
    """uvicorn's supervisor over ``settings.workers`` processes, each listening on its own
    SO_REUSEPORT socket where the platform has it (``transport.edge.reuseport``: the kernel then
    spreads connections evenly), else on one socket bound here and shared (as uvicorn.run)."""
    from uvicorn import Config
    from uvicorn.supervisors import Multiprocess

    from emostream.transport.edge import reuseport

    config = Config(
        "emostream.cli.serve:worker_app", factory=True, workers=settings.workers,
        **options,  # type: ignore[arg-type]
    )  # fmt: skip
    # SO_REUSEPORT: the port held here (never listening) until the end
    held = reuseport.reserve(settings.host, settings.port) if reuseport.SUPPORTED else None
    try:
        listener = (
            config.bind_socket()
            if held is None
            else reuseport.ListenerRecipe(settings.host, held.getsockname()[1], config.backlog)
        )
        Multiprocess(config, sockets=[listener]).run()  # type: ignore[list-item]
    except KeyboardInterrupt:
        pass
    finally:
        if held is not None:
            held.close()


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def worker_app() -> object:
    """The app of one ``serve --workers`` process (spawned fresh: its logging is set up here,
    else the app's own lines below WARNING, the drain's among them, were dropped)."""
    from emostream.config import Settings
    from emostream.transport.app import create_app

    settings = Settings.from_env()
    _configure_logging(settings.log_level)
    return create_app(settings)


def _exit_zero(sig: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _exit_now_if_model_busy(app: object, code: object) -> None:
    """The app has shut down (drained, closed); if a model call still runs on its runner's
    threads (the service waited ``CLOSE_WAIT_S`` for them), end the process now with ``code``:
    finalizing the interpreter under a running ONNX Runtime call aborts it (exit 134)."""
    from emostream.engine.runner import Joinable

    service = getattr(getattr(app, "state", None), "service", None)
    runner = getattr(service, "runner", None)
    if not isinstance(runner, Joinable):
        return
    runner.close()  # (done already by the app's shutdown, unless that failed)
    if runner.join(1.0):
        return
    logging.getLogger(__name__).warning("a model call is still running: exiting without it")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)
