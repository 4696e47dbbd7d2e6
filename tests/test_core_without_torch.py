"""The default install serves every voice without torch (the README's first command): the
embedded voice, the EmoStream voices in both languages with emotion, and a clone registered
over HTTP — ONNX Runtime for the acoustic model, the light vocoder and the speaker encoder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from emostream.voices.catalog import LITE_VOCODER
from tests.conftest import clip_wav

LITE_SHIPPED = (Path(__file__).resolve().parents[1] / "models" / LITE_VOCODER).is_file()

JOE_ONLY = """
import sys
sys.modules["torch"] = None
from starlette.testclient import TestClient
from emostream.config import Settings
from emostream.transport.app import create_app

with TestClient(create_app(Settings(data_dir=sys.argv[1], acoustic="off")),
                base_url="http://127.0.0.1") as client:
    assert client.get("/healthz").status_code == 200
    r = client.post("/v1/audio/speech", json={"input": "Hello.", "response_format": "wav"})
    assert r.status_code == 200 and len(r.content) > 1000, r.text
    assert [v["id"] for v in client.get("/v1/voices").json()["voices"]] == ["joe"]
print("ok")
"""

SCRIPT = """
import json, sys
sys.modules["torch"] = None  # as if the [gpu] extra were not installed: import fails
import numpy as np
from starlette.testclient import TestClient
from emostream.config import Settings
from emostream.transport.app import create_app

clip = open(sys.argv[2], "rb").read()
app = create_app(Settings(data_dir=sys.argv[1]))


def speak(client, start, text):
    with client.websocket_connect("ws://127.0.0.1/v1/stream") as ws:
        fmt = {"codec": "pcm_s16le", "sample_rate": 24000}
        ws.send_text(json.dumps({**start, "type": "start", "format": fmt}))
        ws.send_text(json.dumps({"type": "text", "text": text}))
        ws.send_text(json.dumps({"type": "end"}))
        events, pcm = [], b""
        while True:
            msg = ws.receive()
            if msg.get("bytes"):
                pcm += msg["bytes"]
                continue
            events.append(json.loads(msg["text"]))
            if events[-1]["type"] in ("done", "error"):
                break
    assert events[-1]["type"] == "done", events
    return events, np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768


with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback Host
    health = client.get("/healthz").json()
    assert health["cloning"] is True, health
    voices = {v["id"]: v for v in client.get("/v1/voices").json()["voices"]}
    assert "joe" in voices and "af_heart" in voices and "zf_xiaoxiao" in voices, list(voices)
    assert voices["zf_xiaoxiao"]["language"].startswith("zh")
    events, en = speak(client, {"voice": "af_heart", "emotion": "happy"}, "Thanks for the follow!")
    assert events[0]["controls"]["emotion"] is True and len(en) / 24000 > 0.8
    _, zh = speak(client, {"voice": "zf_xiaoxiao"}, "谢谢大家来看我的直播。")
    assert len(zh) / 24000 > 0.8 and np.sqrt(np.mean(zh**2)) > 0.005
    r = client.post("/v1/voices", files={"file": ("me.wav", clip, "audio/wav")},
                    data={"name": "Me"})
    assert r.status_code == 201, r.text
    _, cloned = speak(client, {"voice": r.json()["id"]}, "Hello from my cloned voice.")
    assert len(cloned) / 24000 > 0.8
    r = client.post("/v1/audio/speech", json={"input": "Hello.", "response_format": "wav"})
    assert r.status_code == 200 and len(r.content) > 1000, r.text
assert sys.modules["torch"] is None  # nothing imported it behind our back
print("ok")
"""


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMOSTREAM_")}
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_serves_the_embedded_voice_without_torch(tmp_path: Path) -> None:
    out = run(JOE_ONLY, str(tmp_path))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.skipif(not LITE_SHIPPED, reason="the light vocoder is not under models/ yet")
def test_serves_every_voice_without_torch(tmp_path: Path, joe: object) -> None:
    clip = tmp_path / "clip.wav"
    text = "This is my own voice, and I would like the stream to use it from now on, please."
    clip.write_bytes(clip_wav(joe, text))  # type: ignore[arg-type]
    out = run(SCRIPT, str(tmp_path / "data"), str(clip))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
