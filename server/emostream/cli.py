"""Command line: ``emostream serve | say | keys | danmaku | bench``."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import secrets
import signal
import sys
import tempfile
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emostream.config import Settings

BENCHES = {
    "first-audio": "emostream.benchmarks.first_audio",
    "vocoder": "emostream.benchmarks.vocoder",
}
BENCH_USAGE = f"emostream bench {{{','.join(BENCHES)}}} [options]"
# Quality judges (Whisper, DNSMOS, d-vector) left the package for the repo's lab/ folder.
MOVED_TO_LAB = {"quality": "lab.quality", "acoustic": "lab.acoustic_quality"}
# ``serve``'s exit status when a store it needs (the voice registry's Redis) cannot be reached
# (2: the settings refuse; 1: anything else)
EXIT_UNAVAILABLE = 3


def _serve(args: argparse.Namespace) -> int:
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
        "emostream.cli:worker_app", factory=True, workers=settings.workers,
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


def _keys(args: argparse.Namespace) -> int:
    """``emostream keys add NAME --file PATH``: a new key, printed once; only its hash is kept."""
    from pathlib import Path

    from emostream.transport.edge.auth import new_key, parse_keys_file

    path = Path(args.file).expanduser()
    try:
        key, entry = new_key(args.name)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    if any(e.name == args.name for e in parse_keys_file(existing, str(path))):
        print(f"{path} already has a key named {args.name!r}", file=sys.stderr)
        return 2
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        if existing and not existing.endswith("\n"):
            f.write("\n")
        f.write(entry.line() + "\n")
    print(key)
    print(f"key {args.name!r} added to {path} (shown once; only its hash is stored)",
          file=sys.stderr)  # fmt: skip
    return 0


def _say(args: argparse.Namespace) -> int:
    import soundfile as sf

    from emostream.config import Settings
    from emostream.stream.oneshot import synthesize
    from emostream.transport.messages import ProtocolError, parse_controls
    from emostream.voices.base import UnsupportedControl
    from emostream.voices.catalog import load_catalog

    settings = Settings.from_env()
    catalog = load_catalog(settings)
    voice = catalog.get(args.voice or catalog.default_for(settings.default_voice))
    if voice is None:
        known = [i.id for i in catalog.infos()]
        print(f"unknown voice {args.voice!r}; available: {known}", file=sys.stderr)
        return 2
    try:
        controls = parse_controls(
            {"speed": args.speed, "emotion": args.emotion, "pitch_shift": args.pitch_shift}
        )
        pcm = asyncio.run(synthesize(voice, args.text, controls, sample_rate=args.sample_rate))
    except (ProtocolError, UnsupportedControl) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    sf.write(args.output, pcm, args.sample_rate)
    print(f"wrote {args.output}: {len(pcm) / args.sample_rate:.2f} s")
    return 0


def _danmaku(args: argparse.Namespace) -> int:
    """``emostream danmaku``: chat lines from stdin or a local socket → ``line`` messages."""
    from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge, EventLog
    from emostream.bridge.lines import LineParser
    from emostream.bridge.live_options import live_setup
    from emostream.bridge.sinks import OutputFormat, codec_for, format_for_path

    fmt: OutputFormat = args.format or format_for_path(args.output)
    fields: dict[str, object] = {
        "format": {"codec": codec_for(fmt), "sample_rate": args.sample_rate},
    }
    controls = {
        "voice": args.voice, "speed": args.speed, "emotion": args.emotion,
        "intensity": args.intensity, "pitch_shift": args.pitch_shift, "energy": args.energy,
    }  # fmt: skip
    fields.update({k: v for k, v in controls.items() if v is not None})
    if args.no_cache:
        fields["cache"] = False
    try:
        parser = LineParser(ttl_ms=args.ttl_ms, max_chars=args.max_chars, template=args.template)
        live = live_setup(args)  # --source, the chat rules, --reply-*: bridge/live_options.py
    except ValueError as exc:
        print(f"emostream danmaku: {exc}", file=sys.stderr)
        return 2
    options = BridgeOptions(
        url=args.url, api_key=args.api_key or os.environ.get("EMOSTREAM_API_KEY") or None,
        fields=fields, listen=args.listen, output_format=fmt, drain=not args.no_drain,
        pace_lead_s=live.pace_lead_s(args.pace_lead_s),
    )  # fmt: skip
    events = open(args.events, "a", encoding="utf-8") if args.events else sys.stderr  # noqa: SIM115
    audio = None
    try:
        if args.output == "-":
            audio = sys.stdout.buffer
        elif args.output not in (None, "none"):
            audio = open(args.output, "wb")  # noqa: SIM115 (closed below)
        bridge = DanmakuBridge(
            options, parser, live.outbox(fields, args.max_held),
            emit=EventLog(events), audio=audio, **live.bridge_args(),
        )  # fmt: skip
        return asyncio.run(bridge.run())
    finally:
        if audio is not None and audio is not sys.stdout.buffer:
            audio.close()
        if events is not sys.stderr:
            events.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        if len(argv) < 2 or argv[1] not in BENCHES:
            print(f"usage: {BENCH_USAGE}", file=sys.stderr)
            if argv[1:2] and argv[1] in MOVED_TO_LAB:
                print(f"'bench {argv[1]}' is not in the package: from a source checkout with "
                      f"the [eval] extra, python -m {MOVED_TO_LAB[argv[1]]} (lab/README.md)",
                      file=sys.stderr)  # fmt: skip
            return 2
        module = importlib.import_module(BENCHES[argv[1]])
        return int(module.main(argv[2:]))
    # `bench` is dispatched above, before argparse; the epilog keeps it in --help.
    p = argparse.ArgumentParser(
        prog="emostream",
        description="Streaming expressive TTS server",
        epilog=f"{BENCH_USAGE}: benchmarks (see emostream bench X --help)",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the WebSocket/HTTP server")
    s.add_argument("--host", default=None)
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--device", choices=["cpu", "cuda"], default=None)
    s.add_argument("--redis-url", default=None)
    s.add_argument(
        "--workers", type=int, default=None,
        help="server processes sharing the port (default 1; each loads its own models)",
    )  # fmt: skip
    s.add_argument("--api-keys-file", default=None, help="keys file (emostream keys add)")
    s.add_argument(
        "--ray", action="store_true",
        help="deploy on Ray Serve (ingress + autoscaled model replicas; README 'Cluster')",
    )  # fmt: skip
    s.add_argument("--ray-address", default=None, help="the Ray cluster to join (default: auto)")
    s.add_argument(
        "--allow-unauthenticated", action="store_true",
        help="serve a non-loopback host with no API keys (everyone is trusted)",
    )  # fmt: skip
    k = sub.add_parser("keys", help="API keys: keys add NAME --file PATH")
    ksub = k.add_subparsers(dest="keys_cmd", required=True)
    ka = ksub.add_parser("add", help="make a key, append its hash to the file, print the key")
    ka.add_argument("name")
    ka.add_argument("--file", required=True)
    y = sub.add_parser("say", help="synthesise TEXT to a WAV file")
    y.add_argument("text")
    y.add_argument("-o", "--output", default="out.wav")
    y.add_argument("--voice", default=None)
    y.add_argument("--emotion", default="neutral")
    y.add_argument("--speed", type=float, default=1.0)
    y.add_argument("--pitch-shift", type=float, default=0.0)
    y.add_argument("--sample-rate", type=int, default=24000, choices=[16000, 24000, 48000])
    d = sub.add_parser(
        "danmaku", help="bridge: chat lines (JSON or text, stdin or a local socket) to a server",
        description="Read chat lines (JSON objects with text, priority, ttl_ms, id, user; or "
        "plain text) from stdin or a local socket, speak each as a 'line' on one WebSocket, "
        "write the audio and log the server's events as JSON lines.",
    )  # fmt: skip
    d.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream")
    d.add_argument("--api-key", default=None, help="default: $EMOSTREAM_API_KEY")
    d.add_argument(
        "--listen", default=None, metavar="tcp:HOST:PORT|unix:PATH",
        help="read lines from clients of this local socket instead of stdin",
    )  # fmt: skip
    d.add_argument(
        "-o", "--output", default=None,
        help="audio to this file, '-' for stdout, 'none' for none (default: stdout when it "
        "is not a terminal)",
    )  # fmt: skip
    d.add_argument(
        "--format", choices=["pcm", "wav", "ogg"], default=None,
        help="raw s16le mono, WAV or Ogg Opus (default: from the output's name, else pcm)",
    )  # fmt: skip
    d.add_argument("--sample-rate", type=int, default=24000, choices=[16000, 24000, 48000])
    d.add_argument("--events", default=None, help="append the event log here (default stderr)")
    d.add_argument("--voice", default=None)
    d.add_argument("--speed", type=float, default=None)
    d.add_argument("--emotion", default=None)
    d.add_argument("--intensity", type=float, default=None)
    d.add_argument("--pitch-shift", type=float, default=None)
    d.add_argument("--energy", type=float, default=None)
    d.add_argument("--no-cache", action="store_true", help="bypass the server's phrase cache")
    d.add_argument("--ttl-ms", type=float, default=8000.0, help="a line's TTL if it gives none")
    d.add_argument(
        "--template", default="{text}",
        help="spoken text of a line with a user, e.g. '{user} says {text}'",
    )  # fmt: skip
    d.add_argument("--max-chars", type=int, default=500, help="longer lines are skipped")
    d.add_argument("--max-held", type=int, default=256, help="lines held while disconnected")
    d.add_argument(
        "--pace-lead-s", type=float, default=0.0, metavar="S",
        help="send one line at a time, when less than S s of received audio is left to play, "
        "so that lines wait and expire in the bridge. The server paces lines to the listener "
        "itself (its line_pace_lead_ms, default 1 s); this is for a server with that set to 0 "
        "or one without it. Default 0: every line to the server's queue at once",
    )  # fmt: skip
    d.add_argument(
        "--no-drain", action="store_true",
        help="at the end of input exit at once (default: once every line is spoken or dropped)",
    )  # fmt: skip
    from emostream.bridge.live_options import add_live_arguments

    add_live_arguments(d)
    args = p.parse_args(argv)
    if args.cmd == "danmaku":
        if args.output is None and not sys.stdout.isatty():
            args.output = "-"
        return _danmaku(args)
    if args.cmd == "serve":
        return _serve(args)
    if args.cmd == "say":
        return _say(args)
    if args.cmd == "keys":
        return _keys(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
