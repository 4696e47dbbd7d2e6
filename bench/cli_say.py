"""``emostream say --url … "text" -o x.wav`` end to end against a warm server: from starting the
command (a fresh Python process, as a person types it) to its exit with the file written.

    .venv/bin/python bench/cli_say.py [--url ws://HOST:PORT/v1/stream] [--n 20] [--local 1]
        [-o bench/results/2026-12-07-cpu2-cli-say-url.json]

Without ``--url`` it starts ``emostream serve`` on a free loopback port (every voice, CPU) and
warms it with two utterances first. Each run is timed with the clock of this process around
``subprocess.run``; the command's own report (seconds of audio, first audio) is kept too. For
comparison: a bare ``python -c pass`` (the interpreter's own start-up) and ``say --local``
(every model loaded in the process: what ``say`` did before it could use a server).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.benchmarks.first_audio import host_info

TEXTS = {"en": "Hello there, this is EmoStream.", "zh": "你好，欢迎来到直播间。"}
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-500:]}")
    return wall, done.stderr.strip()


def start_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**ENV, "EMOSTREAM_DATA_DIR": tempfile.mkdtemp(prefix="cli-say-"),
           "EMOSTREAM_LOG_LEVEL": "warning"}  # fmt: skip
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "emostream", "serve", "--port", str(port)],
                                env=env, stdout=sink, stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("server did not start")


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "min_s": round(ordered[0], 3),
        "max_s": round(ordered[-1], 3),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help="a running server (default: start one)")
    p.add_argument("--n", type=int, default=20, help="runs per text")
    p.add_argument("--local", type=int, default=1, help="runs of say --local, for comparison")
    p.add_argument("-o", "--output", default="bench/results/2026-12-07-cpu2-cli-say-url.json")
    args = p.parse_args()
    proc = None
    url = args.url
    work = Path(tempfile.mkdtemp(prefix="cli-say-"))
    if url is None:
        port = free_port()
        proc = start_server(port, work / "server.log")
        url = f"ws://127.0.0.1:{port}/v1/stream"
    say = [sys.executable, "-m", "emostream", "say", "--url", url]
    try:
        for text in TEXTS.values():  # warm: the server's first utterances of each language
            for _ in range(2):
                timed([*say, text, "-o", str(work / "warm.wav")])
        load_before = os.getloadavg()
        bare = [timed([sys.executable, "-c", "pass"])[0] for _ in range(args.n)]
        runs: dict[str, Any] = {}
        for lang, text in TEXTS.items():
            walls, reports = [], []
            for i in range(args.n):
                wall, report = timed([*say, text, "-o", str(work / f"{lang}{i}.wav")])
                walls.append(wall)
                reports.append(report)
            firsts = [float(m.group(1)) for r in reports
                      if (m := re.search(r"first audio (\d+) ms", r))]  # fmt: skip
            alls = [float(m.group(1)) for r in reports
                    if (m := re.search(r"all of it in (\d+) ms", r))]  # fmt: skip
            runs[lang] = {"text": text, **summary(walls), "walls_s": [round(w, 3) for w in walls],
                          "first_audio_ms_p50": statistics.median(firsts),
                          # connect, start to done: the server's part (and the socket's)
                          "connect_to_done_ms_p50": statistics.median(alls),
                          # the rest: Python start-up, imports, file, close, exit
                          "outside_ms_p50": round(statistics.median(
                              w * 1000 - a for w, a in zip(walls, alls, strict=True)), 1),
                          "report": reports[0]}  # fmt: skip
        local = [timed([sys.executable, "-m", "emostream", "say", "--local", TEXTS["en"], "-o",
                        str(work / "local.wav")])[0] for _ in range(args.local)]  # fmt: skip
        load_after = os.getloadavg()
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
    result = {
        "what": "emostream say --url ... TEXT -o x.wav, end to end (process start to exit) "
        "against a warm server on the same host",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python bench/cli_say.py --n {args.n} --local {args.local}",
        "host": host_info(),
        "load_average_before_after": [round(x, 2) for x in (*load_before, *load_after)],
        "note": "2-core machine shared with other jobs (load average above); the server, "
        "started by the script, runs every voice on CPU on the same cores",
        "target_s": 1.0,
        "python_bare_start": summary(bare),
        "say_url": runs,
        "say_local_s": [round(x, 2) for x in local],
    }
    Path(args.output).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("python_bare_start", "say_local_s")}))
    for lang, r in runs.items():
        print(
            lang,
            {
                k: r[k]
                for k in (
                    "p50_s",
                    "p95_s",
                    "max_s",
                    "first_audio_ms_p50",
                    "connect_to_done_ms_p50",
                    "outside_ms_p50",
                )
            },
        )
    print("wrote", args.output)


if __name__ == "__main__":
    main()
