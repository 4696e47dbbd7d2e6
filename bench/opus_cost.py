"""CPU cost of the front end's packetiser per audio second: soxr resampling from the voice's
22.05 kHz, int16 conversion and libopus encoding in 20 ms frames, by output rate and Opus
complexity (issue 13: Opus is more than half of a front-end worker's main thread under load).

    .venv/bin/python bench/opus_cost.py [--seconds 20] [--quality 8] [-o FILE.json]

The cost input is a synthetic voiced signal (an amplitude-modulated 180 Hz tone with noise):
the encoder's cost depends little on content at a fixed bitrate. Single-threaded.
``--quality N``: also N lines spoken by the default CPU voices (af_heart, zf_xiaoxiao) through
Opus at 48 kHz, 32 kb/s and each complexity, decoded, scored with DNSMOS (``speechmos``, the
``[dev]`` extra), against the audio before Opus (complexity -1 in the output).
``--modes N``: the encoder's modes (``OPUS_APPLICATIONS``: hybrid SILK+CELT ``audio`` against
CELT-only ``lowdelay``) at several bitrates and complexities on N of those lines: encode cost
per audio second on the speech itself (best of 3), bitrate, DNSMOS and wideband PESQ (P.862;
``pip install pesq``, kept out of the extras: PyPI has only its source, which needs a C
compiler; the clip before Opus as reference) per line, averaged.
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

from emostream.codec.packetizer import OPUS_APPLICATIONS, to_int16

IN_RATE = 22050


def _encoder(rate: int, application: str, bitrate: int, complexity: int) -> opus.Encoder:
    """An encoder as the server's Packetizer makes one (mono, voice)."""
    enc = opus.Encoder(rate, 1, OPUS_APPLICATIONS[application])
    enc.bitrate, enc.complexity, enc.signal = bitrate, complexity, opus.SIGNAL_VOICE
    return enc


def _through(enc: opus.Encoder, pcm: np.ndarray, *, skip: int = 0) -> np.ndarray:
    """int16 ``pcm`` at 48 kHz through ``enc`` and a fresh decoder in 20 ms frames, padded with
    silence to whole frames after ``skip`` more samples; float32, less the first ``skip``."""
    dec = opus.Decoder(48000, 1)
    pcm = np.concatenate([pcm, np.zeros(skip + (-(len(pcm) + skip) % 960), np.int16)])
    out = [
        np.frombuffer(dec.decode(enc.encode(pcm[i : i + 960].tobytes(), 960), 960), np.int16)
        for i in range(0, len(pcm), 960)
    ]
    return np.concatenate(out).astype(np.float32)[skip:] / 32768.0


def measure(x: np.ndarray, rate: int, complexity: int, seconds: float) -> dict[str, float]:
    enc = _encoder(rate, "audio", 32000, complexity)
    t0 = time.perf_counter()
    pcm = to_int16(soxr.resample(x, IN_RATE, rate, quality="LQ"))
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
    pcm = to_int16(soxr.resample(x, rate, 48000, quality="LQ"))
    return _through(_encoder(48000, "audio", 32000, complexity), pcm)


def _spoken(n: int, rate: int) -> list[np.ndarray]:
    """The first ``n`` of :data:`LINES` spoken by the default CPU voices at ``rate``."""
    import asyncio

    from emostream.config import Settings
    from emostream.stream.oneshot import synthesize
    from emostream.voices.base import Controls
    from emostream.voices.catalog import load_catalog

    catalog = load_catalog(Settings())
    clips = []
    for text in LINES[:n]:
        voice = catalog.get(
            "zf_xiaoxiao" if any("\u4e00" <= c <= "\u9fff" for c in text) else "af_heart"
        )
        assert voice is not None
        pcm = asyncio.run(synthesize(voice, text, Controls(), sample_rate=rate))
        clips.append(pcm.astype(np.float32) / 32768.0)
    return clips


