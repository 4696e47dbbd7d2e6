"""What Ray Serve costs a stream: first audio and CPU through the cluster vs the single host.

On this machine, one after the other, with the same settings (CPU, default voice, live
synthesis: every start says ``cache: false``):

1. **single host**: ``python -m emostream serve`` (one process, in-process runner);
2. **Ray Serve**: a one-node Ray cluster (``ray.init``) running the application of
   :mod:`emostream.cluster.deploy` with one ingress and one model replica; a stream goes
   client -> Serve's HTTP proxy -> ingress replica -> (model calls) -> model replica.

Each gets the same load from :func:`emostream.benchmarks.first_audio.run` (``--n`` utterances,
``--concurrency`` connections, after a warm-up). CPU is the user+system time of every process
below this script's server side (the server process and its children; for Ray the GCS,
raylet, Serve controller, proxy and replicas), sampled with psutil before and after the load,
and also over ``--idle-s`` with no load, so the cluster's fixed background cost is apart
from the per-stream cost. The load generator (this process) is not counted. Writes JSON.

    PYTHONPATH=server .venv/bin/python bench/ray_overhead.py --n 40 --concurrency 1 \
        -o bench/results/2026-12-03-cpu2-ray-overhead-c1.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from emostream.benchmarks.first_audio import host_info, run
from emostream.config import Settings


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    out: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[pid] - before.get(pid, 0.0) for pid in after)


async def measure(url: str, roots: list[psutil.Process], a: argparse.Namespace) -> dict[str, Any]:
    """Idle CPU, then the load's first audio and CPU, of the processes under ``roots``."""

    def procs() -> list[psutil.Process]:
        return [p for r in roots for p in _tree(r)]

    # warm-up (models loaded, first calls made), then idle, then the measured load
    await run(url, 4, 1, None, "opus", 48000, 1)
    t0, idle0 = time.perf_counter(), cpu_seconds(procs())
    await asyncio.sleep(a.idle_s)
    idle_wall, idle_cpu = time.perf_counter() - t0, cpu_delta(idle0, cpu_seconds(procs()))
    t0, load0 = time.perf_counter(), cpu_seconds(procs())
    report = await run(url, a.n, a.concurrency, None, "opus", 48000, a.warmup)
    load_wall, load_cpu = time.perf_counter() - t0, cpu_delta(load0, cpu_seconds(procs()))
    background = idle_cpu / idle_wall * load_wall
    utterances = report["utterances"]
    report["cpu"] = {
        "processes": len(procs()),
        "idle_cpu_per_s": round(idle_cpu / idle_wall, 4),
        "load_wall_s": round(load_wall, 2),
        "load_cpu_s": round(load_cpu, 3),
        "cpu_s_per_utterance": round(load_cpu / utterances, 4),
        "cpu_s_per_utterance_less_idle": round((load_cpu - background) / utterances, 4),
        "cpu_s_per_audio_s": round(load_cpu / report["audio_s"], 4),
    }
    return report


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer in {timeout} s")


def single_host(a: argparse.Namespace, data: Path) -> dict[str, Any]:
    env = {**os.environ, "EMOSTREAM_DATA_DIR": str(data / "single"), "EMOSTREAM_LOG_LEVEL":
           "warning"}  # fmt: skip
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(a.port)]
    proc = subprocess.Popen(cmd, env=env)
    try:
        _wait_http(f"http://127.0.0.1:{a.port}/healthz", 300)
        root = psutil.Process(proc.pid)
        return asyncio.run(measure(f"ws://127.0.0.1:{a.port}/v1/stream", [root], a))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def ray_serve(a: argparse.Namespace, data: Path) -> dict[str, Any]:
    import ray
    from ray import serve

    from emostream.cluster.deploy import build_app

    port = a.port + 1
    settings = Settings(
        port=port, data_dir=str(data / "ray"), log_level="warning", ray_min_replicas=1,
        ray_max_replicas=1, ray_ingress_replicas=1, ray_model_cpus=0.0,
    )  # fmt: skip
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port}, proxy_location="HeadOnly")
        serve.run(build_app(settings), name=settings.ray_app, route_prefix="/")
        _wait_http(f"http://127.0.0.1:{port}/healthz", 300)
        me = psutil.Process()
        roots = [p for p in me.children(recursive=False)]
        return asyncio.run(measure(f"ws://127.0.0.1:{port}/v1/stream", roots, a))
    finally:
        ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/ray_overhead.py")
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--idle-s", type=float, default=10.0)
    p.add_argument("--port", type=int, default=8751)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="emostream-ray-bench-") as tmp:
        single = single_host(a, Path(tmp))
        clustered = ray_serve(a, Path(tmp))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(["bench/ray_overhead.py", *(argv or sys.argv[1:])]),
        "commit": commit,
        "host": host_info(),
        "single_host": single,
        "ray_serve": clustered,
        "overhead": {
            "first_audio_p50_ms": round(
                clustered["first_audio_ms"]["p50"] - single["first_audio_ms"]["p50"], 1
            ),
            "first_audio_p95_ms": round(
                clustered["first_audio_ms"]["p95"] - single["first_audio_ms"]["p95"], 1
            ),
            "cpu_s_per_utterance": round(
                clustered["cpu"]["cpu_s_per_utterance_less_idle"]
                - single["cpu"]["cpu_s_per_utterance_less_idle"],
                4,
            ),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
