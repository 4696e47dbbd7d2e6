"""``python -m loadtest``: hold N streams against a loopback server; report and plot.

Modes: one level (default), ``--sweep 1,2,4,8`` (several levels), ``--find-max``
(doubling then bisecting until p95 first audio passes ``--p95-bound-ms`` or underruns
or errors appear). The level is the number of streams (``steady``), arrivals per second
(``poisson``), the burst size (``bursts``: that many utterances at once, each on its own
pooled connection) or the lines per burst (``danmaku``: ``line`` messages on one connection
per room, checked for TTL, backlog bound and accounting; see ``loadtest.danmaku``).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import math
import os
import platform
import random
import shlex
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loadtest.client import ClientConfig, LevelResult, run_open, run_steady, steady_worker
from loadtest.danmaku import danmaku_summary
from loadtest.monitor import ServerMonitor
from loadtest.report import Targets, build_report, is_good
from loadtest.rooms import DanmakuConfig, run_danmaku
from loadtest.schedule import burst_arrivals, poisson_arrivals
from loadtest.search import MaxSearch
from loadtest.stats import Histogram

log = logging.getLogger("loadtest")
X_LABELS = {
    "steady": "concurrent streams (closed loop)",
    "poisson": "arrivals per second (open loop, Poisson)",
    "bursts": "burst size (replies at once)",
    "danmaku": "lines per burst (line messages at once, per room)",
}


def is_loopback_url(url: str) -> bool:
    """Only loopback targets: ``localhost``, 127.0.0.0/8 or ::1, over ws:// or wss://."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        return False
    host = parts.hostname
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal non-negative shares (larger first)."""
    parts = max(1, parts)
    base, rest = divmod(total, parts)
    return [base + (1 if i < rest else 0) for i in range(parts)]


def describe_device() -> dict[str, Any]:
    """What the numbers were measured on (CPU model, cores, load, GPU if any)."""
    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    desc: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        desc["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        if gpu.returncode == 0 and gpu.stdout.strip():
            desc["gpus"] = gpu.stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        pass
    return desc


def metrics_url_for(ws_url: str) -> str:
    parts = urlsplit(ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    return f"{scheme}://{parts.netloc}/metrics"


async def run_level(args: argparse.Namespace, cfg: ClientConfig, level: float) -> dict[str, Any]:
    """Run one load level and build its report."""
    pattern = args.pattern
    monitor = ServerMonitor(pid=args.server_pid, metrics_url=args.metrics_url)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    danmaku: dict[str, Any] | None = None
    async with monitor:
        if pattern == "danmaku":
            dm = await run_danmaku(cfg, _danmaku_config(args, int(level)))
            result = dm.level
            danmaku = danmaku_summary(dm.ledgers, queue_max=args.queue_max)
        elif pattern == "steady":
            n = int(level)
            result = await _steady(args, cfg, n)
        else:
            rng = random.Random(args.seed)
            if pattern == "poisson":
                arrivals = poisson_arrivals(
                    rate_hz=level, duration_s=args.duration, rng=rng, max_count=args.max_arrivals
                )
            else:
                arrivals = burst_arrivals(
                    burst_size=int(level), interval_s=args.burst_interval,
                    duration_s=args.duration, spread_s=args.burst_spread_ms / 1000.0, rng=rng,
                    max_count=args.max_arrivals,
                )  # fmt: skip
            result = await run_open(cfg, arrivals=arrivals, max_connections=args.max_connections)
    extra = {
        "level": level,
        "pattern": pattern,
        "client": {
            "loop_lag_ms": result.loop_lag.summary(),
            "connect_failures": result.connect_failures,
            "peak_inflight": result.peak_inflight,
            "procs": args.procs,
            "loadavg_1min_before": round(load_before, 2) if load_before is not None else None,
        },
        "server": monitor.summary(),
    }
    lag_p99 = result.loop_lag.quantile(0.99)
    if not math.isnan(lag_p99) and lag_p99 > args.client_lag_warn_ms:
        extra["warnings"] = [
            f"load generator event loop lag p99 {lag_p99:.1f} ms: figures include client delay"
        ]
    report = build_report(result.records, wall_s=result.wall_s, concurrency=int(level), extra=extra)
    report["good"] = is_good(report, _targets(args))
    if danmaku is not None:
        cached_p95 = danmaku["first_audio_ms"]["cached"]["p95"]
        danmaku["cached_first_audio_goal"] = {
            "p95_ms_max": args.cached_p95_bound_ms,
            "ok": cached_p95 is not None and cached_p95 <= args.cached_p95_bound_ms,
        }
        report["danmaku"] = danmaku
        report["good"] = bool(
            report["good"] and danmaku["ok"] and danmaku["cached_first_audio_goal"]["ok"]
        )
    return report


def _danmaku_config(args: argparse.Namespace, burst_size: int) -> DanmakuConfig:
    return DanmakuConfig(
        rooms=args.rooms, burst_size=burst_size, interval_s=args.burst_interval,
        duration_s=args.duration, spread_s=args.burst_spread_ms / 1000.0,
        ttl_ms=args.line_ttl_ms, repeat_fraction=args.repeat_fraction,
        priority_fraction=args.priority_fraction, drain_s=args.drain_s, seed=args.seed,
    )  # fmt: skip


async def _steady(args: argparse.Namespace, cfg: ClientConfig, n: int) -> LevelResult:
    kw: dict[str, Any] = {
        "duration_s": args.duration, "warmup": args.warmup, "ramp_s": args.ramp,
        "seed": args.seed,
    }  # fmt: skip
    procs = max(1, min(args.procs, n))
    if procs == 1:
        return await run_steady(cfg, streams=n, **kw)
    start_at = time.time() + args.prep_s + n / 200.0
    shares = split_evenly(n, procs)
    loop = asyncio.get_running_loop()
    first = 0
    jobs = []
    with ProcessPoolExecutor(max_workers=procs, mp_context=get_context("spawn")) as pool:
        for share in shares:
            job = {"cfg": cfg, "streams": share, "first_stream": first, "start_at_wall": start_at}
            jobs.append(loop.run_in_executor(pool, steady_worker, {**job, **kw}))
            first += share
        parts: list[LevelResult] = await asyncio.gather(*jobs)
    lag = Histogram()
    for p in parts:
        lag.merge(p.loop_lag)
    return LevelResult(
        records=[r for p in parts for r in p.records],
        wall_s=max(p.wall_s for p in parts),
        loop_lag=lag,
        connect_failures=sum(p.connect_failures for p in parts),
        peak_inflight=sum(p.peak_inflight for p in parts),
    )


def _targets(args: argparse.Namespace) -> Targets:
    return Targets(p95_first_audio_ms=args.p95_bound_ms, max_underruns_per_min=0.0,
                   max_error_rate=args.max_error_rate)  # fmt: skip


def _line(r: dict[str, Any]) -> str:
    fa, u = r["first_audio_ms"], r["underruns"]
    text = (
        f"level {r['level']:>6g}: first audio p50 {fa['p50']} p95 {fa['p95']} p99 {fa['p99']} ms"
        f" | underruns/min {u['per_stream_minute']} | audio/wall "
        f"{r['rtf']['aggregate_audio_s_per_wall_s']} | utts {r['utterances']}"
        f" errors {r['errors'] or '-'} | {'good' if r['good'] else 'BAD'}"
    )
    adm = r.get("admission")
    if adm and adm["refused"]:
        t = adm["time_to_refusal_ms"]
        text += (
            f"\n    admission: started {adm['started']} refused {adm['refused']}"
            f" {adm['refused_by_code']} | start -> refusal p50 {t['p50']} p95 {t['p95']} ms"
            f" | retry_after_ms p50 {adm['retry_after_ms']['p50']}"
        )
    dm = r.get("danmaku")
    if dm:
        c, fa2 = dm["checks"], dm["first_audio_ms"]
        acc = c["accounting"]
        # Reports before 2026-12-03's pacing judged "ttl" at the server ("ttl_started" now).
        started = c.get("ttl_started", c["ttl"])
        heard = dm["listener"]["lines_heard_past_ttl"]
        text += (
            f"\n    danmaku: sent {acc['sent']} spoken {acc['spoken']} dropped {acc['dropped']}"
            f" refused {acc['refused'] or '-'} unreported {acc['unreported']}"
            f" [{'ok' if c['accounting']['ok'] else 'FAIL'}]"
            f" | heard past TTL {heard} [{'ok' if heard == 0 else 'FAIL'}]"
            f" started past TTL {started['lines_started_past_ttl']}"
            f" [{'ok' if started['ok'] else 'FAIL'}]"
            f" | max backlog {c['backlog']['max_depth']}/{c['backlog']['bound']}"
            f" [{'ok' if c['backlog']['ok'] else 'FAIL'}]"
            f" | underruns {c['underruns']['count']} [{'ok' if c['underruns']['ok'] else 'FAIL'}]"
            f"\n    first audio live p50 {fa2['live']['p50']} p95 {fa2['live']['p95']} ms"
            f" (n {fa2['live']['n']}), cached p50 {fa2['cached']['p50']} p95"
            f" {fa2['cached']['p95']} ms (n {fa2['cached']['n']}) [goal p95 <= "
            f"{dm['cached_first_audio_goal']['p95_ms_max']:g} ms: "
            f"{'ok' if dm['cached_first_audio_goal']['ok'] else 'FAIL'}]"
            f" | send -> heard p50 {dm['listener']['heard_delay_ms']['p50']}"
            f" p95 {dm['listener']['heard_delay_ms']['p95']} ms"
        )
    return text


async def _run(args: argparse.Namespace, cfg: ClientConfig) -> dict[str, Any]:
    levels: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    t_start = time.monotonic()

    def out_of_time() -> bool:
        left = args.max_total_s - (time.monotonic() - t_start)
        if left < args.duration + args.warmup * 5.0:
            log.warning("stopping: --max-total-s %.0f s would be exceeded", args.max_total_s)
            out["stopped_early"] = f"--max-total-s {args.max_total_s:g} reached"
            return True
        return False

    if args.find_max:
        search = MaxSearch(start=args.start, limit=args.max_level, resolution=args.resolution,
                           relative_resolution=args.relative_resolution)  # fmt: skip
        while (n := search.next_level()) is not None and not out_of_time():
            report = await run_level(args, cfg, float(n))
            levels.append(report)
            search.record(n, bool(report["good"]))
            log.info("%s", _line(report))
            await asyncio.sleep(args.settle_s)
        out["find_max"] = {
            "largest_good": search.best,
            "first_bad": search.first_bad,
            "tried": {str(k): v for k, v in sorted(search.tried.items())},
            "criteria": {
                "p95_first_audio_ms_max": args.p95_bound_ms,
                "underruns_per_stream_minute_max": 0,
                "error_rate_max": args.max_error_rate,
            },
        }
    else:
        values = [float(v) for v in args.sweep.split(",")] if args.sweep else [args.level]
        for level in values:
            if levels and out_of_time():
                break
            report = await run_level(args, cfg, level)
            levels.append(report)
            log.info("%s", _line(report))
            await asyncio.sleep(args.settle_s if level != values[-1] else 0)
    out["levels"] = sorted(levels, key=lambda r: float(r["level"]))
    return out


def plot_report(report: dict[str, Any], path: str) -> None:
    """Draw ``report`` (as written by this tool) to the PNG at ``path``."""
    from loadtest.plot import plot_levels

    device = report.get("device", {})
    what = report.get("label") or f"{device.get('cpu_model', '?')} ({device.get('nproc')} cores)"
    bound = report.get("find_max", {}).get("criteria", {}).get("p95_first_audio_ms_max")
    pattern = report["config"]["pattern"]
    if pattern == "danmaku" and not any("danmaku" in lv for lv in report["levels"]):
        pattern = "bursts"  # reports before 2026-12-03 called the bursts pattern danmaku
    plot_levels(
        report["levels"], path, x_label=X_LABELS[pattern],
        bound_ms=bound or report["config"].get("p95_bound_ms", 200.0),
        largest_good=report.get("find_max", {}).get("largest_good") or None,
        title=f"EmoStream load test: {what}, {report['date'][:10]}",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream", help="loopback only")
    p.add_argument(
        "--pattern", choices=["steady", "poisson", "bursts", "danmaku"], default="steady"
    )
    p.add_argument(
        "--level",
        "--streams",
        type=float,
        default=4.0,
        dest="level",
        help="streams (steady), arrivals/s (poisson), burst size (bursts) or lines per burst "
        "(danmaku)",
    )
    p.add_argument("--sweep", default="", help="comma-separated levels, e.g. 1,2,4,8")
    p.add_argument("--find-max", action="store_true", help="search the largest good level")
    p.add_argument("--start", type=int, default=1, help="find-max: first level")
    p.add_argument("--max-level", type=int, default=4096, help="find-max: upper limit")
    p.add_argument("--resolution", type=int, default=1, help="find-max: stop within this")
    p.add_argument(
        "--relative-resolution",
        type=float,
        default=0.1,
        help="find-max: ... or within this fraction of the good level",
    )
    p.add_argument(
        "--max-total-s",
        type=float,
        default=3600.0,
        help="sweep/find-max: start no level that would end past this",
    )
    p.add_argument("--p95-bound-ms", type=float, default=200.0)
    p.add_argument("--max-error-rate", type=float, default=0.0)
    p.add_argument("--duration", type=float, default=20.0, help="measured seconds per level")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured utterances per stream")
    p.add_argument("--ramp", type=float, default=3.0, help="steady: stagger starts over s")
    p.add_argument("--settle-s", type=float, default=2.0, help="pause between levels")
    p.add_argument("--burst-interval", type=float, default=5.0,
                   help="bursts, danmaku: s between bursts")  # fmt: skip
    p.add_argument("--burst-spread-ms", type=float, default=0.0, help="bursts, danmaku: spread")
    p.add_argument("--rooms", type=int, default=1, help="danmaku: rooms (one connection each)")
    p.add_argument("--line-ttl-ms", type=float, default=8000.0, help="danmaku: each line's TTL")
    p.add_argument(
        "--queue-max", type=int, default=32,
        help="danmaku: the server's backlog bound (its line_queue_max) to check against",
    )  # fmt: skip
    p.add_argument("--repeat-fraction", type=float, default=0.5,
                   help="danmaku: share of lines that are repeated phrases")  # fmt: skip
    p.add_argument("--priority-fraction", type=float, default=0.1,
                   help="danmaku: share of lines sent with priority 1")  # fmt: skip
    p.add_argument("--drain-s", type=float, default=30.0,
                   help="danmaku: wait this long past the TTL for the last outcomes")  # fmt: skip
    p.add_argument("--cached-p95-bound-ms", type=float, default=5.0,
                   help="danmaku: goal for cached lines' p95 first audio")  # fmt: skip
    p.add_argument("--max-arrivals", type=int, default=100_000)
    p.add_argument("--max-connections", type=int, default=2048, help="open loop: pool cap")
    p.add_argument("--feed", choices=["whole", "tokens"], default="whole")
    p.add_argument("--tokens-per-s", type=float, default=30.0)
    p.add_argument("--pace", choices=["playback", "done"], default="playback")
    p.add_argument("--think-ms", type=float, default=0.0)
    p.add_argument("--error-backoff-ms", type=float, default=0.0,
                   help="closed loop: wait this long after a failed utterance (e.g. busy)"
                   " before the next (0: at once)")  # fmt: skip
    p.add_argument("--ignore-retry-after", action="store_true",
                   help="closed loop: do not wait the retry_after_ms a busy refusal asks for"
                   " (default: wait it)")  # fmt: skip
    p.add_argument("--jitter-buffer-ms", type=float, default=60.0)
    p.add_argument("--voice", default=None)
    p.add_argument(
        "--phrase-cache",
        action="store_true",
        help="let the phrase cache answer repeated replies (default: every start says cache:"
        " false, so the load is live synthesis; the danmaku pattern measures the cache itself)",
    )
    p.add_argument("--codec", choices=["opus", "pcm_s16le"], default="opus")
    p.add_argument("--sample-rate", type=int, default=48000)
    p.add_argument("--utterance-timeout", type=float, default=60.0)
    p.add_argument("--procs", type=int, default=1, help="steady: load-generator processes")
    p.add_argument("--prep-s", type=float, default=5.0, help="procs > 1: time to connect+warm")
    p.add_argument("--client-lag-warn-ms", type=float, default=20.0)
    p.add_argument("--server-pid", type=int, default=None, help="watch this pid's CPU")
    p.add_argument("--metrics-url", default=None, help="default: the server's /metrics")
    p.add_argument("--no-metrics", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--server-cmd", default="", help="how the server was started (stored)")
    p.add_argument("--label", default="", help="free text stored in the report (device, notes)")
    p.add_argument("-o", "--output", default=None, help="write the JSON report here")
    p.add_argument("--plot", default=None, help="write the PNG plot here")
    p.add_argument(
        "--replot",
        default=None,
        metavar="JSON",
        help="only redraw --plot from a saved report, then exit",
    )
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(name)s: %(message)s")  # fmt: skip
    if args.replot:
        if not args.plot:
            sys.stderr.write("--replot needs --plot PNG\n")
            return 2
        plot_report(json.loads(Path(args.replot).read_text(encoding="utf-8")), args.plot)
        return 0
    if not is_loopback_url(args.url):
        sys.stderr.write(f"refusing {args.url!r}: only ws://localhost or loopback addresses\n")
        return 2
    if args.metrics_url is None and not args.no_metrics:
        args.metrics_url = metrics_url_for(args.url)
    if args.no_metrics:
        args.metrics_url = None
    cfg = ClientConfig(
        url=args.url, voice=args.voice, codec=args.codec, sample_rate=args.sample_rate,
        feed=args.feed, tokens_per_s=args.tokens_per_s, jitter_buffer_ms=args.jitter_buffer_ms,
        pace=args.pace, think_ms=args.think_ms, utterance_timeout_s=args.utterance_timeout,
        phrase_cache=args.phrase_cache, error_backoff_ms=args.error_backoff_ms,
        retry_after=not args.ignore_retry_after,
    )  # fmt: skip
    started = datetime.now(UTC)
    device = describe_device()
    body = asyncio.run(_run(args, cfg))
    device["loadavg_1_5_15_after"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    )
    report: dict[str, Any] = {
        "tool": "emostream loadtest",
        "date": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m loadtest " + shlex.join(argv),
        "device": device,
        "label": args.label,
        "server_command": args.server_cmd,
        "config": {
            "pattern": args.pattern,
            # (danmaku sends line messages, which never say cache: false: it measures the cache)
            "phrase_cache": "used"
            if args.phrase_cache or args.pattern == "danmaku"
            else "bypassed (cache: false)",
            "duration_s": args.duration,
            "feed": args.feed,
            "tokens_per_s": args.tokens_per_s if args.feed == "tokens" else None,
            "pace": args.pace,
            "think_ms": args.think_ms,
            "error_backoff_ms": args.error_backoff_ms,
            "retry_after": not args.ignore_retry_after,
            "jitter_buffer_ms": args.jitter_buffer_ms,
            "codec": args.codec,
            "sample_rate": args.sample_rate,
            "warmup": args.warmup,
            "ramp_s": args.ramp,
            "burst_interval_s": args.burst_interval
            if args.pattern in ("bursts", "danmaku")
            else None,
            **(
                {
                    "rooms": args.rooms,
                    "line_ttl_ms": args.line_ttl_ms,
                    "queue_max": args.queue_max,
                    "repeat_fraction": args.repeat_fraction,
                    "priority_fraction": args.priority_fraction,
                    "drain_s": args.drain_s,
                    "voice": args.voice,
                }
                if args.pattern == "danmaku"
                else {}
            ),
            "procs": args.procs,
            "url": args.url,
        },
        **body,
    }
    text = json.dumps(report, indent=2)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    if args.plot and report["levels"]:
        plot_report(report, args.plot)
    if not args.quiet:
        for r in report["levels"]:
            sys.stdout.write(_line(r) + "\n")
        if "find_max" in report:
            sys.stdout.write(f"largest good level: {report['find_max']['largest_good']}\n")
    if not args.output:
        sys.stdout.write(text + "\n")
    return 0
