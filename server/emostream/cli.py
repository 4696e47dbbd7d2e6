"""Command line: ``emostream serve | say | bench``."""

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

BENCHES = {
    "first-audio": "emostream.bench.first_audio",
    "vocoder": "emostream.bench.vocoder",
}
BENCH_USAGE = f"emostream bench {{{','.join(BENCHES)}}} [options]"
# Quality judges (Whisper, DNSMOS, d-vector) left the package for the repo's lab/ folder.
MOVED_TO_LAB = {"quality": "lab.quality", "acoustic": "lab.acoustic_quality"}


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.transport.auth import ConfigError, authenticator
    from emostream.transport.request_timeouts import GuardedHttpProtocol

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
    except ConfigError as exc:
        print(f"emostream serve: {exc}", file=sys.stderr)
        return 2
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
        "ws": "websockets-sansio",
        "ws_per_message_deflate": False,  # Opus does not compress; deflate only costs CPU
        # the largest frame: a start with reference_audio (the app holds others to max_message_bytes)
        "ws_max_size": max(settings.max_message_bytes, settings.max_start_bytes),
        "log_level": settings.log_level,
        "timeout_graceful_shutdown": 5,  # after the app's own drain (drain_timeout_s)
    }
    if settings.workers <= 1:
        uvicorn.run(create_app(settings), **options)  # type: ignore[arg-type]
        return 0
    # Several processes on one port (each with its own models, GPU engine and event loop):
    # workers are spawned fresh and read their settings from the environment.
    for name, value in cli.items():
        if value is not None:
            os.environ[f"EMOSTREAM_{name.upper()}"] = str(value)
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="emostream-metrics-")
    uvicorn.run(
        "emostream.cli:worker_app", factory=True, workers=settings.workers,
        **options,  # type: ignore[arg-type]
    )  # fmt: skip
    return 0


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


def _keys(args: argparse.Namespace) -> int:
    """``emostream keys add NAME --file PATH``: a new key, printed once; only its hash is kept."""
    from pathlib import Path

    from emostream.transport.auth import new_key, parse_keys_file

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
    from emostream.engine.oneshot import synthesize
    from emostream.transport.protocol import ProtocolError, parse_controls
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
    args = p.parse_args(argv)
    if args.cmd == "serve":
        return _serve(args)
    if args.cmd == "say":
        return _say(args)
    if args.cmd == "keys":
        return _keys(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
