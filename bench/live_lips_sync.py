"""Lips in sync at the listener: the /live page driving a (fake) VTube Studio, measured from
the page's playout clock.

    .venv/bin/python bench/live_lips_sync.py [--url http://127.0.0.1:8000] [--lines 12] \\
        [-o bench/results/DATE-cpu2-live-lips-sync.json] [--screenshot docs/img/live.png]
    .venv/bin/python bench/live_lips_sync.py --analyze session.json --vts vts.jsonl [--max-ms 50]

Without ``--url`` it serves (``python -m emostream serve`` on a free port, a fresh data dir).
It opens a room (``POST /v1/rooms``), starts the fake VTube Studio of the client's tests
(``client_js/test/fixtures/fake_vts.py``: the plugin API's authentication and parameter
injection, each injection logged with its arrival time), warms the server with two lines,
opens two ``/live`` pages of the room in headless Chromium (``client_js/scripts/live_probe.mjs``;
the first with ``&vts=`` the fake), publishes ``--lines`` chat lines into the room as ``line``
messages, and waits until both pages have heard them all.

What is measured, on the first page (its probe records the audio it pushed to the player in
20 ms blocks, the AudioWorklet's reports of context frame ↔ samples played, and
``AudioContext.getOutputTimestamp()``: context time ↔ page time, the output latency included;
from these, the moment each 20 ms of audio was *heard*, in Unix ms, independently of the clock
the page drives VTube Studio by):

* ``frame_offset_ms``: for every mouth frame VTube Studio received (its request id names the
  utterance and the frame's time), its arrival minus the moment that frame's audio was heard;
* ``onset_offset_ms``: for every onset of the audio heard (the first 20 ms block above
  -40 dBFS after 100 ms below), the nearest opening of the mouth at VTube Studio (MouthOpen
  reaching 0.1 after 100 ms below it) minus the onset (paired within ±150 ms);
* both pages: underruns, packets, samples played, the words heard; the server: utterances it
  synthesised for them (``emostream_utterances_total``), frames it sent to listeners.

``--analyze`` reads a session written by ``live_probe.mjs`` and the fake's log (the end-to-end
test's way in). Both modes exit 1 unless 95 % of the frames arrive within ``--max-ms`` (50) of
their audio and the mouth opens within it at 80 % of the onsets (:func:`passes`).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "client_js"
LINES = [
    "Welcome back everyone, thanks for joining the stream tonight!",
    "Ann says hello from Berlin, hi Ann, good to see you again.",
    "Somebody asked about the boss fight: we try it once more after this round.",
    "Thank you so much for the follow, that really means a lot.",
    "Quick reminder, the giveaway closes at nine o'clock sharp.",
    "Mark wants to know which keyboard I use; it is the blue one on the desk.",
    "Oh no, I fell off the bridge again, that was not the plan at all.",
    "Five more minutes and then we take a short break, stay hydrated.",
    "Lisa says the music is too loud, I will turn it down a little.",
    "Great question about the mouth sync, it follows every word you hear.",
    "Three new subscribers in a row, welcome to the family!",
    "All right, that is it for today, see you on Friday.",
]
VOICED_DB, QUIET_DB = -40.0, -40.0
OPEN = 0.1
QUIET_BLOCKS = 5  # 100 ms of 20 ms blocks


# ----------------------------------------------------------------------------- analysis
def _db(rms: float) -> float:
    return 20.0 * math.log10(rms) if rms > 0 else -120.0


def heard_clock(probe: dict[str, Any]) -> Callable[[float], float | None]:
    """Unix ms at which timeline sample ``s`` of the page's player was heard (None when the
    probe cannot say): the worklet report after it gives its context frame, the output
    timestamp nearest that frame its page time."""
    rate = float(probe["rate"])
    reports = sorted((r[1], r[0]) for r in probe["reports"])  # (samples played, frame)
    played = [r[0] for r in reports]
    stamps = sorted(probe["stamps"])
    contexts = [s[0] for s in stamps]
    origin = float(probe["timeOrigin"])

    def heard(sample: float) -> float | None:
        i = bisect.bisect_right(played, sample)
        if i == len(reports) or not stamps:
            return None
        done, frame = reports[i]  # its quantum (128 frames from `frame`) ends the count
        at_frame = frame + 128 + (sample - done)
        t = at_frame / rate
        j = min(bisect.bisect_left(contexts, t), len(stamps) - 1)
        if j > 0 and abs(contexts[j - 1] - t) < abs(contexts[j] - t):
            j -= 1
        context_time, page_time = stamps[j]
        return origin + page_time + (t - context_time) * 1000.0

    return heard


def frame_offsets(probe: dict[str, Any], vts: list[dict[str, Any]]) -> list[float]:
    """Arrival at VTube Studio minus the moment the frame's audio was heard, ms."""
    heard = heard_clock(probe)
    starts = {s["utterance"]: s for s in probe["starts"]}
    rate = float(probe["rate"])
    out: list[float] = []
    for entry in vts:
        match = re.fullmatch(r"mouth-(\d+)-(-?[\d.]+)-\d+", entry.get("requestID", ""))
        if not match:
            continue
        utterance, t = int(match.group(1)), float(match.group(2))
        start = starts.get(utterance)
        if start is None or t < 0:
            continue
        sample = start["base"] + (t + start["delayMs"]) * rate / 1000.0
        at = heard(sample)
        if at is not None:
            out.append(entry["at"] - at)
    return out


