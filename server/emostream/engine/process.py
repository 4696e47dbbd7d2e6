"""The engine process as an OS process: its entry point and the parent's handle on it.

``python -m emostream.engine.process --socket PATH`` (settings as JSON in
``EMOSTREAM_ENGINE_SETTINGS``, else from ``EMOSTREAM_*``) loads the voices on its device,
collects the stages they declare (:func:`~emostream.engine.core.collect_stages`, with this
device's runners from :func:`~emostream.engine.gpu.stages.device_stages`) and runs the
engine loop (:class:`~emostream.engine.core.EngineCore`) on a Unix socket until SIGTERM.

:class:`EngineHandle` starts the process and stops it (``serve`` does, once for all workers).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from emostream.config import Settings
from emostream.engine.core import EngineCore, collect_stages
from emostream.engine.gpu.stages import device_stages

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m emostream.engine.process")
    p.add_argument("--socket", required=True)
    args = p.parse_args(argv)
    raw = os.environ.get("EMOSTREAM_ENGINE_SETTINGS")
    settings = Settings(**json.loads(raw)) if raw else Settings.from_env()
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s engine: %(message)s")  # fmt: skip
    from emostream.voices.catalog import load_catalog

    catalog = load_catalog(settings)
    voices = [catalog.get(i.id) for i in catalog.infos()]
    stages = collect_stages(voices, device_stages(settings, voices))
    core = EngineCore(stages, stats_interval_s=settings.engine_stats_s,
                      acoustic_linger_s=max(0.0, settings.engine_acoustic_linger_ms) / 1e3,
                      vocoder_linger_s=max(0.0, settings.engine_vocoder_linger_ms) / 1e3)  # fmt: skip
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(args.socket)
    listener.listen(256)
    log.info("engine ready on %s: stages %s", args.socket, ", ".join(stages) or "none")
    try:
        core.serve(listener, stop=lambda: bool(stopping))
    finally:
        core.close()
        listener.close()
    return 0


class EngineHandle:
    """A started engine process (:meth:`spawn`), its socket path, and :meth:`close`."""

    def __init__(self, proc: subprocess.Popen[bytes], socket_path: str) -> None:
        self.proc = proc
        self.socket_path = socket_path

    @classmethod
    def spawn(cls, settings: Settings, *, timeout: float | None = None) -> EngineHandle:
        """Start the process on a socket in a new private directory; return once it
        accepts connections (raises if it exits first or ``timeout`` passes: default 300 s,
        1 h with ``vocoder_compile``, which compiles each vocoder shape first)."""
        if timeout is None:
            timeout = 300.0 if settings.vocoder_compile == "off" else 3600.0
        folder = Path(tempfile.mkdtemp(prefix="emostream-engine-"))
        folder.chmod(0o700)
        path = str(folder / "engine.sock")
        env = {**os.environ, "EMOSTREAM_ENGINE_SETTINGS": json.dumps(asdict(settings))}
        cmd = [sys.executable, "-m", "emostream.engine.process", "--socket", path]
        proc = subprocess.Popen(cmd, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"engine process exited with {proc.returncode}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                    probe.connect(path)
                return cls(proc, path)
            except OSError:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError("engine process did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        Path(self.socket_path).unlink(missing_ok=True)

    async def close(self) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
