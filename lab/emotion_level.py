"""``python -m lab.emotion_level``: what each emotion label and the energy control do to level,
rate, F0, intelligibility and DNSMOS, through the served path.

    python -m lab.emotion_level --voices af_heart,am_michael,zf_xiaoxiao --wer-voices af_heart \\
        [--texts 20] [--prosody-texts 8] [--dnsmos-texts 5] [--before OLD.json] -o FILE

Every voice speaks the held-out lines of its language (``models/corpus/heldout``) exactly as a
server built from ``Settings`` serves them (``load_catalog`` + the chunked streamer, s16 PCM
at 24 kHz, so the output's clipping counts) once per setting: neutral, each label at
intensity 1, ``energy`` 0.7 and 1.4, and angry at intensity 0.5. Per clip: F0 mean and range (semitones), ``energy_db`` (mean dB of
pyworld-voiced 10 ms frames, the model card's prosody measure), ``active_db`` (power mean of the
10 ms frames within 40 dB of the loudest: the speech's RMS level), ``hf_balance_db`` (power at
2–8 kHz over power below 1 kHz: brighter is higher), words (Mandarin: characters) per second of
speech, peak dBFS and the share of samples at full scale; Whisper base WER / CER on
``--wer-voices`` (``--texts`` lines; the other voices speak ``--prosody-texts``), DNSMOS P.835
OVRL and P.808 on the first ``--dnsmos-texts``. The summary gives each setting's mean change
against neutral on the same lines, and the issue's checks (angry vs sad level and rate, energy
1.4 vs 0.7 against the 20·log10(1.4/0.7) = 6.02 dB it asks, each label's WER against
neutral's).

``--before`` puts an earlier run of this tool (the code before a change) beside this one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.stream.oneshot import synthesize
from emostream.text.emotion import EMOTIONS
from emostream.voices.base import Controls
from emostream.voices.catalog import load_catalog
from lab.acoustic_quality import _clean, corpus_rate, dnsmos_scores, run_record, score_row
from lab.asr import zh_chars
from lab.quality import prosody, words
from train import sentences

log = logging.getLogger(__name__)
RATE = 24000
FloatArray = npt.NDArray[np.float32]

SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("neutral", {}),
    *[(e, {"emotion": e, "intensity": 1.0}) for e in EMOTIONS[1:]],
    ("angry@0.5", {"emotion": "angry", "intensity": 0.5}),
    ("energy=0.7", {"energy": 0.7}),
    ("energy=1.4", {"energy": 1.4}),
]
METRICS = ("f0_mean_st", "f0_range_st", "energy_db", "active_db", "rate", "peak_dbfs",
           "hf_balance_db")  # fmt: skip


def level(audio: FloatArray, rate: int) -> dict[str, float]:
    """``active_db``: power mean of the 10 ms frames within 40 dB of the loudest (dBFS);
    ``peak_dbfs``; ``full_scale``: the share of samples at the int16 limits."""
    hop = rate // 100
    n = len(audio) // hop
    frames = audio[: n * hop].astype(np.float64).reshape(n, hop)
    db = 10.0 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    active = db > db.max() - 40.0
    peak = float(np.max(np.abs(audio))) if len(audio) else 0.0
    return {
        "active_db": float(10.0 * np.log10(np.mean(10.0 ** (db[active] / 10.0)))),
        "peak_dbfs": float(20.0 * np.log10(max(peak, 1e-9))),
        "full_scale": float(np.mean(np.abs(audio) >= 32767.0 / 32768.0)),
    }


def hf_balance(audio: FloatArray, rate: int) -> float:
    """Spectral balance: power at 2–8 kHz over power below 1 kHz (dB), over the 1024-sample
    Hann frames within 40 dB of the loudest (brighter voices score higher)."""
    n, hop = 1024, 512
    if len(audio) < n:
        return float("nan")
    idx = np.arange(0, len(audio) - n + 1, hop)[:, None] + np.arange(n)[None]
    spec = np.abs(np.fft.rfft(audio.astype(np.float64)[idx] * np.hanning(n), axis=1)) ** 2
    total = spec.sum(axis=1)
    keep = 10 * np.log10(total + 1e-20) > 10 * np.log10(total.max() + 1e-20) - 40.0
    f = np.fft.rfftfreq(n, 1.0 / rate)
    power = spec[keep].sum(axis=0)
    high, low = power[(f >= 2000) & (f < 8000)].sum(), power[f < 1000].sum()
    return float(10.0 * np.log10(max(high, 1e-20) / max(low, 1e-20)))


def measure(audio: FloatArray, text: str, lang: str) -> dict[str, float]:
    units = len(zh_chars(text)) if lang == "zh" else len(words(text))
    p = asdict(prosody(audio, RATE, units))
    p["rate"] = p.pop("words_per_s")
    p["hf_balance_db"] = hf_balance(audio, RATE)
    return {k: round(v, 4) for k, v in {**p, **level(audio, RATE)}.items()}


def _mean(xs: list[float]) -> float:
    return round(statistics.fmean(xs), 4) if xs else float("nan")


def summarise(rows: list[dict[str, Any]], lang: str) -> dict[str, Any]:
    """Per setting: means, the change against neutral on the same lines (rate as a ratio),
    error rates (corpus and mean over clips) and DNSMOS."""
    base = {r["text"]: r for r in rows if r["setting"] == "neutral"}
    key = "wer" if lang == "en" else "cer"
    out: dict[str, Any] = {}
    for name, _ in SETTINGS:
        mine = [r for r in rows if r["setting"] == name]
        if not mine:
            continue
        entry: dict[str, Any] = {"clips": len(mine)}
        entry.update({k: _mean([r[k] for r in mine]) for k in METRICS})
        entry["full_scale_share"] = _mean([r["full_scale"] for r in mine])
        if name != "neutral":
            delta = {k: _mean([r[k] - base[r["text"]][k] for r in mine]) for k in METRICS}
            delta["rate_ratio"] = _mean([r["rate"] / base[r["text"]]["rate"] for r in mine])
            entry["vs_neutral"] = delta
        scored = [r for r in mine if key in r]
        if scored:
            entry[key] = corpus_rate(scored, key)
            entry[f"{key}_mean"] = _mean([r[key] for r in scored])
        dn = [r["dnsmos"] for r in mine if "dnsmos" in r]
        if dn:
            entry["dnsmos"] = {k: _mean([d[k] for d in dn]) for k in ("ovrl", "p808")}
        out[name] = entry
    return out


LEVEL_SETTINGS = ("neutral", "angry", "sad", "angry@0.5", "energy=0.7", "energy=1.4")


def checks(summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's criteria on one voice's summary (the level ones when their settings ran);
    ``wer_lines_worse_better``: per label, lines whose WER is above / below neutral's."""
    out = level_checks(summary) if all(k in summary for k in LEVEL_SETTINGS) else {}
    n = summary["neutral"]
    for key in ("wer", "cer"):
        if key in n:
            out[f"{key}_points_vs_neutral"] = {
                name: round(100.0 * (e[key] - n[key]), 2)
                for name, e in summary.items()
                if name != "neutral" and key in e
            }
            base = {r["text"]: r[key] for r in rows if r["setting"] == "neutral" and key in r}
            out[f"{key}_lines_worse_better"] = {
                name: [sum(r[key] > base[r["text"]] for r in mine),
                       sum(r[key] < base[r["text"]] for r in mine)]
                for name in summary
                if name != "neutral"
                and (mine := [r for r in rows if r["setting"] == name and key in r])
            }  # fmt: skip
    if "dnsmos" in n:
        out["dnsmos_vs_neutral"] = {
            name: {k: round(e["dnsmos"][k] - n["dnsmos"][k], 3) for k in ("ovrl", "p808")}
            for name, e in summary.items()
            if name != "neutral" and "dnsmos" in e
        }
    return out


