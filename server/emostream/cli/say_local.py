"""``emostream say --local``: synthesise in this process, with no server (every model is loaded
first: seconds). Stock voices only (a clone lives in a server's registry)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from emostream.cli.audio_out import open_output
from emostream.cli.client import CONTROLS
from emostream.voices.stock_voices import client_voice


def run_local(args: argparse.Namespace, text: str) -> int:
    from emostream.config import Settings
    from emostream.stream.oneshot import synthesize
    from emostream.text.frontend import OverrideRefused
    from emostream.text.pron.reader import PronunciationSetup
    from emostream.transport.messages import ProtocolError, parse_controls
    from emostream.voices.base import UnsupportedControl, check_controls
    from emostream.voices.catalog import load_catalog
    from emostream.voices.names import closest, unknown_voice_message

    settings = Settings.from_env()
    catalog = load_catalog(settings)
    voice_id = args.voice or client_voice(text) or catalog.default_for(settings.default_voice)
    voice = catalog.get(voice_id)
    if voice is None:
        ids = [i.id for i in catalog.infos()]
        print(f"emostream say: {unknown_voice_message(voice_id, closest(voice_id, ids))}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        controls = parse_controls({k: getattr(args, k) for k in CONTROLS})
        check_controls(voice.info, controls)
    except (ProtocolError, UnsupportedControl) as exc:
        print(f"emostream say: {exc}", file=sys.stderr)
        return 2
    # {word|reading} overrides, as the server reads them (docs/protocol.md, "Pronunciation")
    setup, _ = PronunciationSetup().for_voice(voice.info.id, voice.info.pronunciation)
    try:
        pcm = asyncio.run(synthesize(voice, text, controls, sample_rate=args.sample_rate,
                                     pronunciation=setup))  # fmt: skip
    except OverrideRefused as exc:
        print(f"emostream say: {exc.problem.code}: {exc.problem.message}", file=sys.stderr)
        return 2
    try:
        out = open_output(args.output, fmt=args.format, rate=args.sample_rate, play=args.play)
    except OSError as exc:
        print(f"emostream say: {exc}", file=sys.stderr)
        return 2
    try:
        out.write(pcm.tobytes())
    finally:
        out.close()
    print(f"{len(pcm) / args.sample_rate:.2f} s of audio with {voice_id}", file=sys.stderr)
    return 0
