"""The soak command: /proc parsing, the baseline comparison, and a short run against the real
app (the server runs in this process, so its pid is ours)."""

from __future__ import annotations

import os

import pytest

from loadtest.procstats import ProcSample, compare, parse_status, sample
from loadtest.soak import SoakTally, one_cycle, soak
from tests.conftest import ServerThread

STATUS = """Name:\tpython
State:\tS (sleeping)
VmPeak:\t  900000 kB
VmRSS:\t  409600 kB
RssAnon:\t  300000 kB
Threads:\t11
"""


def test_parse_status() -> None:
    assert parse_status(STATUS) == (409600 * 1024, 11)
    with pytest.raises(ValueError):
        parse_status("Name:\tzombie\nThreads:\t1\n")


def test_sample_reads_this_process() -> None:
    s = sample(os.getpid())
    assert s.rss_bytes > 10 * 2**20 and s.threads >= 1
    with open(os.devnull) as _:
        assert sample(os.getpid()).fds == s.fds + 1


def test_compare() -> None:
    base = ProcSample(rss_bytes=100 * 2**20, fds=20, threads=10)
    assert compare(base, ProcSample(104 * 2**20, 20, 10))["ok"]
    grown = compare(base, ProcSample(106 * 2**20, 20, 10))
    assert not grown["ok"] and not grown["rss_within_tolerance"] and grown["rss_growth"] > 0.05
    leaked = compare(base, ProcSample(100 * 2**20, 21, 10))
    assert not leaked["ok"] and leaked["fd_delta"] == 1
    assert not compare(base, ProcSample(100 * 2**20, 20, 12))["threads_at_baseline"]


def test_tally_counts_failed_cycles() -> None:
    tally = SoakTally()
    base = ProcSample(100 * 2**20, 20, 10)
    tally.note(base, baseline=True)
    for outcome in ("ok", "ok", "busy"):
        tally.record(outcome)
    report = tally.report(base, rss_tolerance=0.05)
    assert report["cycles"] == 3 and report["outcomes"] == {"busy": 1, "ok": 2}
    assert report["verdict"]["cycles_failed"] == 1 and not report["verdict"]["ok"]


@pytest.mark.slow
async def test_short_soak_against_the_app(server: ServerThread) -> None:
    assert await one_cycle(server.ws_url, cancel_after="audio", timeout_s=30) == "ok"
    assert await one_cycle(server.ws_url, cancel_after="started", timeout_s=30) == "ok"
    assert await one_cycle("ws://127.0.0.1:1/v1/stream", cancel_after="audio", timeout_s=5) in (
        "ConnectionRefusedError",
        "OSError",
    )
    report = await soak(
        server.ws_url, os.getpid(), cycles=40, concurrency=4, warmup=10, sample_every=20,
        settle_s=0.5, cancel_after="audio", timeout_s=30, rss_tolerance=0.5,
    )  # fmt: skip
    assert report["outcomes"] == {"ok": 40}, report["outcomes"]
    assert report["cycles"] == 40 and report["warmup_outcomes"] == {"ok": 10}
    assert report["baseline"]["fds"] > 0 and report["end"]["threads"] > 0
    assert [s["after_cycles"] for s in report["samples"]][-3:] == [20, 40, 40]
    # no client socket is left open: the test's process holds both ends
    assert report["verdict"]["fd_delta"] <= 0, report["verdict"]
