"""A process's resident memory, open file descriptors and threads, from ``/proc/<pid>``.

:func:`parse_status` and :func:`compare` are the sans-I/O part; :func:`sample` reads ``/proc``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ProcSample:
    rss_bytes: int
    fds: int
    threads: int

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        d["rss_mb"] = round(self.rss_bytes / 2**20, 2)
        return d


def parse_status(text: str) -> tuple[int, int]:
    """``(rss_bytes, threads)`` from the text of ``/proc/<pid>/status``."""
    rss = threads = -1
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "VmRSS":
            number, _, unit = value.strip().partition(" ")
            if unit.strip().lower() != "kb":
                raise ValueError(f"unexpected VmRSS unit {unit!r}")
            rss = int(number) * 1024
        elif key == "Threads":
            threads = int(value.strip())
    if rss < 0 or threads < 0:
        raise ValueError("no VmRSS / Threads line (is the process a zombie?)")
    return rss, threads


def sample(pid: int, proc: str = "/proc") -> ProcSample:
    """The process's figures now (raises ``OSError`` when it is gone)."""
    with open(f"{proc}/{pid}/status", encoding="ascii", errors="replace") as f:
        rss, threads = parse_status(f.read())
    fds = len(os.listdir(f"{proc}/{pid}/fd"))
    return ProcSample(rss_bytes=rss, fds=fds, threads=threads)


def compare(
    baseline: ProcSample, end: ProcSample, *, rss_tolerance: float = 0.05
) -> dict[str, Any]:
    """Whether ``end`` is back at ``baseline``: RSS within ``rss_tolerance`` (relative), fds and
    threads no higher."""
    growth = (end.rss_bytes - baseline.rss_bytes) / baseline.rss_bytes
    checks = {
        "rss_within_tolerance": growth <= rss_tolerance,
        "fds_at_baseline": end.fds <= baseline.fds,
        "threads_at_baseline": end.threads <= baseline.threads,
    }
    return {
        "rss_growth": round(growth, 4),
        "rss_tolerance": rss_tolerance,
        "fd_delta": end.fds - baseline.fds,
        "thread_delta": end.threads - baseline.threads,
        **checks,
        "ok": all(checks.values()),
    }
