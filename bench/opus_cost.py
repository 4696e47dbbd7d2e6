"""CPU cost of the front end's packetiser per audio second: soxr resampling from the voice's
22.05 kHz, int16 conversion and libopus encoding in 20 ms frames, by output rate and Opus
complexity (issue 13: Opus is more than half of a front-end worker's main thread under load).

    .venv/bin/python bench/opus_cost.py [--seconds 20] [--quality 8] [-o FILE.json]

The cost input is a synthetic voiced signal (an amplitude-modulated 180 Hz tone with noise):
the encoder's cost depends little on content at a fixed bitrate. Single-threaded.
``--quality N``: also N lines spoken by the default CPU voices (af_heart, zf_xiaoxiao) through
Opus at 48 kHz, 32 kb/s and each complexity, decoded, scored with DNSMOS (``speechmos``, the
``[dev]`` extra), against the audio before Opus (complexity -1 in the output).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
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


LINES = [
    "Thanks for the follow, welcome to the stream!",
    "Okay chat, one more round and then we call it a night.",
    "That was the closest match I've played all week.",
    "Remember to drink some water, everyone.",
    "欢迎新来的朋友，记得点个关注哦！",
    "今天就播到这里，咱们明天老时间见。",
    "这把真的太险了，差一点就输了。",
    "谢谢大家的礼物，爱你们！",
]


def opus_roundtrip(x: np.ndarray, rate: int, complexity: int) -> np.ndarray:
    """``x`` (float32 at 24 kHz) through Opus at 48 kHz, 32 kb/s and ``complexity``."""
    enc = opus.Encoder(48000, 1, opus.APPLICATION_AUDIO)
    enc.bitrate, enc.complexity, enc.signal = 32000, complexity, opus.SIGNAL_VOICE
    dec = opus.Decoder(48000, 1)
    y = soxr.resample(x, rate, 48000, quality="LQ")
    pcm = (np.clip(y, -1.0, 1.0) * 32767.0).astype(np.int16)
    n = 960
    pcm = np.concatenate([pcm, np.zeros(-len(pcm) % n, np.int16)])
    out = [
        np.frombuffer(dec.decode(enc.encode(pcm[i : i + n].tobytes(), n), n), np.int16)
        for i in range(0, len(pcm), n)
    ]
    return np.concatenate(out).astype(np.float32) / 32768.0


def quality(n: int) -> list[dict[str, float]]:
    import asyncio

    from emostream.config import Settings
    from emostream.engine.oneshot import synthesize
    from emostream.voices.base import Controls
    from emostream.voices.catalog import load_catalog

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lab.acoustic_quality import dnsmos_scores

    catalog = load_catalog(Settings())
    rate = 24000
    clips = []
    for text in LINES[:n]:
        voice = catalog.get(
            "zf_xiaoxiao" if any("\u4e00" <= c <= "\u9fff" for c in text) else "af_heart"
        )
        assert voice is not None
        pcm = asyncio.run(synthesize(voice, text, Controls(), sample_rate=rate))
        clips.append(pcm.astype(np.float32) / 32768.0)
    rows = []
    for c in (None, 10, 5, 3, 1):  # None: the audio before Opus
        scores = [
            dnsmos_scores(x, rate)
            if c is None
            else dnsmos_scores(opus_roundtrip(x, rate, c), 48000)
            for x in clips
        ]
        row = {"complexity": -1 if c is None else c}
        row |= {k: round(float(np.mean([sc[k] for sc in scores])), 3) for k in scores[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--quality", type=int, default=0, help="lines to score through Opus (0-8)")
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
    if a.quality:
        report["quality"] = {
            "what": "DNSMOS of default-voice lines (af_heart, zf_xiaoxiao) after Opus 48 kHz "
            "32 kb/s at each complexity; -1 = before Opus",
            "lines": LINES[: a.quality],
            "rows": quality(a.quality),
        }
    if a.output:
        a.output.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
