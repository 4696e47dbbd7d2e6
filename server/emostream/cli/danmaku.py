"""``emostream danmaku``: chat lines from stdin, a local socket or a live stream's chat
(``--source``), spoken as ``line`` messages or answered by a chat model (``--reply-url``)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


def run(args: argparse.Namespace) -> int:
    """``emostream danmaku``: chat lines from stdin or a local socket → ``line`` messages."""
    from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge, EventLog, voices_option
    from emostream.bridge.lines import LineParser
    from emostream.bridge.live_options import live_setup
    from emostream.bridge.sinks import OutputFormat, codec_for, format_for_path
    from emostream.cli.room import room_opened
    from emostream.voices.stock_voices import CLIENT_VOICES

    if args.output is None and not sys.stdout.isatty():
        args.output = "-"
    audio_out = args.output not in (None, "none")
    # A room with no audio here: Opus at 48 kHz, what its listeners' pages decode best.
    fmt: OutputFormat = args.format or ("ogg" if args.room and not audio_out else
                                        format_for_path(args.output))  # fmt: skip
    rate = args.sample_rate or (48000 if args.room and not audio_out else 24000)
    fields: dict[str, object] = {"format": {"codec": codec_for(fmt), "sample_rate": rate}}
    controls = {
        "voice": args.voice, "speed": args.speed, "emotion": args.emotion,
        "intensity": args.intensity, "pitch_shift": args.pitch_shift, "energy": args.energy,
    }  # fmt: skip
    fields.update({k: v for k, v in controls.items() if v is not None})
    if args.no_cache:
        fields["cache"] = False
    api_key = args.api_key or os.environ.get("EMOSTREAM_API_KEY") or None
    try:  # every option checked before the room is opened
        if args.voices:
            fields["voices"] = voices_option(args.voices)
        parser = LineParser(ttl_ms=args.ttl_ms, max_chars=args.max_chars, template=args.template)
        live = live_setup(args)  # --source, the chat rules, --reply-*: bridge/live_options.py
    except ValueError as exc:
        print(f"emostream danmaku: {exc}", file=sys.stderr)
        return 2
    if args.room:
        if not room_opened(args.url, args.room, api_key, EventLog(sys.stderr)):
            return 2
        fields["room"] = args.room
    options = BridgeOptions(
        url=args.url, api_key=api_key,
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
            options, parser,
            live.outbox(fields, args.max_held, {} if args.voice else CLIENT_VOICES),
            emit=EventLog(events), audio=audio, **live.bridge_args(),
        )  # fmt: skip
        return asyncio.run(bridge.run())
    finally:
        if audio is not None and audio is not sys.stdout.buffer:
            audio.close()
        if events is not sys.stderr:
            events.close()
