"""Serve's autoscaling under a load-test ramp: model replicas over time on a 2-node cluster.

Starts a local Ray cluster on this machine (head + one worker, one CPU each, one model replica
fitting on each node), deploys :mod:`emostream.cluster.deploy` with 1-2 model replicas and
``--target-streams`` ongoing streams per replica, then runs the load generator
(``python -m loadtest --sweep ...``, steady pattern: each level holds that many streams for
``--duration`` s) and samples the model deployment's running replicas every second from the
start of the load until ``--after-s`` after it. Writes JSON: the timeline, when the count rose
and fell, and the load test's report.

    PYTHONPATH=server .venv/bin/python bench/ray_autoscale.py \
        -o bench/results/2026-12-03-cpu2-ray-autoscale.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from emostream.benchmarks.first_audio import host_info
from emostream.config import Settings

NODE = {"num_cpus": 1, "resources": {"emostream_model": 1.0}, "object_store_memory": 100 << 20}


def replicas(app: str, deployment: str) -> int:
    from ray import serve

    status = serve.status().applications.get(app)
    if status is None or deployment not in status.deployments:
        return 0
    return int(status.deployments[deployment].replica_states.get("RUNNING", 0))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/ray_autoscale.py")
    p.add_argument("--sweep", default="1,2,4")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--target-streams", type=float, default=1.5)
    p.add_argument("--after-s", type=float, default=60.0)
    p.add_argument("--port", type=int, default=8771)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    os.environ.update({"RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
                       "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1"})  # fmt: skip
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from emostream.cluster.deploy import build_app
    from emostream.cluster.ray_runner import MODEL

    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
    timeline: list[tuple[float, int]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="emostream-autoscale-") as tmp:
            settings = Settings(
                port=a.port, data_dir=tmp, log_level="warning", ray_min_replicas=1,
                ray_max_replicas=2, ray_target_streams=a.target_streams, ray_model_cpus=0.0,
                ray_model_resources="emostream_model=1", ray_upscale_delay_s=3.0,
                ray_downscale_delay_s=10.0, ray_autoscale_window_s=12.0,
            )  # fmt: skip
            serve.start(http_options={"host": "127.0.0.1", "port": a.port},
                        proxy_location="HeadOnly")  # fmt: skip
            serve.run(build_app(settings), name=settings.ray_app, route_prefix="/")
            stop = threading.Event()
            t0 = time.monotonic()

            def sample() -> None:
                while not stop.is_set():
                    timeline.append((round(time.monotonic() - t0, 1), replicas("emostream", MODEL)))
                    stop.wait(1.0)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            report = Path(tmp) / "loadtest.json"
            cmd = [sys.executable, "-m", "loadtest", "--url",
                   f"ws://127.0.0.1:{a.port}/v1/stream", "--sweep", a.sweep, "--duration",
                   str(a.duration), "--no-metrics", "-q", "-o", str(report)]  # fmt: skip
            load = subprocess.run(cmd, check=False, capture_output=True, text=True)
            load_end = time.monotonic() - t0
            time.sleep(a.after_s)
            stop.set()
            sampler.join()
            loadtest: Any = json.loads(report.read_text()) if report.exists() else load.stderr
    finally:
        serve.shutdown()
        ray.shutdown()
        cluster.shutdown()
    rose = next((t for t, n in timeline if n >= 2), None)
    fell = next((t for t, n in timeline if t > load_end and n <= 1), None)
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(["bench/ray_autoscale.py", *(argv or sys.argv[1:])]),
        "host": host_info(),
        "settings": {"min_replicas": 1, "max_replicas": 2, "target_streams": a.target_streams,
                     "upscale_delay_s": 3.0, "downscale_delay_s": 10.0,
                     "autoscale_window_s": 12.0, "sweep": a.sweep, "duration_s": a.duration},
        "load_end_s": round(load_end, 1),
        "scaled_to_2_at_s": rose,
        "back_to_1_at_s": fell,
        "timeline_s_replicas": timeline,
        "loadtest": loadtest,
    }  # fmt: skip
    text = json.dumps(out, indent=2)
    print(
        json.dumps({k: v for k, v in out.items() if k not in ("loadtest", "timeline_s_replicas")})
    )
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    return 0 if load.returncode == 0 else load.returncode


if __name__ == "__main__":
    sys.exit(main())