def level_checks(summary: dict[str, Any]) -> dict[str, Any]:
    """Angry vs sad level, rate and F0; energy 1.4 vs 0.7 against what it asks; angry at
    intensity 0.5 against 1 (0.5 when the effort interpolates linearly in dB)."""
    a, s = summary["angry"], summary["sad"]
    asked = 20.0 * math.log10(1.4 / 0.7)
    lo, hi = summary["energy=0.7"]["vs_neutral"], summary["energy=1.4"]["vs_neutral"]
    out: dict[str, Any] = {
        "angry_vs_sad_active_db": round(a["active_db"] - s["active_db"], 2),
        "angry_vs_sad_energy_db": round(a["energy_db"] - s["energy_db"], 2),
        "angry_vs_sad_rate_ratio": round(
            a["vs_neutral"]["rate_ratio"] / s["vs_neutral"]["rate_ratio"], 3
        ),
        "angry_vs_sad_f0_st": round(a["f0_mean_st"] - s["f0_mean_st"], 2),
        "angry_vs_sad_hf_balance_db": round(a["hf_balance_db"] - s["hf_balance_db"], 2),
        "energy_1.4_vs_0.7_asked_db": round(asked, 2),
        "energy_1.4_vs_0.7_active_db": round(hi["active_db"] - lo["active_db"], 2),
        "energy_1.4_vs_0.7_energy_db": round(hi["energy_db"] - lo["energy_db"], 2),
        "angry_half_over_full_active_db": round(
            summary["angry@0.5"]["vs_neutral"]["active_db"] / a["vs_neutral"]["active_db"], 3
        )
        if a["vs_neutral"]["active_db"]
        else None,
    }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.emotion_level",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--voices", default="af_heart,am_michael,zf_xiaoxiao")
    p.add_argument("--wer-voices", default="af_heart")
    p.add_argument("--texts", type=int, default=20, help="lines per setting (--wer-voices)")
    p.add_argument("--prosody-texts", type=int, default=8, help="lines for the other voices")
    p.add_argument("--dnsmos-texts", type=int, default=5)
    p.add_argument("--settings", default="", help="comma list of setting names (default all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vocoder", default="auto", help="auto (lite on cpu), lite or v1")
    p.add_argument("--before", default=None, help="an earlier run's JSON, put beside this one")
    p.add_argument("--label", default="", help="what this run is (e.g. the commit's change)")
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    t0 = time.time()
    from lab.asr import whisper_base

    catalog = load_catalog(Settings(cpu_threads=a.threads, vocoder=a.vocoder))
    wer_voices = {v for v in a.wer_voices.split(",") if v}
    asr = whisper_base(threads=a.threads) if wer_voices else None
    chosen = [s for s in SETTINGS if not a.settings or s[0] in a.settings.split(",")]
    report: dict[str, Any] = run_record("lab.emotion_level", argv) | {
        "label": a.label,
        "path": "served: load_catalog(Settings()) + stream.oneshot.synthesize, s16 24 kHz",
        "vocoder": a.vocoder,
        "asr": None if asr is None else asr.name,
        "dnsmos": "speechmos dnsmos P.835 OVRL, P.808",
        "voices": {},
    }
    for vid in [v for v in a.voices.split(",") if v]:
        voice = catalog.get(vid)
        if voice is None:
            raise SystemExit(f"voice {vid!r} is not served by these settings")
        lang = "zh" if voice.info.language.startswith("zh") else "en"
        n = a.texts if vid in wer_voices else a.prosody_texts
        texts = sentences.heldout(lang)[:n]
        rows: list[dict[str, Any]] = []
        for name, controls in chosen:
            for i, text in enumerate(texts):
                pcm = asyncio.run(synthesize(voice, text, Controls(**controls), sample_rate=RATE))
                audio = pcm.astype(np.float32) / 32768.0
                row: dict[str, Any] = {"setting": name, "text": text,
                                       "seconds": round(len(audio) / RATE, 3),
                                       **measure(audio, text, lang)}  # fmt: skip
                if asr is not None and vid in wer_voices:
                    row["asr"] = asr(audio, RATE, language=lang)
                    score_row(row, lang)
                if i < a.dnsmos_texts:
                    row["dnsmos"] = dnsmos_scores(audio, RATE)
                rows.append(row)
            log.info("%s %s done (%.0f s)", vid, name, time.time() - t0)
        summary = summarise(rows, lang)
        entry: dict[str, Any] = {"language": lang, "texts": len(texts), "summary": summary}
        if "neutral" in summary:
            entry["checks"] = checks(summary, rows)
            log.info("%s checks: %s", vid, json.dumps(entry["checks"]))
        entry["utterances"] = rows
        report["voices"][vid] = entry
    report["wall_s"] = round(time.time() - t0, 1)
    if a.before:
        before = json.loads(Path(a.before).read_text(encoding="utf-8"))
        report = {"before": before, "after": report,
                  "comparison": {v: {"before": before["voices"].get(v, {}).get("checks"),
                                     "after": e.get("checks")}
                                 for v, e in report["voices"].items()}}  # fmt: skip
    text = json.dumps(_clean(report), indent=1, ensure_ascii=False, allow_nan=False)
    if a.output:
        Path(a.output).parent.mkdir(parents=True, exist_ok=True)
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    brief = report.get("comparison") or {v: e.get("checks") for v, e in report["voices"].items()}
    print(json.dumps(_clean(brief), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
