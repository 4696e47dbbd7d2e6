"""Long-text soak: utterances of ``--chars`` characters (5,000: the default ``max_text_chars``)
one after another, then several at once, while the server's RSS is sampled from ``/proc``;
prints (and writes) JSON with the RSS after warm-up, after every utterance / round, its peak,
and each utterance's outcome.

    python -m loadtest.long_soak --serve --sequential 30 --rounds 3 --out FILE
    python -m loadtest.long_soak --url ws://127.0.0.1:8000/v1/stream --pid 1234

Texts take turns: prose (the load generator's replies, each text its own), ``"9:05 "`` and
``"1234567 "`` repeated (read out, 5,000 characters of those are 11-40 minutes of audio: the
server's ``max_utterance_audio_s`` cuts them). Every utterance is read to its ``done``. The
baseline is taken after ``--warmup`` utterances (one of each kind by default) and
``--settle-s`` of quiet; exit status 0 when every utterance got its ``done`` and the RSS
``--sample-delay-s`` after every utterance and round is within ``--rss-tolerance`` of the
baseline (the RSS at each ``done`` is reported beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loadtest.procstats import sample
from loadtest.soak import emit, host_info, start_server, stop_server
from loadtest.texts import REPLIES

KINDS = ("prose", "times", "digits")


def long_text(kind: str, index: int, chars: int) -> str:
    """A text of ``chars`` characters (cut at a space) of ``kind``; prose texts differ by
    ``index`` (the phrase cache never replays one)."""
    if kind == "prose":
        parts: list[str] = []
        k = index
        while sum(len(p) + 1 for p in parts) < chars:
            parts.append(REPLIES[k % len(REPLIES)])
            k += 1 + index % 3
        text = f"Reading number {index}. " + " ".join(parts)
    elif kind == "times":
        text = "9:05 " * (chars // 5 + 1)
    elif kind == "digits":
        text = "1234567 " * (chars // 8 + 1)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return text[:chars].rsplit(" ", 1)[0] if len(text) > chars else text


@dataclass
class Outcome:
    kind: str
    done: dict[str, Any] | None
    errors: list[str]
    audio_bytes: int
    wall_s: float

    def as_dict(self) -> dict[str, Any]:
        done = self.done or {}
        return {
            "kind": self.kind,
            "ok": self.done is not None,
            "audio_s": round(done.get("audio_ms", 0.0) / 1000.0, 1),
            "truncated": bool(done.get("truncated")),
            "errors": self.errors,
            "audio_kb": self.audio_bytes // 1024,
            "wall_s": round(self.wall_s, 1),
        }


async def speak(url: str, text: str, kind: str, *, timeout_s: float) -> Outcome:
    """One utterance read to its ``done`` (or what went wrong)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    t0 = time.monotonic()
    errors: list[str] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async with connect(url, compression=None, max_size=None) as ws:
                await ws.send(json.dumps({"type": "start"}))
                await ws.send(json.dumps({"type": "text", "text": text}))
                await ws.send(json.dumps({"type": "end"}))
                async for msg in ws:
                    if isinstance(msg, bytes):
                        size += len(msg)
                        continue
                    event = json.loads(msg)
                    if event["type"] == "error":
                        errors.append(str(event.get("code")))
                    elif event["type"] == "done":
                        return Outcome(kind, event, errors, size, time.monotonic() - t0)
                errors.append("closed_before_done")
    except TimeoutError:
        errors.append("timeout")
    except (OSError, WebSocketException) as exc:
        errors.append(type(exc).__name__)
    return Outcome(kind, None, errors, size, time.monotonic() - t0)


class PeakWatch:
    """The server's highest RSS, sampled every ``every_s`` while it runs."""

    def __init__(self, pid: int, every_s: float = 0.5) -> None:
        self.pid = pid
        self.every_s = every_s
        self.peak = 0

    async def run(self) -> None:
        while True:
            self.peak = max(self.peak, sample(self.pid).rss_bytes)
            await asyncio.sleep(self.every_s)


def _mb(n: int) -> float:
    return round(n / 2**20, 1)


