"""CPU cost of the front end's packetiser per audio second: soxr resampling from the voice's
22.05 kHz, int16 conversion and libopus encoding in 20 ms frames, by output rate and Opus
complexity (issue 13: Opus is more than half of a front-end worker's main thread under load).

    .venv/bin/python bench/opus_cost.py [--seconds 20] [-o bench/results/DATE-cpu2-opus-cost.json]

The input is a synthetic voiced signal (an amplitude-modulated 180 Hz tone with noise): the
encoder's cost depends little on content at a fixed bitrate. Single-threaded.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import opuslib_next as opus
import soxr

IN_RATE = 22050


def measure(x: np.ndarray, rate: int, complexity: int, seconds: float) -> dict[str, float]:
    enc = opus.Encoder(rate, 1, opus.APPLICATION_AUDIO)
    enc.bitrate = 32000
    enc.complexity = complexity
    enc.signal = opus.SIGNAL_VOICE
    t0 = time.perf_counter()
    y = soxr.resample(x, IN_RATE, rate, quality="LQ")
    pcm = (np.clip(y, -1.0, 1.0) * 32767.0).astype(np.int16)
    t1 = time.perf_counter()
    n = rate // 50
    size = 0
    for i in range(0, len(pcm) - n + 1, n):
        size += len(enc.encode(pcm[i : i + n].tobytes(), n))
    t2 = time.perf_counter()
    return {
        "sample_rate": rate,
        "complexity": complexity,
        "resample_ms_per_audio_s": round(1000 * (t1 - t0) / seconds, 3),
        "encode_ms_per_audio_s": round(1000 * (t2 - t1) / seconds, 3),
        "kbps": round(size * 8 / seconds / 1000, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("-o", "--output", type=Path, default=None)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    t = np.arange(int(IN_RATE * a.seconds)) / IN_RATE
    x = 0.3 * np.sin(2 * np.pi * 180 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    x = (x + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    rows = [measure(x, r, c, a.seconds) for r in (48000, 24000, 16000) for c in (5, 3, 1)]
    for r in rows:
        print(json.dumps(r))
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {"machine": platform.machine(), "python": platform.python_version()},
        "what": "front-end packetiser cost per audio second (soxr LQ + int16 + Opus 32 kb/s, "
        "20 ms frames), one thread",
        "rows": rows,
    }
    if a.output:
        a.output.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
