"""Metrics across worker processes (prometheus-client multiprocess mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COUNT = """
from emostream.stream.metrics import Metrics
m = Metrics()
m.utterances.labels("ws", "ok").inc({n})
m.active_streams.inc({n})
"""
RENDER = """
import sys
from emostream.stream.metrics import Metrics
sys.stdout.write(Metrics().render().decode())
"""


def test_render_sums_every_worker(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for n in (2, 3):  # two "workers", each its own process (pid-named sample files)
        subprocess.run([sys.executable, "-c", COUNT.format(n=n)], env=env, check=True)
    out = subprocess.run(
        [sys.executable, "-c", RENDER], env=env, check=True, capture_output=True, text=True
    ).stdout
    assert 'emostream_utterances_total{outcome="ok",transport="ws"} 5.0' in out
