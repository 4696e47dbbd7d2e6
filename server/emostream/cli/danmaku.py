"""``emostream danmaku``: chat lines from stdin or a local socket, spoken as ``line`` messages."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


def run(args: argparse.Namespace) -> int:
    """``emostream danmaku``: chat lines from stdin or a local socket → ``line`` messages."""
    from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge, EventLog, voices_option
    from emostream.bridge.lines import LineParser, Outbox
    from emostream.bridge.sinks import OutputFormat, codec_for, format_for_path
    from emostream.voices.stock_voices import CLIENT_VOICES

    if args.output is None and not sys.stdout.isatty():
        args.output = "-"
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
        if args.voices:
            fields["voices"] = voices_option(args.voices)
        parser = LineParser(ttl_ms=args.ttl_ms, max_chars=args.max_chars, template=args.template)
    except ValueError as exc:
        print(f"emostream danmaku: {exc}", file=sys.stderr)
        return 2
    options = BridgeOptions(
        url=args.url, api_key=args.api_key or os.environ.get("EMOSTREAM_API_KEY") or None,
        fields=fields, listen=args.listen, output_format=fmt, drain=not args.no_drain,
        pace_lead_s=args.pace_lead_s if args.pace_lead_s and args.pace_lead_s > 0 else None,
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
            Outbox(fields=fields, max_held=args.max_held,
                   language_voices={} if args.voice else CLIENT_VOICES),
            emit=EventLog(events), audio=audio,
        )  # fmt: skip
        return asyncio.run(bridge.run())
    finally:
        if audio is not None and audio is not sys.stdout.buffer:
            audio.close()
        if events is not sys.stderr:
            events.close()
