"""First audio of the danmaku bridge's reply step: a chat line → a chat model's streamed reply
→ spoken, timed from the reply's first token to its first audio.

    PYTHONPATH=server .venv/bin/python bench/reply_first_audio.py \\
        --url ws://127.0.0.1:8000/v1/stream [--token-ms 30] [--voice af_heart] \\
        [-o bench/results/2026-12-07-cpu2-reply-first-audio.json]

The bridge (``emostream.bridge``: a ``DanmakuBridge`` with a ``ReplyOutbox``, in this process)
answers 24 chat lines, one at a time, against a local OpenAI-compatible endpoint (in this
process, on loopback, its own thread) that streams a written reply as a chat model does: the
emotion tag as three tokens (``[``, ``happy``, ``]``), then one word per token (with its
leading space), a token every ``--token-ms``. The replies (written for this benchmark, in no
test set) have no punctuation in their first words. Each line is sent once the previous
reply has played out, so each reply starts on an idle server. ``--warmup`` replies (default
one) go first and are reported apart: a fresh server's first synthesis is slow, and the
bridge's first reply waits for ``started`` to learn whether the voice takes emotion.

Timed on this process's monotonic clock: ``first_token``: when the endpoint wrote the reply's
first token (the ``[`` of its tag) to its socket; ``first_word``: when it wrote the first
word after the tag; ``first_audio``: when the bridge received the reply's first audio frame
from the server (its ``on_audio``). Reported: p50/p95 of first audio after the first token
and after the first word, and the bridge's own figure (its ``reply`` event's
``first_audio_ms``: from the first piece it read). ``cache: false``: no phrase-cache replay.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EMOTIONS = ["happy", "neutral", "surprised", "sad", "happy", "angry"]
REPLIES = [
    "Thank you so much for the roses you are way too kind to me tonight",
    "The game we are playing right now is an old puzzle game from the nineties",
    "No way you actually beat that level on your first try without any help",
    "I am really sorry to hear that your cat is sick I hope she gets better soon",
    "Welcome back to the stream it has been a while since we last saw you here",
    "Please stop spamming the same message over and over because it ruins the chat",
    "We will probably play for another hour or so before I have to go and eat",
    "My favourite food is still the noodle soup my grandmother used to make at home",
    "Wow that was a huge raid thank you all for coming over from the other channel",
    "It is a shame the tournament got cancelled because everyone had trained so hard",
    "Yes the microphone is new and I am still getting used to how it sounds",
    "Honestly that boss fight made me so angry I almost threw my controller",
    "Thanks for the super chat I will try to sing a song at the end of the stream",
    "The next stream will most likely be on Friday evening around eight o clock",
    "I did not expect so many people to show up tonight this is amazing",
    "Losing all that progress to a crash was really painful for me to watch",
    "You can find the schedule and the rules of the chat in the panels below",
    "That is the funniest thing anyone has said in this chat all week long",
    "The weather here has been cold and grey for days so I am staying inside",
    "Whoever keeps asking for my address needs to stop that right now please",
    "Good morning to everyone watching from the other side of the world",
    "I think the best way to get better at this game is to practise every day",
    "Congratulations on your new job that is really great news to hear today",
    "Sorry the stream was late today the internet went down for an hour",
]
RATE = 24000


def tokens_for(i: int) -> list[str]:
    words = REPLIES[i].split(" ")
    return ["[", EMOTIONS[i % len(EMOTIONS)], "]"] + [" " + w for w in words] + ["."]


class Endpoint:
    """An OpenAI-compatible streaming endpoint; ``sent[prompt]``: when each token went out."""

    def __init__(self, token_s: float) -> None:
        self.token_s = token_s
        self.sent: dict[str, list[float]] = {}
        self.port = 0
        self._server: Any = None

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import StreamingResponse
        from starlette.routing import Route

        async def complete(request: Request) -> StreamingResponse:
            body = await request.json()
            prompt = body["messages"][-1]["content"]
            index = int(prompt.rsplit("#", 1)[1].split(" ")[0])
            return StreamingResponse(self.stream(prompt, index), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])

    async def stream(self, prompt: str, index: int) -> AsyncIterator[str]:
        times = self.sent.setdefault(prompt, [])
        for k, tok in enumerate(tokens_for(index)):
            if k:
                await asyncio.sleep(self.token_s)
            chunk = {"object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {"content": tok}}]}  # fmt: skip
            times.append(time.monotonic())
            yield f"data: {json.dumps(chunk)}\n\n"
        yield "data: [DONE]\n\n"

    def start(self) -> None:
        import socket

        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port, loop="asyncio",
                                log_level="warning", lifespan="off")  # fmt: skip
        self._server = uvicorn.Server(config)
        threading.Thread(target=self._server.run, daemon=True).start()
        while not self._server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(pct(values, 0.5), 1), "p95": round(pct(values, 0.95), 1),
            "min": round(min(values), 1), "max": round(max(values), 1),
            "n": len(values)}  # fmt: skip


async def measure(a: argparse.Namespace) -> dict[str, Any]:
    from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge
    from emostream.bridge.lines import ChatLine, LineParser
    from emostream.bridge.reply.client import ReplyOptions
    from emostream.bridge.reply.outbox import ReplyOutbox

    endpoint = Endpoint(a.token_ms / 1000.0)
    endpoint.start()
    fields: dict[str, Any] = {"format": {"codec": "pcm_s16le", "sample_rate": RATE},
                              "cache": False}  # fmt: skip
    if a.voice:
        fields["voice"] = a.voice
    events: list[dict[str, Any]] = []
    outbox = ReplyOutbox(fields=fields)
    first_audio: dict[str, float] = {}
    on_audio = outbox.on_audio

    def timed_on_audio(nbytes: int, now: float | None = None) -> str | None:
        line_id = on_audio(nbytes, now)
        if line_id is not None and line_id not in first_audio:
            first_audio[line_id] = time.monotonic()
        return line_id

    outbox.on_audio = timed_on_audio  # type: ignore[method-assign]
    reply = ReplyOptions(url=f"http://127.0.0.1:{endpoint.port}/v1", model="bench", history=0)
    bridge = DanmakuBridge(
        BridgeOptions(url=a.url, fields=fields, pace_lead_s=1.0), LineParser(), outbox,
        emit=events.append, audio=io.BytesIO(), reply=reply,
    )  # fmt: skip
    stdin = os.pipe()  # no stdin lines: the bench feeds the outbox itself
    task = asyncio.create_task(bridge.run(stdin=os.fdopen(stdin[0], "rb")))
    rows: list[dict[str, Any]] = []
    warm: list[dict[str, Any]] = []
    try:
        for i in range(-a.warmup, a.n):  # negative: warm-up replies, not counted
            prompt = f"viewer: question #{i % len(REPLIES)}" + (" (warm-up)" if i < 0 else "")
            line = ChatLine(f"q{i}", f"question {i}", 0, 60000.0, "viewer", prompt=prompt)
            if i < 0:
                line = ChatLine(f"w{-i}", "warm-up", 0, 60000.0, "viewer", prompt=prompt)
            events.extend(outbox.add(line, time.monotonic()))
            bridge.changed()
            async with asyncio.timeout(60):
                while not any(
                    e.get("type") == "reply"
                    and e.get("id") == line.id
                    and e.get("event") in ("spoken", "failed")
                    for e in events
                ):
                    await asyncio.sleep(0.01)  # fmt: skip
                while bridge.playout.ahead_s(time.monotonic()) > 0:
                    await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # a pause between replies, as between chat lines
            spoken = next(e for e in events if e.get("type") == "reply" and e.get("id") == line.id)
            sent = endpoint.sent[prompt]
            row = {
                "id": line.id, "event": spoken["event"], "emotion": spoken.get("emotion"),
                "first_audio_from_first_token_ms": round(1000 * (first_audio[line.id] - sent[0]), 1),
                "first_audio_from_first_word_ms": round(1000 * (first_audio[line.id] - sent[3]), 1),
                "bridge_first_audio_ms": spoken.get("first_audio_ms"),
                "tokens_before_first_audio": sum(1 for t in sent if t < first_audio[line.id]),
            }  # fmt: skip
            print(json.dumps(row), file=sys.stderr)
            (warm if i < 0 else rows).append(row)
    finally:
        os.close(stdin[1])
        bridge.stop_now.set()
        bridge.end_of_input()
        await asyncio.wait_for(task, 30)
        endpoint.stop()
    warnings = [e for e in events if e.get("type") == "reply" and e.get("event") == "warning"]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "bench_commit": git_commit(),
        "host": {
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "loadavg_1m_start": a.load_start,
            "loadavg_1m_end": round(os.getloadavg()[0], 2),
        },
        "url": a.url,
        "voice": a.voice or "(server default)",
        "token_ms": a.token_ms,
        "tokens": "the tag as '[', emotion, ']'; then one word per token with its leading space",
        "first_audio_from_first_token_ms": summary(
            [r["first_audio_from_first_token_ms"] for r in rows]
        ),
        "first_audio_from_first_word_ms": summary(
            [r["first_audio_from_first_word_ms"] for r in rows]
        ),
        "bridge_first_audio_ms": summary([r["bridge_first_audio_ms"] for r in rows]),
        "warnings": warnings,
        "warmup": warm,
        "replies": rows,
    }


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).parent)  # fmt: skip
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream")
    p.add_argument("--voice", default=None, help="default: the server's")
    p.add_argument("--token-ms", type=float, default=30.0, help="the endpoint's time per token")
    p.add_argument("-n", type=int, default=len(REPLIES), help="replies (at most 24)")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="replies first, not counted (the server's first synthesis is cold)",
    )
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    a.n = min(a.n, len(REPLIES))
    a.load_start = round(os.getloadavg()[0], 2)
    report = asyncio.run(measure(a))
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    keys = ("first_audio_from_first_token_ms", "first_audio_from_first_word_ms",
            "bridge_first_audio_ms")  # fmt: skip
    print(json.dumps({k: report[k] for k in keys}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
