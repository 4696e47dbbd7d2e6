"""``emostream serve`` with the voice registry's Redis unreachable: one line naming the URL (its
password hidden) and exit status 3, no traceback; with one worker or several."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from emostream.cli import EXIT_UNAVAILABLE
from tests.conftest import free_port


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_without_redis_is_one_line_and_an_exit_status(tmp_path: Path, workers: str) -> None:
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    env = {
        **os.environ,
        "EMOSTREAM_VOICE_REGISTRY_URL": url,
        "EMOSTREAM_DATA_DIR": str(tmp_path / "data"),
        "EMOSTREAM_ACOUSTIC": "off",
    }
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(free_port()),
           "--workers", workers]  # fmt: skip
    done = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_UNAVAILABLE == 3, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    shown = url.replace("s3cret", "***")
    assert lines[0].startswith(f"emostream serve: voice registry {shown} unreachable (")
    assert "Traceback" not in done.stderr and done.stdout == ""
