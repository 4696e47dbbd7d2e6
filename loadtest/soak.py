"""Soak: many connect / start / cancel / disconnect cycles while the server's RSS, open fds and
threads are sampled from ``/proc/<pid>``; prints (and writes) JSON with baseline vs end.

    python -m loadtest.soak --url ws://127.0.0.1:8000/v1/stream --pid 1234 --cycles 10000
    python -m loadtest.soak --serve --cycles 10000 --out bench/results/soak.json

``--serve`` starts ``python -m emostream serve`` on a free loopback port (its settings from the
environment) and stops it at the end. The baseline is taken after ``--warmup`` cycles (first
use loads lazily: thread pools, codec state, allocator arenas); the end figure after the last
cycle and ``--settle-s`` of quiet. Exit status 0 when every cycle ended as expected and the end
figures are back at the baseline (RSS within ``--rss-tolerance``), else 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from loadtest.procstats import ProcSample, compare, sample

TEXT = "Thanks for the follow, and welcome to the stream everyone."


@dataclass
class SoakTally:
    """Outcomes of cycles and the figures sampled along the way (sans-I/O)."""

    outcomes: Counter[str] = field(default_factory=Counter)
    samples: list[tuple[int, ProcSample]] = field(default_factory=list)
    baseline: ProcSample | None = None

    @property
    def cycles(self) -> int:
        return sum(self.outcomes.values())

    def record(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def note(self, figures: ProcSample, *, baseline: bool = False) -> None:
        self.samples.append((self.cycles, figures))
        if baseline:
            self.baseline = figures

    def report(self, end: ProcSample, *, rss_tolerance: float) -> dict[str, Any]:
        assert self.baseline is not None
        verdict = compare(self.baseline, end, rss_tolerance=rss_tolerance)
        failed = self.cycles - self.outcomes["ok"]
        verdict["cycles_failed"] = failed
        verdict["ok"] = verdict["ok"] and failed == 0
        return {
            "cycles": self.cycles,
            "outcomes": dict(sorted(self.outcomes.items())),
            "baseline": self.baseline.as_dict(),
            "end": end.as_dict(),
            "peak": {
                "rss_mb": round(max(s.rss_bytes for _, s in self.samples) / 2**20, 2),
                "fds": max(s.fds for _, s in self.samples),
                "threads": max(s.threads for _, s in self.samples),
            },
            "samples": [{"after_cycles": n, **s.as_dict()} for n, s in self.samples],
            "verdict": verdict,
        }


async def one_cycle(url: str, *, cancel_after: str, timeout_s: float) -> str:
    """connect, start, (wait for ``started`` or the first audio), cancel, read to ``done``,
    disconnect. Returns ``"ok"`` or what went wrong (an error code or exception name)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    try:
        async with asyncio.timeout(timeout_s):
            async with connect(url, compression=None, max_size=None) as ws:
                await ws.send(json.dumps({"type": "start"}))
                await ws.send(json.dumps({"type": "text", "text": TEXT}))
                await ws.send(json.dumps({"type": "end"}))
                cancelled = False
                async for msg in ws:
                    if isinstance(msg, bytes) or json.loads(msg)["type"] == "started":
                        if not cancelled and (cancel_after == "started" or isinstance(msg, bytes)):
                            await ws.send(json.dumps({"type": "cancel"}))
                            cancelled = True
                        continue
                    event = json.loads(msg)
                    if event["type"] == "error":
                        return str(event.get("code", "error"))
                    if event["type"] == "done":
                        return "ok"
                return "closed_before_done"
    except TimeoutError:
        return "timeout"
    except (OSError, WebSocketException) as exc:
        return type(exc).__name__


async def soak(
    url: str,
    pid: int,
    *,
    cycles: int,
    concurrency: int,
    warmup: int,
    sample_every: int,
    settle_s: float,
    cancel_after: str,
    timeout_s: float,
    rss_tolerance: float,
) -> dict[str, Any]:
    tally = SoakTally()
    tally.note(sample(pid))  # before anything

    async def run_phase(n: int) -> None:
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                tally.record(await one_cycle(url, cancel_after=cancel_after, timeout_s=timeout_s))
                if tally.cycles % sample_every == 0:
                    tally.note(sample(pid))

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    # Both figures compared are taken with no client connected, after settle_s of quiet.
    if warmup:
        await run_phase(warmup)
        warm_outcomes = dict(tally.outcomes)
        tally.outcomes.clear()
        await asyncio.sleep(settle_s)
    else:
        warm_outcomes = {}
    tally.note(sample(pid), baseline=True)
    t0 = time.monotonic()
    await run_phase(cycles)
    wall = time.monotonic() - t0
    await asyncio.sleep(settle_s)
    end = sample(pid)
    tally.note(end)
    report = tally.report(end, rss_tolerance=rss_tolerance)
    report["warmup_outcomes"] = warm_outcomes
    report["wall_s"] = round(wall, 1)
    report["cycles_per_s"] = round(report["cycles"] / wall, 1) if wall > 0 else None
    return report


# -- the server, when --serve ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    log_path: str | None, timeout_s: float = 120
) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    sink = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"emostream serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return proc, f"ws://127.0.0.1:{port}/v1/stream"
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("emostream serve did not start")


def stop_server(proc: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM a server started by :func:`start_server`; its exit code (None if it had to be
    killed after 60 s)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def emit(out: dict[str, Any], path: str | None) -> None:
    """Print a soak's JSON report, and write it to ``path`` when given."""
    text = json.dumps(out, indent=2)
    print(text)
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtest.soak", description=__doc__.split("\n")[0])
    p.add_argument("--url", help="ws://host:port/v1/stream of a running server (with --pid)")
    p.add_argument("--pid", type=int, help="the server's process id (read from /proc)")
    p.add_argument("--serve", action="store_true", help="start emostream serve here, stop it after")
    p.add_argument("--server-log", default=None, help="with --serve: where its output goes")
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=4, help="cycles in flight at once")
    p.add_argument("--warmup", type=int, default=200, help="cycles before the baseline")
    p.add_argument("--sample-every", type=int, default=500, help="cycles between samples")
    p.add_argument("--settle-s", type=float, default=2.0)
    p.add_argument("--cancel-after", choices=["started", "audio"], default="audio")
    p.add_argument("--timeout-s", type=float, default=30.0, help="per cycle")
    p.add_argument("--rss-tolerance", type=float, default=0.05)
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
    try:
        report = asyncio.run(
            soak(
                url, pid, cycles=args.cycles, concurrency=args.concurrency, warmup=args.warmup,
                sample_every=args.sample_every, settle_s=args.settle_s,
                cancel_after=args.cancel_after, timeout_s=args.timeout_s,
                rss_tolerance=args.rss_tolerance,
            )
        )  # fmt: skip
    finally:
        if proc is not None:
            stop_server(proc)
    out = {
        "date": started,
        "command": shlex.join(["python", "-m", "loadtest.soak", *(argv or sys.argv[1:])]),
        "host": host_info(),
        "server": {"url": url, "pid": pid, "started_here": proc is not None},
        **report,
    }
    emit(out, args.out)
    return 0 if report["verdict"]["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
