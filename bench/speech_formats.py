"""``POST /v1/audio/speech`` by response format: when the first bytes arrive, and what each
encoder costs per second of audio.

    .venv/bin/python bench/speech_formats.py [--runs 15] [--voice af_heart] [--baseline DIR]
        [--formats mp3,wav,...] [--skip-encoders | --skip-server] [-o OUT.json]

* **Encoder cost** (in process, single-threaded): real speech (``--voice``, 24 kHz PCM, three
  sentences) through each response format's encoder (:mod:`emostream.codec.encoders`)
  in the server's 20 ms packets, best of 5; CPU ms per audio second, and the output's bitrate.
  MP3 at LAME quality 2, 5 (served) and 7. Opus is the streamer's own packetiser (libopus at
  48 kHz, complexity 5, with the Ogg pages), for reference.
* **First bytes** over loopback against ``python -m emostream serve`` (a subprocess; default
  settings, so the CPU path): one short sentence, ``cache: false`` (the phrase cache would
  replay it), ``--runs`` requests per format interleaved after a warm-up. Per request: the
  first body byte (``ttfb``) and the first byte of audio (``first_audio``: for WAV the first
  byte after its 44-byte header and for Ogg Opus after its two header pages, which leave
  before any audio is made; for the others the first byte), and the whole body (``total``);
  p50 and p90, milliseconds. ``--baseline DIR``: also the WAV of another checkout's server
  (e.g. main before this work) started beside this one, its requests interleaved with ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.benchmarks.first_audio import host_info, percentile
from emostream.codec.encoders import make_encoder
from emostream.codec.packetizer import OutputFormat, Packetizer
from emostream.config import Settings
from emostream.stream.oneshot import synthesize
from emostream.voices.catalog import load_catalog

SHORT = "Hello! How are you doing today?"
SPEECH = (
    "The museum opens at nine in the morning and closes at six. Tickets are cheaper on "
    "weekdays, and children under twelve get in for free. Please keep your bags with you."
)
FORMATS = ("mp3", "wav", "pcm", "opus", "aac", "flac")


def encoder_costs(voice_id: str) -> list[dict[str, Any]]:
    catalog = load_catalog(Settings(default_voice=voice_id))
    voice = catalog.get(voice_id)
    assert voice is not None
    pcm = asyncio.run(synthesize(voice, SPEECH, sample_rate=24000))
    seconds = len(pcm) / 24000
    packets = [pcm[i : i + 480].tobytes() for i in range(0, len(pcm), 480)]
    rows: list[dict[str, Any]] = []

    def measure(name: str, run: Any) -> None:
        best, size = float("inf"), 0
        for _ in range(5):
            t0 = time.process_time()
            size = run()
            best = min(best, time.process_time() - t0)
        rows.append({"format": name, "audio_s": round(seconds, 2),
                     "cpu_ms_per_audio_s": round(best * 1000 / seconds, 3),
                     "kbps": round(size * 8 / seconds / 1000, 1)})  # fmt: skip

    def encoded(name: str, **kw: Any) -> int:
        if kw:
            from emostream.codec.encoders import Mp3Encoder

            enc: Any = Mp3Encoder(24000, **kw)
        else:
            enc = make_encoder(name, sample_rate=24000)
        n = len(enc.header())
        for p in packets:
            n += len(enc.push(p))
        return n + len(enc.finish())

    for quality in (2, 5, 7):
        measure(f"mp3 (LAME q{quality})", lambda q=quality: encoded("mp3", quality=q))
    for name in ("aac", "flac", "wav", "pcm"):
        measure(name, lambda n=name: encoded(n))
    audio = pcm.astype(np.float32) / 32768

    def opus() -> int:
        packer = Packetizer(OutputFormat(sample_rate=48000), in_rate=24000)
        ogg = make_encoder("opus", sample_rate=48000, opus_pre_skip=312)
        n = len(ogg.header())
        for i in range(0, len(audio), 480):
            for pkt in packer.push(audio[i : i + 480]):
                n += len(ogg.push(pkt))
        for pkt in packer.finish():
            n += len(ogg.push(pkt))
        return n + len(ogg.finish())

    measure("opus (48 kHz resample + libopus c5 + Ogg)", opus)
    return rows


def first_bytes(port: int, fmt: str) -> dict[str, float]:
    body = {"model": "tts-1", "input": SHORT, "response_format": fmt, "cache": False}
    rate = 48000 if fmt == "opus" else 24000
    header = len(make_encoder(fmt, sample_rate=rate).header())  # WAV's 44, Ogg's 2 pages
    start = time.perf_counter()
    ttfb = first_audio = float("nan")
    got = 0
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json=body,
                      timeout=60) as r:  # fmt: skip
        assert r.status_code == 200, r.read()[:200]
        for chunk in r.iter_raw():
            now = (time.perf_counter() - start) * 1000
            if got == 0:
                ttfb = now
            got += len(chunk)
            if math.isnan(first_audio) and got > header:
                first_audio = now
    return {"ttfb": ttfb, "first_audio": first_audio,
            "total": (time.perf_counter() - start) * 1000, "bytes": got}  # fmt: skip


class Server:
    """``python -m emostream serve`` from the checkout ``root`` on a free loopback port."""

    def __init__(self, root: Path, voice_id: str) -> None:
        from tests.conftest import free_port

        self.port = free_port()
        env = {**os.environ, "EMOSTREAM_DEFAULT_VOICE": voice_id,
               "EMOSTREAM_DATA_DIR": tempfile.mkdtemp(prefix="speech-formats-"),
               "PYTHONPATH": str(root / "server")}  # fmt: skip
        self.log = tempfile.NamedTemporaryFile(suffix=".log", delete=False)  # noqa: SIM115
        cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                url = f"http://127.0.0.1:{self.port}/healthz"
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log.name
            time.sleep(0.3)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def serve_and_measure(
    runs: int, voice_id: str, formats: tuple[str, ...], baseline: Path | None
) -> dict[str, Any]:
    """First bytes of each format from this checkout's server and, with ``baseline``, of
    ``wav`` (what every checkout serves) from that checkout's, requests interleaved."""
    servers = {"this": Server(ROOT, voice_id)}
    if baseline is not None:
        servers["baseline"] = Server(baseline, voice_id)
    cases = [("this", f) for f in formats] + ([("baseline", "wav")] if baseline else [])
    samples: dict[tuple[str, str], list[dict[str, float]]] = {c: [] for c in cases}
    try:
        for server in servers.values():
            server.wait()
        for label, fmt in cases:  # warm-up
            first_bytes(servers[label].port, fmt)
        for _ in range(runs):
            for label, fmt in cases:
                samples[(label, fmt)].append(first_bytes(servers[label].port, fmt))
                time.sleep(0.05)
    finally:
        for server in servers.values():
            server.stop()
    out: dict[str, Any] = {}
    for (label, fmt), rows in samples.items():
        name = fmt if label == "this" else f"{fmt} (baseline)"
        out[name] = {k: {"p50": round(percentile([r[k] for r in rows], 0.5), 1),
                         "p90": round(percentile([r[k] for r in rows], 0.9), 1)}
                     for k in ("ttfb", "first_audio", "total")}  # fmt: skip
        out[name]["bytes"] = int(rows[0]["bytes"])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--skip-server", action="store_true", help="encoder costs only")
    p.add_argument("--formats", default=",".join(FORMATS), help="first bytes of these")
    p.add_argument("--skip-encoders", action="store_true", help="first bytes only")
    p.add_argument("--baseline", type=Path, help="another checkout (main): its wav beside ours")
    p.add_argument("-o", "--output", type=Path)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": host_info(),
        "voice": args.voice,
    }
    if not args.skip_encoders:
        report["encoder_cost"] = encoder_costs(args.voice)
    if not args.skip_server:
        formats = tuple(args.formats.split(","))
        baseline = args.baseline.resolve() if args.baseline else None
        found = serve_and_measure(args.runs, args.voice, formats, baseline)
        report["first_bytes"] = {
            "text": SHORT,
            "runs": args.runs,
            "baseline": str(baseline) if baseline else None,
            "by_format": found,
        }
    report["host_after"] = host_info()
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
