"""The embedded voice serves on a machine without torch (the README's first command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
sys.modules["torch"] = None  # as if the [gpu] extra were not installed: import fails
from starlette.testclient import TestClient
from emostream.config import Settings
from emostream.transport.app import create_app

app = create_app(Settings(data_dir=sys.argv[1]))
with TestClient(app) as client:
    assert client.get("/healthz").status_code == 200
    r = client.post("/v1/audio/speech", json={"input": "Hello.", "response_format": "wav"})
    assert r.status_code == 200 and len(r.content) > 1000, r.text
    assert [v["id"] for v in client.get("/v1/voices").json()["voices"]] == ["joe"]
print("ok")
"""


def test_serves_the_embedded_voice_without_torch(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMOSTREAM_")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