async def long_soak(
    url: str,
    pid: int,
    *,
    chars: int,
    warmup: int,
    sequential: int,
    rounds: int,
    at_once: int,
    settle_s: float,
    timeout_s: float,
    rss_tolerance: float,
    sample_delay_s: float = 2.0,
) -> dict[str, Any]:
    start_rss = sample(pid).rss_bytes
    watch = PeakWatch(pid)
    watcher = asyncio.create_task(watch.run())
    index = 0

    def next_text() -> tuple[str, str]:
        nonlocal index
        kind = KINDS[index % len(KINDS)]
        index += 1
        return kind, long_text(kind, index, chars)

    try:
        warm: list[Outcome] = []
        for _ in range(warmup):
            kind, text = next_text()
            warm.append(await speak(url, text, kind, timeout_s=timeout_s))
        await asyncio.sleep(settle_s)
        baseline = sample(pid).rss_bytes
        watch.peak = baseline
        runs: list[dict[str, Any]] = []
        for _ in range(sequential):
            kind, text = next_text()
            outcome = await speak(url, text, kind, timeout_s=timeout_s)
            at_done = sample(pid).rss_bytes
            await asyncio.sleep(sample_delay_s)
            runs.append(
                {**outcome.as_dict(), "rss_at_done_mb": _mb(at_done),
                 "rss_mb": _mb(sample(pid).rss_bytes)}
            )  # fmt: skip
        sequential_peak = watch.peak
        watch.peak = sample(pid).rss_bytes
        concurrent: list[dict[str, Any]] = []
        for _ in range(rounds):
            texts = [next_text() for _ in range(at_once)]
            outcomes = await asyncio.gather(
                *(speak(url, text, kind, timeout_s=timeout_s) for kind, text in texts)
            )
            at_done = sample(pid).rss_bytes
            await asyncio.sleep(sample_delay_s)
            concurrent.append(
                {
                    "utterances": [o.as_dict() for o in outcomes],
                    "rss_at_done_mb": _mb(at_done),
                    "rss_mb": _mb(sample(pid).rss_bytes),
                }
            )
        concurrent_peak = watch.peak
        await asyncio.sleep(settle_s)
        end = sample(pid).rss_bytes
    finally:
        watcher.cancel()
    after = [r["rss_mb"] for r in runs] + [c["rss_mb"] for c in concurrent]
    worst = max([*after, _mb(end)])
    every = runs + [u for c in concurrent for u in c["utterances"]]
    failed = [o for o in every if not o["ok"]]
    growth = (worst - _mb(baseline)) / _mb(baseline)
    return {
        "chars": chars,
        "rss_mb": {
            "start": _mb(start_rss),
            "baseline_after_warmup": _mb(baseline),
            "end": _mb(end),
            "highest_after_an_utterance_or_round": worst,
            "peak_sequential": _mb(sequential_peak),
            "peak_concurrent": _mb(concurrent_peak),
        },
        "warmup": [o.as_dict() for o in warm],
        "sequential": runs,
        "concurrent": concurrent,
        "verdict": {
            "rss_growth": round(growth, 4),
            "rss_tolerance": rss_tolerance,
            "failed": len(failed),
            "truncated": sum(1 for o in every if o["truncated"]),
            "ok": growth <= rss_tolerance and not failed,
        },
    }


def build_parser() -> argparse.ArgumentParser:
    doc = __doc__ or ""
    p = argparse.ArgumentParser(prog="python -m loadtest.long_soak", description=doc.split("\n")[0])
    p.add_argument("--url", help="ws://host:port/v1/stream of a running server (with --pid)")
    p.add_argument("--pid", type=int, help="the server's process id (read from /proc)")
    p.add_argument("--serve", action="store_true", help="start emostream serve here, stop it after")
    p.add_argument("--server-log", default=None, help="with --serve: where its output goes")
    p.add_argument("--chars", type=int, default=5000, help="characters per utterance")
    p.add_argument("--warmup", type=int, default=3, help="utterances before the baseline")
    p.add_argument("--sequential", type=int, default=30, help="utterances one after another")
    p.add_argument("--rounds", type=int, default=3, help="rounds of --at-once utterances")
    p.add_argument("--at-once", type=int, default=4)
    p.add_argument("--settle-s", type=float, default=6.0, help="quiet before baseline and end")
    p.add_argument(
        "--sample-delay-s", type=float, default=2.0,
        help="the RSS compared is sampled this long after each done (a model call of a cut "
        "utterance may still run; the heap trim follows the done); the one at done is kept too",
    )  # fmt: skip
    p.add_argument("--timeout-s", type=float, default=900.0, help="per utterance")
    p.add_argument("--rss-tolerance", type=float, default=0.20)
    p.add_argument("--out", default=None, help="also write the JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    proc: subprocess.Popen[bytes] | None = None
    if args.serve:
        proc, url = start_server(args.server_log)
        pid = proc.pid
    elif args.url and args.pid:
        url, pid = args.url, args.pid
    else:
        print("give --url and --pid, or --serve", file=sys.stderr)
        return 2
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    try:
        report = asyncio.run(
            long_soak(
                url, pid, chars=args.chars, warmup=args.warmup, sequential=args.sequential,
                rounds=args.rounds, at_once=args.at_once, settle_s=args.settle_s,
                timeout_s=args.timeout_s, rss_tolerance=args.rss_tolerance,
                sample_delay_s=args.sample_delay_s,
            )
        )  # fmt: skip
    finally:
        exit_code = stop_server(proc) if proc is not None else None
    out = {
        "date": started,
        "command": shlex.join(["python", "-m", "loadtest.long_soak", *(argv or sys.argv[1:])]),
        "host": host_info(),
        "server": {
            "url": url,
            "pid": pid,
            "started_here": proc is not None,
            "exit_code": exit_code,
        },
        "wall_s": round(time.monotonic() - t0, 1),
        **report,
    }
    emit(out, args.out)
    return 0 if report["verdict"]["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
