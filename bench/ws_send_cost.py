"""Server CPU per WebSocket binary message (a 160-byte Opus-sized frame), by how each send is
wrapped: the front end sends one message per 20 ms packet (50 a second a stream), each inside
``asyncio.timeout`` (the slow-reader bound) and a lock (transport.websocket.sender
``BoundedSender.send``).

Starts uvicorn (uvloop, websockets-sansio, no deflate) with a tiny Starlette app once per
variant; ``--conns`` clients each ask for ``--messages`` frames, sent in bursts of 50; the
server process's CPU time over the messages is the figure (best of ``--repeats``).

    .venv/bin/python bench/ws_send_cost.py [-o FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

VARIANTS = ("timeout+lock", "timeout", "lock", "bare")

APP = """
import asyncio, os
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
WRAP, N, PKT = os.environ["WRAP"], int(os.environ["N"]), b"x" * 160
async def ep(ws):
    await ws.accept()
    lock = asyncio.Lock()
    await ws.receive_text()
    for i in range(N):
        if WRAP == "timeout+lock":
            async with asyncio.timeout(10):
                async with lock:
                    await ws.send_bytes(PKT)
        elif WRAP == "timeout":
            async with asyncio.timeout(10):
                await ws.send_bytes(PKT)
        elif WRAP == "lock":
            async with lock:
                await ws.send_bytes(PKT)
        else:
            await ws.send_bytes(PKT)
        if i % 50 == 49:
            await asyncio.sleep(0)
    await ws.send_text("end")
    await ws.receive_text()
app = Starlette(routes=[WebSocketRoute("/", ep)])
"""


async def _clients(url: str, conns: int) -> int:
    import websockets

    async def one() -> int:
        async with websockets.connect(url, compression=None, max_size=None) as ws:
            await ws.send("go")
            n = 0
            while isinstance(await ws.recv(), bytes):
                n += 1
            await ws.send("bye")
            return n

    return sum(await asyncio.gather(*(one() for _ in range(conns))))


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(variant: str, *, conns: int, messages: int, repeats: int, workdir: Path) -> float:
    (workdir / "ws_send_app.py").write_text(APP)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "WRAP": variant, "N": str(messages), "PYTHONPATH": str(workdir)}
    cmd = [sys.executable, "-m", "uvicorn", "ws_send_app:app", "--port", str(port),
           "--loop", "uvloop", "--ws", "websockets-sansio", "--ws-per-message-deflate", "false",
           "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, cwd=workdir)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        best = float("inf")
        for _ in range(repeats):
            c0 = _cpu_s(proc.pid)
            n = asyncio.run(_clients(f"ws://127.0.0.1:{port}/", conns))
            best = min(best, (_cpu_s(proc.pid) - c0) / n * 1e6)
        return best
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--conns", type=int, default=20)
    p.add_argument("--messages", type=int, default=3000, help="per connection")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("-o", "--output", type=Path)
    a = p.parse_args()
    work = Path("/tmp/ws_send_cost")
    work.mkdir(exist_ok=True)
    rows = {v: round(measure(v, conns=a.conns, messages=a.messages, repeats=a.repeats,
                             workdir=work), 2) for v in VARIANTS}  # fmt: skip
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "what": "server CPU microseconds per 160-byte WebSocket binary message (best of "
        f"{a.repeats}; {a.conns} connections x {a.messages} messages, bursts of 50)",
        "us_per_message": rows,
    }
    print(json.dumps(report, indent=1))
    if a.output:
        a.output.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
