"""Server-side figures: CPU of the server process (psutil) and its ``/metrics``.

:func:`parse_metric` is the sans-I/O part (Prometheus text format); :class:`ServerMonitor`
samples in the background while a load level runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import urllib.request
from typing import Any, Self

log = logging.getLogger(__name__)

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metric(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """All samples of metric ``name`` in Prometheus text ``text``: labels -> value."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None or m.group(1) != name:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        try:
            out[labels] = float(m.group(3))
        except ValueError:
            continue
    return out


def metric_total(text: str, name: str) -> float | None:
    """Sum of all samples of ``name`` (None when absent)."""
    samples = parse_metric(text, name)
    return sum(samples.values()) if samples else None


def errors_by_code(text: str) -> dict[str, float]:
    return {
        dict(labels).get("code", "?"): v
        for labels, v in parse_metric(text, "emostream_errors_total").items()
    }


def refusals_by_reason(text: str) -> dict[str, float]:
    """The server's admission refusals (``busy``) by reason (utilization, late, ...)."""
    return {
        dict(labels).get("reason", "?"): v
        for labels, v in parse_metric(text, "emostream_admission_refusals_total").items()
    }


def fetch_metrics(url: str, *, timeout_s: float = 5.0) -> str | None:
    """GET ``url`` (the server's /metrics); None when it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            body: bytes = resp.read()
            return body.decode("utf-8", "replace")
    except OSError as exc:
        log.debug("metrics unavailable at %s: %s", url, exc)
        return None


class ServerMonitor:
    """Samples the server's CPU (psutil, process and children) every ``period_s`` while
    running, and reads ``/metrics`` at start and stop."""

    def __init__(self, *, pid: int | None, metrics_url: str | None, period_s: float = 0.5) -> None:
        self.pid = pid
        self.metrics_url = metrics_url
        self.period_s = period_s
        self.cpu_samples: list[float] = []
        self.rss_samples: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._before: str | None = None
        self._after: str | None = None
        self.gpu_memory_samples: list[float] = []

    async def __aenter__(self) -> Self:
        if self.metrics_url:
            self._before = await asyncio.to_thread(fetch_metrics, self.metrics_url)
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.metrics_url:
            self._after = await asyncio.to_thread(fetch_metrics, self.metrics_url)
            self._note_gpu(self._after)

    def _note_gpu(self, text: str | None) -> None:
        if text:
            gpu = metric_total(text, "emostream_gpu_memory_bytes")
            if gpu is not None:
                self.gpu_memory_samples.append(gpu)

    async def _sample(self) -> None:
        procs: list[Any] = []
        if self.pid is not None:
            try:
                import psutil

                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
                for p in procs:
                    p.cpu_percent(None)
            except Exception as exc:  # noqa: BLE001 (psutil missing or process gone)
                log.warning("cannot watch server pid %s: %s", self.pid, exc)
                procs = []
        ticks = 0
        while True:
            await asyncio.sleep(self.period_s)
            ticks += 1
            if procs:
                try:
                    self.cpu_samples.append(sum(p.cpu_percent(None) for p in procs))
                    self.rss_samples.append(sum(p.memory_info().rss for p in procs))
                except Exception:  # noqa: BLE001 (process ended)
                    procs = []
            if self.metrics_url and ticks % 10 == 0:
                self._note_gpu(await asyncio.to_thread(fetch_metrics, self.metrics_url))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pid": self.pid}
        if self.cpu_samples:
            s = sorted(self.cpu_samples)
            out["cpu_percent"] = {
                "mean": round(sum(s) / len(s), 1),
                "max": round(s[-1], 1),
                "samples": len(s),
                "note": "100 = one core busy",
            }
            out["rss_mb_max"] = round(max(self.rss_samples) / 2**20, 1)
        out["gpu_memory_bytes_max"] = max(self.gpu_memory_samples, default=None)
        if self._before is not None and self._after is not None:
            b, a = errors_by_code(self._before), errors_by_code(self._after)
            out["server_errors_by_code"] = {
                k: a[k] - b.get(k, 0.0) for k in sorted(a) if a[k] - b.get(k, 0.0)
            }
            rb, ra = refusals_by_reason(self._before), refusals_by_reason(self._after)
            out["admission_refusals_by_reason"] = {
                k: ra[k] - rb.get(k, 0.0) for k in sorted(ra) if ra[k] - rb.get(k, 0.0)
            }
        return out
