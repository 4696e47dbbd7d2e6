"""A real ``emostream serve`` subprocess for tests that signal or kill it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import httpx

from tests.conftest import Loopback, free_port


class Served(Loopback):
    """``python -m emostream serve`` on a free loopback port, its output in ``log``.

    ``env`` adds ``EMOSTREAM_*`` settings; ``args`` adds CLI flags. ``start()`` waits for
    ``/healthz``; leaving the ``with`` block kills what is still running."""

    def __init__(self, log: Path, env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        self.log = log
        self.env = {**os.environ, **env}
        self.args = args
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 120) -> Self:
        cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(self.port), *self.args]
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(cmd, env=self.env, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