def onset_offsets(probe: dict[str, Any], vts: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Mouth openings at VTube Studio minus the voiced onsets heard, ms; and the onsets with no
    opening within ±150 ms."""
    heard = heard_clock(probe)
    block = probe["rate"] * 0.02
    levels = [_db(x) for x in probe["blocks"]]
    onsets = []
    for k in range(QUIET_BLOCKS, len(levels)):
        if levels[k] > VOICED_DB and all(x < QUIET_DB for x in levels[k - QUIET_BLOCKS : k]):
            at = heard(k * block)
            if at is not None:
                onsets.append(at)
    mouth = sorted((e["at"], e["values"].get("MouthOpen", 0.0)) for e in vts if "values" in e)
    opens = []
    last_open = -1e18
    for at, value in mouth:
        if value >= OPEN:
            if at - last_open > 100.0:
                opens.append(at)
            last_open = at
    offsets, missed = [], 0
    for onset in onsets:
        near = min(opens, key=lambda o: abs(o - onset), default=None)
        if near is None or abs(near - onset) > 150.0:
            missed += 1
        else:
            offsets.append(near - onset)
    return offsets, missed


def distribution(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    magnitude = sorted(abs(v) for v in values)

    def q(xs: list[float], p: float) -> float:
        return round(xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))], 1)

    return {
        "n": len(values), "mean": round(statistics.fmean(values), 1),
        "p5": q(ordered, 0.05), "p50": q(ordered, 0.5), "p95": q(ordered, 0.95),
        "min": round(ordered[0], 1), "max": round(ordered[-1], 1),
        "abs_p95": q(magnitude, 0.95), "abs_max": round(magnitude[-1], 1),
        "within_50ms": round(sum(m <= 50.0 for m in magnitude) / len(values), 4),
        "histogram_10ms": _histogram(values),
    }  # fmt: skip


def _histogram(values: list[float]) -> dict[str, int]:
    bins: dict[str, int] = {}
    for v in values:
        lo = math.floor(v / 10.0) * 10
        bins[f"{lo}..{lo + 10}"] = bins.get(f"{lo}..{lo + 10}", 0) + 1
    return dict(sorted(bins.items(), key=lambda kv: float(kv[0].split("..")[0])))


def analyze(session: dict[str, Any], vts: list[dict[str, Any]]) -> dict[str, Any]:
    first = session["pages"][0]
    onsets, missed = onset_offsets(first["probe"], vts)
    return {
        "frame_offset_ms": distribution(frame_offsets(first["probe"], vts)),
        "onset_offset_ms": {**distribution(onsets), "unpaired_onsets": missed},
        "onset_values": [round(v, 1) for v in onsets],
        "page_scheduling_ms": distribution(page_offsets(first["probe"])),
        "pages": [
            {"underruns": p["stats"]["underruns"], "utterances": p["stats"]["utterances"],
             "packets": p["stats"]["packets"], "samples_played": p["player"]["samplesPlayed"],
             "samples_pushed": p["player"]["samplesPushed"], "decoder": p["decoder"],
             "output_latency_ms": round(1000 * (p["player"]["outputLatency"] or 0), 1),
             "words_heard": len(p["words"]), "errors": p["errors"]}
            for p in session["pages"]
        ],
        "vts_injections": sum("values" in e for e in vts),
        "vts_errors": [e["error"] for e in vts if "error" in e],
    }  # fmt: skip


def page_offsets(probe: dict[str, Any]) -> list[float]:
    """When the page released each mouth frame minus when its audio was heard, ms: the page's
    scheduling alone (no VTube Studio socket)."""
    heard = heard_clock(probe)
    starts = {s["utterance"]: s for s in probe["starts"]}
    out = []
    for m in probe["mouth"]:
        start = starts.get(m.get("utterance"))
        if start is None or m["t"] < 0:
            continue
        at = heard(start["base"] + (m["t"] + start["delayMs"]) * probe["rate"] / 1000.0)
        if at is not None:
            out.append(m["at"] - at)
    return out


def passes(result: dict[str, Any], max_ms: float) -> bool:
    """95 % of the mouth frames at VTube Studio within ``max_ms`` of their audio heard, and
    the mouth opening within ``max_ms`` of 80 % of the voiced onsets (an onset's offset also
    holds the viseme model's choice of when the lips part, so it is judged on most onsets)."""
    frames, onsets = result["frame_offset_ms"], result["onset_offset_ms"]
    if frames.get("n", 0) == 0 or onsets.get("n", 0) < 3:
        return False
    within = sum(abs(v) <= max_ms for v in result["onset_values"]) / len(result["onset_values"])
    return bool(frames["abs_p95"] <= max_ms and within >= 0.8)


# ----------------------------------------------------------------------------- the run
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return json.loads(text) if text.startswith(("{", "[")) else text


def _metric(base: str, name: str, labels: str = "") -> float:
    text = _http("GET", f"{base}/metrics")
    pattern = "^" + re.escape(name + (f"{{{labels}}}" if labels else "")) + r" ([0-9.e+-]+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def _publish(ws_url: str, room: str, lines: list[str], prefix: str) -> list[dict[str, Any]]:
    import websockets

    dones: list[dict[str, Any]] = []
    async with websockets.connect(ws_url, max_size=None) as ws:
        for i, text in enumerate(lines):
            await ws.send(json.dumps({"type": "line", "text": text, "id": f"{prefix}{i}",
                                      "room": room, "ttl_ms": 600000}))  # fmt: skip
        while len(dones) < len(lines):
            msg = await asyncio.wait_for(ws.recv(), 300)
            if isinstance(msg, str) and json.loads(msg)["type"] in ("done", "line_dropped"):
                dones.append(json.loads(msg))
    return dones


def run(args: argparse.Namespace) -> dict[str, Any]:
    server = None
    base = args.url
    work = Path(tempfile.mkdtemp(prefix="live-lips-"))
    if base is None:
        port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "EMOSTREAM_DATA_DIR": str(work)}
        server = subprocess.Popen([sys.executable, "-m", "emostream", "serve", "--port", str(port)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                _http("GET", f"{base}/healthz")
                break
            except OSError:
                time.sleep(0.5)
    ws_url = base.replace("http", "ws", 1) + "/v1/stream"
    vts = subprocess.Popen([sys.executable, str(CLIENT / "test/fixtures/fake_vts.py")],
                           stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert vts.stdout is not None
        vts_port = json.loads(vts.stdout.readline())["ready"]
        log: list[dict[str, Any]] = []
        reader = threading.Thread(target=lambda: log.extend(json.loads(x) for x in vts.stdout or []),
                                  daemon=True)  # fmt: skip
        reader.start()
        room = _http("POST", f"{base}/v1/rooms", {"name": f"bench-{os.getpid()}"})
        asyncio.run(_publish(ws_url, room["room"], LINES[:2], "warm"))
        ok = 'outcome="ok",transport="ws"'
        before = _metric(base, "emostream_utterances_total", ok)
        frames_before = _metric(base, "emostream_room_frames_total")
        ready = work / "ready.json"
        session_file = work / "session.json"
        probe = [
            "node", str(CLIENT / "scripts/live_probe.mjs"), "--base", base, "--room",
            room["room"], "--token", room["token"], "--pages", "2", "--vts",
            f"ws://127.0.0.1:{vts_port}", "--utterances", str(args.lines), "--out",
            str(session_file), "--ready-file", str(ready), "--timeout-s", "600",
        ]  # fmt: skip
        if args.screenshot:  # over a plain background (the page itself is transparent)
            shot = str(Path(args.screenshot).resolve())
            probe += ["--screenshot", shot, "--page-query", "&mouth=1&queue=1&bg=%231b2631"]
        pages = subprocess.Popen(probe, cwd=CLIENT)
        while not ready.exists():
            if pages.poll() is not None:
                raise SystemExit("live_probe.mjs failed before the pages listened")
            time.sleep(0.2)
        lines = (LINES * (args.lines // len(LINES) + 1))[: args.lines]
        dones = asyncio.run(_publish(ws_url, room["room"], lines, "line"))
        if pages.wait(timeout=900) != 0:
            raise SystemExit("live_probe.mjs failed")
        session = json.loads(session_file.read_text())
        time.sleep(0.5)  # the last injections' log lines
        (work / "vts.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
        print(f"session and VTube Studio log kept in {work}", file=sys.stderr)
        result = analyze(session, log)
        result["server"] = {
            "utterances_synthesised": _metric(base, "emostream_utterances_total", ok) - before,
            "room_frames_sent": _metric(base, "emostream_room_frames_total") - frames_before,
            "lines_spoken": sum(d["type"] == "done" and not d["cancelled"] for d in dones),
        }
        result["browser"] = session["browser"]
        return result
    finally:
        vts.terminate()
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="a running server (default: serve one)")
    parser.add_argument("--lines", type=int, default=12)
    parser.add_argument("-o", "--output", default=None)
    parser.add_argument("--screenshot", default=None, help="PNG of the first page, mid-word")
    parser.add_argument("--analyze", default=None, help="a session from live_probe.mjs")
    parser.add_argument("--vts", default=None, help="fake_vts.py's log (JSON lines)")
    parser.add_argument("--max-ms", type=float, default=50.0)
    args = parser.parse_args(argv)
    if args.analyze:
        session = json.loads(Path(args.analyze).read_text())
        log = [json.loads(x) for x in Path(args.vts).read_text().splitlines() if x.startswith("{")]
        result = analyze(session, [e for e in log if "ready" not in e])
        print(json.dumps(result))
        return 0 if passes(result, args.max_ms) else 1
    result = run(args)
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "what": "mouth frames at a fake VTube Studio against the audio heard on the /live page",
        "command": " ".join(["bench/live_lips_sync.py", *(argv or sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "lines": args.lines,
        "max_ms": args.max_ms,
        "passes": passes(result, args.max_ms),
        **result,
    }
    text = json.dumps(record, indent=1)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(text)
    return 0 if record["passes"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
