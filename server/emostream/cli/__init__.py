"""Command line: ``emostream serve | say | voices | clone | keys | danmaku | room | bench``.

The parser is here; each command's code is in its own module, imported only when that command
runs, so that the clients of a running server (``say``, ``voices``, ``clone``) start without
loading any model (``say --url`` end to end: ``bench/cli_say.py``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from emostream.bridge.live_options import add_live_arguments
from emostream.cli.exits import EXIT_UNAVAILABLE

__all__ = ["BENCHES", "EXIT_UNAVAILABLE", "main", "parser", "worker_app"]

BENCHES = {
    "first-audio": "emostream.benchmarks.first_audio",
    "vocoder": "emostream.benchmarks.vocoder",
}
BENCH_USAGE = f"emostream bench {{{','.join(BENCHES)}}} [options]"
# Quality judges (Whisper, DNSMOS, d-vector) left the package for the repo's lab/ folder.
MOVED_TO_LAB = {"quality": "lab.quality", "acoustic": "lab.acoustic_quality"}
# The server the clients talk to unless told (``--url``, or $EMOSTREAM_URL)
DEFAULT_URL = "ws://127.0.0.1:8000/v1/stream"
RATES = [16000, 24000, 48000]
COMMANDS = {  # command -> the module whose run(args) carries it out
    "serve": "emostream.cli.serve",
    "say": "emostream.cli.say",
    "voices": "emostream.cli.catalog",
    "clone": "emostream.cli.catalog",
    "keys": "emostream.cli.keys",
    "danmaku": "emostream.cli.danmaku",
    "room": "emostream.cli.room",
}


def worker_app() -> object:
    """The app of one ``serve --workers`` process (:func:`emostream.cli.serve.worker_app`)."""
    from emostream.cli.serve import worker_app as make

    return make()


def _server_options(p: argparse.ArgumentParser, *, http: bool = False) -> None:
    where = "its HTTP API" if http else "its WebSocket"
    p.add_argument(
        "--url", default=os.environ.get("EMOSTREAM_URL") or DEFAULT_URL,
        help=f"the server ({where} is found from it; ws:// or http:// alike; default "
        f"$EMOSTREAM_URL or {DEFAULT_URL})",
    )  # fmt: skip
    p.add_argument("--api-key", default=None, help="the server's API key (default "
                   "$EMOSTREAM_API_KEY; none on a loopback server)")  # fmt: skip


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("serve", help="run the WebSocket/HTTP server")
    s.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=None, help="port to listen on (default 8000)")
    s.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default cpu")
    s.add_argument("--redis-url", default=None, help="phrase and embedding caches in Redis")
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


def _say_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    y = sub.add_parser(
        "say", help="speak TEXT through a running server, to a file, stdout or the speakers",
        description="Speak TEXT with a running server (its WebSocket; start one with "
        "'emostream serve') and write the audio as it arrives: to -o FILE (WAV, or raw PCM "
        "for .pcm/.raw), to stdout when it is piped (-o - forces it), or to the speakers "
        "(--play). With no --voice the text's language picks one: the server's default for "
        "English, the catalogue's Mandarin default for Mandarin.",
    )  # fmt: skip
    y.add_argument("text", help="what to say ('-': read it from stdin); {word|reading} says how "
                   "a word is read: {行|hang2} pinyin, {Nguyen|/wɪn/} IPA, {Nguyen|win} respelling")  # fmt: skip
    y.add_argument(
        "-o", "--output", default=None,
        help="write the audio here ('-': stdout); needed unless stdout is piped or --play",
    )  # fmt: skip
    y.add_argument("--format", choices=["wav", "pcm"], default=None,
                   help="WAV or raw s16le mono (default: pcm for .pcm/.raw, else wav)")  # fmt: skip
    y.add_argument("--play", action="store_true",
                   help="play it on the speakers as it arrives (aplay, paplay, pw-play or "
                   "ffplay, the first found)")  # fmt: skip
    _server_options(y)
    y.add_argument("--cache", action="store_true",
                   help="let the server replay this text from its phrase cache (replays come "
                   "at the pace of a listener; default: only with --play)")  # fmt: skip
    y.add_argument("--local", action="store_true",
                   help="synthesise in this process instead (loads every model: seconds; "
                   "no server needed)")  # fmt: skip
    y.add_argument(
        "--voice", default=None, help="a voice id or a clone's name (emostream voices lists them)"
    )
    y.add_argument(
        "--emotion",
        default=None,
        help="neutral, happy, sad, angry, surprised, disgusted or fearful",
    )
    y.add_argument("--intensity", type=float, default=None, help="of the emotion, 0-1")
    y.add_argument("--speed", type=float, default=None, help="0.5-2 (1: as the voice speaks)")
    y.add_argument("--pitch-shift", type=float, default=None, help="semitones, -12 to 12")
    y.add_argument("--energy", type=float, default=None, help="loudness, 0.5-2")
    y.add_argument("--sample-rate", type=int, default=24000, choices=RATES,
                   help="of the audio written (default 24000)")  # fmt: skip


def _catalog_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(
        "voices", help="the voices a running server offers, as a table",
        description="List a running server's voices (GET /v1/voices): the named voices and "
        "your clones; '*' marks each language's default.",
    )  # fmt: skip
    _server_options(v, http=True)
    v.add_argument("--lang", default=None, help="only this language (en, zh, en-GB, ...)")
    v.add_argument("--gender", choices=["female", "male"], default=None, help="only this gender")
    v.add_argument("--tag", action="append", default=None,
                   help="only voices with this tag (warm, bright, british, default, cloned, "
                   "...); repeat for several")  # fmt: skip
    v.add_argument(
        "--all",
        action="store_true",
        help="also the model's 600 corpus speakers (en_blend00, zh_cross042, ...)",
    )
    v.add_argument("--json", action="store_true", help="print the server's JSON as it is")
    c = sub.add_parser(
        "clone", help="clone a voice from a recording on a running server",
        description="Upload FILE (3-30 s of one person speaking plainly; WAV, FLAC, Ogg, MP3) "
        "to POST /v1/voices. The voice is usable at once, by its id or by NAME.",
    )  # fmt: skip
    c.add_argument("file", help="the recording")
    c.add_argument(
        "--name", required=True, help="what to call it (unique among your voices; usable as its id)"
    )
    _server_options(c, http=True)


def _keys_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    k = sub.add_parser("keys", help="API keys: keys add NAME --file PATH")
    ksub = k.add_subparsers(dest="keys_cmd", required=True)
    ka = ksub.add_parser("add", help="make a key, append its hash to the file, print the key")
    ka.add_argument("name", help="who the key is for (unique in the file)")
    ka.add_argument("--file", required=True, help="the keys file (created if missing)")


def _danmaku_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "danmaku", help="bridge: chat lines (stdin, a local socket, or a live stream's chat: "
        "Bilibili, Twitch) to a server",
        description="Read chat lines (JSON objects with text, priority, ttl_ms, id, user; or "
        "plain text) from stdin or a local socket, or a live stream's chat (--source), speak "
        "each as a 'line' on one WebSocket (or a chat model's reply to it: --reply-url), write "
        "the audio and log the server's events as JSON lines (docs/live.md).",
    )  # fmt: skip
    d.add_argument("--url", default=DEFAULT_URL, help=f"the server's WebSocket ({DEFAULT_URL})")
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
    d.add_argument("--sample-rate", type=int, default=None, choices=RATES,
                   help="of the audio written (default 24000; 48000 with --room and no audio "
                   "output)")  # fmt: skip
    d.add_argument(
        "--room", default=None, metavar="NAME",
        help="publish every line into this room too (opened with POST /v1/rooms; its /live "
        "link is logged): pages that listen to it, e.g. an OBS browser source, hear it",
    )  # fmt: skip
    d.add_argument("--events", default=None, help="append the event log here (default stderr)")
    d.add_argument(
        "--voice",
        default=None,
        help="every line's voice (default: by each line's language, as 'say')",
    )
    d.add_argument(
        "--voices", default=None, metavar="LANG=VOICE,...",
        help="a voice per language, e.g. en=af_heart,zh=zf_xiaoxiao: each line is cut where its "
        "language changes and each part spoken by its language's voice",
    )  # fmt: skip
    d.add_argument("--speed", type=float, default=None, help="0.5-2")
    d.add_argument("--emotion", default=None, help="neutral, happy, sad, ...")
    d.add_argument("--intensity", type=float, default=None, help="of the emotion, 0-1")
    d.add_argument("--pitch-shift", type=float, default=None, help="semitones, -12 to 12")
    d.add_argument("--energy", type=float, default=None, help="loudness, 0.5-2")
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
    add_live_arguments(d)  # --source, the chat rules, --reply-*: bridge/live_options.py


def _room_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "room", help="open a room (POST /v1/rooms) and print its /live link (OBS)",
        description="Open the room NAME (created if new, else as it is) and print the link of "
        "its /live page: add it to OBS as a browser source; publish with danmaku --room NAME.",
    )  # fmt: skip
    r.add_argument("name")
    r.add_argument("--url", default=DEFAULT_URL, help=f"the server's WebSocket ({DEFAULT_URL})")
    r.add_argument("--api-key", default=None, help="default: $EMOSTREAM_API_KEY")
    r.add_argument("--rotate", action="store_true", help="a new token (old links stop working)")


def parser() -> argparse.ArgumentParser:
    # `bench` is dispatched before argparse (main); the epilog keeps it in --help.
    p = argparse.ArgumentParser(
        prog="emostream",
        description="Streaming expressive TTS server",
        epilog=f"{BENCH_USAGE}: benchmarks (see emostream bench X --help)",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    _serve_parser(sub)
    _say_parser(sub)
    _catalog_parsers(sub)
    _keys_parser(sub)
    _danmaku_parser(sub)
    _room_parser(sub)
    return p


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
    args = parser().parse_args(argv)
    command = importlib.import_module(COMMANDS[args.cmd])
    return int(command.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