def quality(n: int) -> list[dict[str, float]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lab.acoustic_quality import dnsmos_scores

    rate = 24000
    clips = _spoken(n, rate)
    rows = []
    for c in (None, 10, 5, 3, 1):  # None: the audio before Opus
        scores = [
            dnsmos_scores(x, rate)
            if c is None
            else dnsmos_scores(opus_roundtrip(x, rate, c), 48000)
            for x in clips
        ]
        row: dict[str, float] = {"complexity": -1 if c is None else c}
        row |= {k: round(float(np.mean([sc[k] for sc in scores])), 3) for k in scores[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


MODES = (  # (application, bitrate, complexity); the first is the default before 2026-12-06
    ("audio", 32000, 5), ("audio", 32000, 1), ("lowdelay", 32000, 1), ("lowdelay", 32000, 5),
    ("lowdelay", 48000, 1), ("lowdelay", 48000, 3), ("lowdelay", 48000, 5),
    ("lowdelay", 64000, 1),
)  # fmt: skip


def mode_rows(n: int) -> list[dict[str, float | str]]:
    """Each of :data:`MODES` on ``n`` spoken lines: cost, bitrate, DNSMOS, PESQ."""
    try:
        from pesq import pesq
    except ImportError:
        sys.exit("--modes needs PESQ: pip install pesq (source only: needs a C compiler)")

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lab.acoustic_quality import dnsmos_scores

    rate = 24000
    clips = _spoken(n, rate)
    refs48 = [soxr.resample(x, rate, 48000, quality="LQ") for x in clips]
    whole = np.concatenate(refs48)
    seconds = len(whole) / 48000
    pcm_all = to_int16(whole)
    before = [dnsmos_scores(r, 48000) for r in refs48]
    rows: list[dict[str, float | str]] = [{"application": "none (before Opus)"} | {
        f"dnsmos_{k}": round(float(np.mean([d[k] for d in before])), 3) for k in before[0]
    }]  # fmt: skip
    print(json.dumps(rows[0]), flush=True)
    for app, bitrate, cx in MODES:
        best = float("inf")
        for _ in range(3):
            enc = _encoder(48000, app, bitrate, cx)
            t0 = time.perf_counter()
            size = sum(len(enc.encode(pcm_all[i : i + 960].tobytes(), 960))
                       for i in range(0, len(pcm_all) - 959, 960))  # fmt: skip
            best = min(best, time.perf_counter() - t0)
        dn, pq = [], []
        for ref, x in zip(refs48, clips, strict=True):
            enc = _encoder(48000, app, bitrate, cx)
            out = _through(enc, to_int16(ref), skip=int(enc.lookahead))[: len(ref)]
            dn.append(dnsmos_scores(out, 48000))
            pq.append(pesq(16000, soxr.resample(x, rate, 16000), soxr.resample(out, 48000, 16000),
                           "wb"))  # fmt: skip
        row: dict[str, float | str] = {
            "application": app, "bitrate": bitrate, "complexity": cx,
            "encode_ms_per_audio_s": round(1000 * best / seconds, 3),
            "kbps": round(size * 8 / seconds / 1000, 1),
            "pesq_wb": round(float(np.mean(pq)), 3),
        }  # fmt: skip
        row |= {f"dnsmos_{k}": round(float(np.mean([d[k] for d in dn])), 3) for k in dn[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--quality", type=int, default=0, help="lines to score through Opus (0-8)")
    p.add_argument("--modes", type=int, default=0, help="lines to score each encoder mode on")
    p.add_argument("--skip-synthetic", action="store_true", help="no rows on the test tone")
    p.add_argument("-o", "--output", type=Path, default=None)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    t = np.arange(int(IN_RATE * a.seconds)) / IN_RATE
    x = 0.3 * np.sin(2 * np.pi * 180 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    x = (x + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    rates = () if a.skip_synthetic else (48000, 24000, 16000)
    rows = [measure(x, r, c, a.seconds) for r in rates for c in (5, 3, 1)]
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
    if a.modes:
        report["modes"] = {
            "what": "Opus 48 kHz, 20 ms frames, SIGNAL_VOICE, by application (audio: SILK+CELT "
            "hybrid; lowdelay: OPUS_APPLICATION_RESTRICTED_LOWDELAY, CELT only), bitrate and "
            "complexity: encode cost on the lines' own audio (best of 3), DNSMOS and wideband "
            "PESQ per line (reference: the line before Opus), means",
            "lines": LINES[: a.modes],
            "rows": mode_rows(a.modes),
        }
    if a.output:
        a.output.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
