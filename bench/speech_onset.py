"""When does the listener hear speech? Onset of the first word and pauses between sentences.

The first packet's latency (``emostream bench first-audio``) says when audio starts; this says
how much of that audio is silence before the first word, and how long the silences between
sentences are, on the served path (catalog voices, the streamer, 24 kHz PCM).

    .venv/bin/python bench/speech_onset.py [--voices joe,af_heart,...] [--texts 12] [-o OUT.json]

Speech = 10 ms frames louder than the utterance's loud level (95th percentile of frame RMS)
minus 35 dB. Onset: start of the first speech frame. Gap: the longest run of non-speech frames
between the first and last speech frame of a two-sentence text (the pause between the two
sentences, as the listener hears it). Texts: the project's held-out lines (never trained on),
one sentence alone for the onset, two joined for the gap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.benchmarks.first_audio import host_info
from emostream.config import Settings
from emostream.stream.oneshot import synthesize
from emostream.voices.catalog import load_catalog
from train import sentences

RATE = 24000
FRAME = RATE // 100  # 10 ms
FLOOR_DB = 35.0


def speech_frames(pcm: npt.NDArray[np.int16]) -> npt.NDArray[np.bool_]:
    x = pcm.astype(np.float32) / 32768.0
    n = len(x) // FRAME
    if n == 0:
        return np.zeros(0, dtype=bool)
    rms = np.sqrt(np.mean(x[: n * FRAME].reshape(n, FRAME) ** 2, axis=1) + 1e-12)
    loud = float(np.percentile(rms, 95))
    return rms > loud * 10 ** (-FLOOR_DB / 20)


def onset_ms(pcm: npt.NDArray[np.int16]) -> float:
    speech = speech_frames(pcm)
    idx = np.flatnonzero(speech)
    return float(idx[0] * 10) if len(idx) else float("nan")


def longest_gap_ms(pcm: npt.NDArray[np.int16]) -> float:
    speech = speech_frames(pcm)
    idx = np.flatnonzero(speech)
    if len(idx) < 2:
        return float("nan")
    inner = ~speech[idx[0] : idx[-1] + 1]
    best = run = 0
    for quiet in inner:
        run = run + 1 if quiet else 0
        best = max(best, run)
    return float(best * 10)


def _pct(values: list[float], q: float) -> float:
    v = [x for x in values if not np.isnan(x)]
    return round(float(np.percentile(v, q)), 1) if v else float("nan")


def _git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=False,
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--voices", default="joe,af_heart,am_michael,bf_emma,zf_xiaoxiao,zm_yunxi")
    p.add_argument("--texts", type=int, default=12)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    catalog = load_catalog(Settings())
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/speech_onset.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "host": host_info(),
        "git_commit": _git_commit(),
        "speech_threshold": f"frame RMS > 95th percentile - {FLOOR_DB} dB (10 ms frames)",
        "voices": {},
    }
    for vid in [v for v in a.voices.split(",") if v]:
        voice = catalog.get(vid)
        if voice is None:
            raise SystemExit(f"voice {vid!r} is not served here")
        lang = "zh" if voice.info.language.startswith("zh") else "en"
        lines = sentences.heldout(lang)[: a.texts * 2]
        onsets, gaps = [], []
        for i in range(0, len(lines) - 1, 2):
            onsets.append(onset_ms(asyncio.run(synthesize(voice, lines[i], sample_rate=RATE))))
            both = lines[i].rstrip() + " " + lines[i + 1].lstrip()
            gaps.append(longest_gap_ms(asyncio.run(synthesize(voice, both, sample_rate=RATE))))
        report["voices"][vid] = {
            "language": lang,
            "onset_ms": {"p50": _pct(onsets, 50), "p95": _pct(onsets, 95), "values": onsets},
            "pause_between_sentences_ms": {
                "p50": _pct(gaps, 50),
                "p95": _pct(gaps, 95),
                "values": gaps,
            },
        }
        r = report["voices"][vid]
        print(f"{vid:12s} onset p50 {r['onset_ms']['p50']:6.1f} ms p95 {r['onset_ms']['p95']:6.1f}"
              f" | pause between sentences p50 {r['pause_between_sentences_ms']['p50']:6.1f} ms"
              f" p95 {r['pause_between_sentences_ms']['p95']:6.1f}", flush=True)  # fmt: skip
    if a.output:
        Path(a.output).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
