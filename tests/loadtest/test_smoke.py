"""CI smoke run: the load generator against the real app on loopback (few streams,
seconds). Checks that reports are complete and consistent, not timing targets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from loadtest.cli import main
from loadtest.client import ClientConfig, run_open, run_steady
from loadtest.report import build_report
from loadtest.schedule import burst_arrivals
from tests.conftest import ServerThread

pytestmark = pytest.mark.slow


def check_level(r: dict[str, Any], *, min_utterances: int = 1) -> None:
    assert r["utterances"] >= min_utterances
    assert r["utterances_ok"] == r["utterances"], r["errors"]
    assert r["errors"] == {} and r["error_rate"] == 0
    fa = r["first_audio_ms"]
    assert fa["n"] == r["utterances_ok"]
    assert 0 < fa["p50"] <= fa["p95"] <= fa["p99"] <= fa["max"] < 60_000
    assert r["audio_s"] > 0.5
    assert r["rtf"]["aggregate_audio_s_per_wall_s"] > 0
    assert r["rtf"]["server_compute_per_utterance"]["n"] == r["utterances_ok"]
    assert r["underruns"]["count"] >= 0 and r["underruns"]["per_stream_minute"] >= 0
    assert r["interarrival_gap_ms"]["n"] > 0 and r["jitter_ms"]["p99"] >= 0
    # the server's own first-audio figure is never larger than what the client saw
    assert r["server_first_audio_ms"]["p50"] <= fa["p50"] + 1.0


async def test_steady_streams(server: ServerThread) -> None:
    cfg = ClientConfig(url=server.ws_url, pace="done")
    result = await run_steady(cfg, streams=2, duration_s=2.0, warmup=0, ramp_s=0.2)
    report = build_report(result.records, wall_s=result.wall_s, concurrency=2)
    check_level(report, min_utterances=2)
    assert report["streams"] == 2
    assert {r.stream for r in result.records} == {0, 1}
    for r in result.records:
        assert r.packets > 0 and r.audio_ms == pytest.approx(20.0 * r.packets)
        assert r.server_audio_ms is not None
        assert abs(r.server_audio_ms - r.audio_ms) <= 20.0  # every packet was counted


async def test_repeated_replies_are_synthesised_live_unless_the_cache_is_asked(
    server: ServerThread,
) -> None:
    # One stream speaks the same short reply four times over: live every time by default
    # (the load is synthesis), from the phrase cache after the first with phrase_cache.
    live = ClientConfig(url=server.ws_url, pace="done")
    result = await run_steady(live, streams=1, duration_s=1.5, warmup=0, ramp_s=0.0,
                              texts=("Thanks!",))  # fmt: skip
    assert len(result.records) >= 2 and not any(r.cached for r in result.records)
    cached = ClientConfig(url=server.ws_url, pace="done", phrase_cache=True)
    result = await run_steady(cached, streams=1, duration_s=1.5, warmup=0, ramp_s=0.0,
                              texts=("Thanks!",))  # fmt: skip
    assert len(result.records) >= 2 and all(r.cached for r in result.records[1:])


async def test_bursts_token_by_token(server: ServerThread) -> None:
    cfg = ClientConfig(url=server.ws_url, feed="tokens", tokens_per_s=200.0)
    arrivals = burst_arrivals(burst_size=3, interval_s=10.0, duration_s=1.0)
    result = await run_open(cfg, arrivals=arrivals, max_connections=3, warmup=0)
    assert len(result.records) == 3 and result.peak_inflight == 3
    check_level(build_report(result.records, wall_s=result.wall_s), min_utterances=3)


async def test_overflow_and_refusal_are_errors(server: ServerThread) -> None:
    cfg = ClientConfig(url=server.ws_url, voice="no-such-voice")
    arrivals = burst_arrivals(burst_size=3, interval_s=10.0, duration_s=1.0)
    result = await run_open(cfg, arrivals=arrivals, max_connections=2, warmup=0)
    report = build_report(result.records, wall_s=result.wall_s)
    assert report["errors"] == {"client_overflow": 1, "unknown_voice": 2}
    assert report["error_rate"] == 1.0 and report["first_audio_ms"]["n"] == 0


def test_cli_find_max_writes_json_and_png(server: ServerThread, tmp_path: Path) -> None:
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    rc = main([
        "--url", server.ws_url, "--find-max", "--max-level", "2", "--duration", "2",
        "--ramp", "0.2", "--settle-s", "0", "--p95-bound-ms", "60000",
        "--server-pid", str(os.getpid()), "-o", str(out), "--plot", str(png), "-q",
    ])  # fmt: skip
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["command"].startswith("python -m loadtest --url")
    assert report["device"]["nproc"] >= 1 and report["date"]
    assert [lv["level"] for lv in report["levels"]] == [1.0, 2.0]
    for lv in report["levels"]:
        check_level(lv)
        assert lv["server"]["cpu_percent"]["samples"] > 0
        assert lv["server"]["gpu_memory_bytes_max"] is not None  # the gauge exists (0 on CPU)
    fm = report["find_max"]
    good = [int(lv["level"]) for lv in report["levels"] if lv["good"]]
    assert fm["largest_good"] == max(good, default=0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_two_processes(server: ServerThread, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rc = main([
        "--url", server.ws_url, "--streams", "2", "--procs", "2", "--prep-s", "3",
        "--duration", "2", "--ramp", "0.2", "--warmup", "0", "--no-metrics", "-o", str(out), "-q",
    ])  # fmt: skip
    assert rc == 0
    (level,) = json.loads(out.read_text())["levels"]
    check_level(level, min_utterances=2)
    assert level["streams"] == 2 and level["client"]["procs"] == 2


def test_cli_danmaku_lines_on_one_connection(server: ServerThread, tmp_path: Path) -> None:
    """Bursts of 12 lines on one socket with a short TTL: the checks hold and every line is
    accounted for (the fixture's server keeps the default bound of 32)."""
    out, png = tmp_path / "d.json", tmp_path / "d.png"
    rc = main([
        "--url", server.ws_url, "--pattern", "danmaku", "--level", "12", "--duration", "2",
        "--burst-interval", "1", "--line-ttl-ms", "1500", "--drain-s", "10", "--no-metrics",
        "-o", str(out), "--plot", str(png), "-q",
    ])  # fmt: skip
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["config"]["pattern"] == "danmaku" and report["config"]["line_ttl_ms"] == 1500
    (level,) = report["levels"]
    dm = level["danmaku"]
    acc = dm["checks"]["accounting"]
    assert acc["sent"] == 24 and acc["unreported"] == 0 and acc["ok"], acc
    assert acc["spoken"] + sum(acc["dropped"].values()) + sum(acc["refused"].values()) == 24
    assert acc["spoken"] >= 1 and level["utterances_ok"] == acc["spoken"], acc
    assert dm["checks"]["ttl"]["ok"] and dm["checks"]["ttl_started"]["ok"], dm["checks"]
    assert dm["checks"]["backlog"]["ok"]
    assert dm["checks"]["backlog"]["max_depth"] <= 32
    assert dm["first_audio_ms"]["live"]["n"] + dm["first_audio_ms"]["cached"]["n"] == acc["spoken"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
