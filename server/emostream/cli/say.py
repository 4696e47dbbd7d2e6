"""``emostream say TEXT``: through a running server's WebSocket (docs/protocol.md), the audio
written as it arrives; ``--local`` synthesises in this process instead (every model loaded).

Output: ``-o FILE`` (WAV, or raw s16le for ``.pcm``/``.raw``), stdout when it is piped (or
``-o -``), the speakers with ``--play``; with none of them (stdout a terminal) ``say`` refuses,
rather than write a file nobody asked for. With no ``--voice`` the text's language picks one
(:func:`emostream.voices.stock_voices.client_voice`). Without ``--play`` (or ``--cache``) the
start asks for live synthesis (``"cache": false``): the server's phrase cache replays a reply at
the pace of a listener, and a file need not wait for that.

Exit status: 0 spoken; 1 the server could not be reached; 2 refused (bad option, unknown
voice, busy: the server's error code and message are printed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from emostream.cli.audio_out import AudioOut, open_output
from emostream.cli.client import CONTROLS, api_key, ws_url
from emostream.voices.stock_voices import client_voice

NO_OUTPUT = (
    "emostream say: where should the audio go? -o FILE (WAV; .pcm/.raw for raw PCM), "
    "-o - or a pipe for stdout, or --play for the speakers"
)


@contextmanager
def _closing(get: Callable[[], AudioOut | None]) -> Iterator[None]:
    try:
        yield
    finally:
        out = get()
        if out is not None:
            out.close()


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        print("emostream say: nothing to say", file=sys.stderr)
        return 2
    if args.output is None and not args.play:
        if sys.stdout.isatty():
            print(NO_OUTPUT, file=sys.stderr)
            return 2
        args.output = "-"
    if args.local:
        from emostream.cli.say_local import run_local

        return run_local(args, text)
    start = start_message(args, text)

    def opener() -> AudioOut:  # once the server has taken the start: nothing written before
        return open_output(args.output, fmt=args.format, rate=args.sample_rate, play=args.play)

    return _speak(ws_url(args.url), api_key(args.api_key), start, text, opener)


def start_message(args: argparse.Namespace, text: str) -> dict[str, Any]:
    """The ``start`` ``say`` sends: PCM at the rate asked, the voice (or its text's language's),
    the controls given, and live synthesis unless the audio is played or ``--cache``."""
    start: dict[str, Any] = {
        "type": "start",
        "format": {"codec": "pcm_s16le", "sample_rate": args.sample_rate},
    }
    if not (args.cache or args.play):
        # A replay from the phrase cache is paced to real time (for a listener); a file is
        # written as fast as the voice is made.
        start["cache"] = False
    voice = args.voice or client_voice(text)
    if voice:
        start["voice"] = voice
    start.update({k: getattr(args, k) for k in CONTROLS if getattr(args, k) is not None})
    return start


def _speak(url: str, key: str | None, start: dict[str, Any], text: str,
           opener: Callable[[], AudioOut]) -> int:  # fmt: skip
    from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI
    from websockets.sync.client import connect

    began = time.monotonic()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        ws = connect(url, additional_headers=headers, compression=None, max_size=None,
                     open_timeout=10)  # fmt: skip
    except InvalidStatus as exc:
        status = exc.response.status_code
        print(f"emostream say: {url} refused the connection ({status}"
              f"{': check --api-key' if status in (401, 403) else ''})", file=sys.stderr)  # fmt: skip
        return 1
    except (OSError, InvalidURI, InvalidHandshake, TimeoutError) as exc:
        print(f"emostream say: cannot reach {url} ({exc}); start a server (emostream serve) "
              "or use --local", file=sys.stderr)  # fmt: skip
        return 1
    audio_bytes, first_ms, spoken = 0, None, ""
    out: AudioOut | None = None
    with ws, _closing(lambda: out):
        ws.send(json.dumps(start))
        ws.send(json.dumps({"type": "text", "text": text}))
        ws.send(json.dumps({"type": "end"}))
        for message in ws:
            if isinstance(message, bytes):
                if first_ms is None:
                    first_ms = (time.monotonic() - began) * 1000
                if out is not None:
                    out.write(message)
                audio_bytes += len(message)
                continue
            event = json.loads(message)
            kind = event.get("type")
            if kind == "started":
                spoken = str(event.get("voice"))
                try:
                    out = opener()
                except OSError as exc:
                    print(f"emostream say: {exc}", file=sys.stderr)
                    return 2
            elif kind == "error":
                print(f"emostream say: {event.get('code')}: {event.get('message')}",
                      file=sys.stderr)  # fmt: skip
                if out is None:  # the start was refused: nothing will be spoken
                    return 2
            elif kind == "done":
                break
    seconds = audio_bytes / 2 / start["format"]["sample_rate"]
    first = f", first audio {first_ms:.0f} ms" if first_ms is not None else ""
    done_ms = (time.monotonic() - began) * 1000
    print(f"{seconds:.2f} s of audio with {spoken}{first}, all of it in {done_ms:.0f} ms",
          file=sys.stderr)  # fmt: skip
    return 0
