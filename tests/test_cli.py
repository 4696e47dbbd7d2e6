import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import soundfile as sf

from emostream.cli import main
from tests.conftest import free_port


def test_say_local_writes_a_wav(tmp_path: object, capsys: object) -> None:
    out = f"{tmp_path}/hello.wav"
    args = ["say", "--local", "Hello from the command line.", "-o", out, "--speed", "1.1"]
    assert main(args) == 0
    audio, rate = sf.read(out)
    assert rate == 24000 and 1.0 < len(audio) / rate < 4.0


def test_say_local_refuses_unsupported_control(tmp_path: object) -> None:
    # joe (Piper) has speed only; the default voice (af_heart) takes emotion.
    args = ["say", "--local", "Hi.", "-o", f"{tmp_path}/x.wav", "--voice", "joe"]
    assert main([*args, "--emotion", "happy"]) == 2
    assert main(["say", "--local", "Hi.", "-o", f"{tmp_path}/y.wav", "--emotion", "happy"]) == 0


def test_bench_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "nope"]) == 2
    assert "emostream bench {first-audio,vocoder}" in capsys.readouterr().err
    # the lab's quality judges are not in the package: the old names say where they went
    assert main(["bench", "acoustic", "--help"]) == 2
    assert "python -m lab.acoustic_quality" in capsys.readouterr().err


def test_serve_workers_share_port_and_metrics(tmp_path: Path) -> None:
    """``serve --workers 2``: two processes answer on one port; /metrics sums both."""
    port = free_port()
    env = {
        **os.environ,
        "EMOSTREAM_ACOUSTIC": "off",
        "EMOSTREAM_DATA_DIR": str(tmp_path / "data"),
        "EMOSTREAM_LOG_LEVEL": "warning",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    (tmp_path / "metrics").mkdir()
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(port), "--workers", "2"]
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        import psutil

        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()
            workers = psutil.Process(proc.pid).children(recursive=True)
            try:
                up = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                up = False
            if up and len(workers) >= 2:
                break
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.5)
        n = 6
        with httpx.Client(timeout=30) as client:  # a fresh connection per request
            for i in range(n):
                r = client.post(
                    f"http://127.0.0.1:{port}/v1/audio/speech",
                    json={"input": f"Number {i}.", "response_format": "wav"},
                    headers={"Connection": "close"},
                )
                assert r.status_code == 200, r.text
            text = client.get(f"http://127.0.0.1:{port}/metrics").text
        done = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("emostream_utterances_total{")
        )
        assert done == n
        assert len(list((tmp_path / "metrics").glob("*.db"))) >= 2  # both workers wrote
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
