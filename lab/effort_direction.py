"""``python -m lab.effort_direction``: where vocal effort can be put on the CPU path — what the
acoustic model's energy input does to its mels, and what the light vocoder makes of a level
change and of a spectral-balance change in its input.

    python -m lab.effort_direction [--speakers af_heart,...] [--texts 8] -o FILE

1. **The model's own response**: each speaker says ``--texts`` lines of the training text
   (``models/corpus/text``: not the held-out lines the lab scores) through the shipped ONNX
   model with its energy input at ``--low`` and ``--high`` (durations do not depend on it, so
   the frames line up). Over the loud frames, per mel band: the mean log-mel difference ``d``
   (nats), each band's mean share ``w`` of the frame's power (magnitude squared times the
   band's width: the triangles are Slaney-normalised), the level part ``L = 20/ln 10 · Σ w·d``
   (dB) and the shape ``(d − Σ w·d) / L`` (nats per dB, level taken out, smoothed over 5
   bands), set beside the shape of :mod:`emostream.voices.effort` (ANSI S3.5-1997's
   normal-to-loud speech spectra) by correlation.
2. **The light vocoder** (``--vocoder-texts`` lines of the first speaker): RMS level and the
   2–8 kHz vs 0–1 kHz balance of its audio when the model's mels get a uniform ±6 dB, and when
   they get :func:`emostream.voices.effort.effort_offset` for ±6 dB (balance only).

What it found for v0.4 (2026-12-07) decided :mod:`emostream.voices.effort`: the energy input
moves the mels by ~4 dB per 6 dB asked with no spectral change beyond the level (no learned
"louder is brighter"), and the light vocoder turns a uniform ±6 dB in its input into about
±1 dB of audio, while it renders a balance change. So the level became a gain on the audio and
the balance came from the human vocal-effort spectra.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.acoustic_quality import REPO, run_record

log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float32]
SPEAKERS = "af_heart,am_michael,bf_emma,bm_george,zf_xiaoxiao,zm_yunxi"


def band_widths() -> npt.NDArray[np.float64]:
    """Each mel band's relative width (1 / its Slaney triangle's height)."""
    from emostream.networks.mel import mel_filterbank

    fb = mel_filterbank().astype(np.float64)
    widths: npt.NDArray[np.float64] = 1.0 / fb.max(axis=1)
    out: npt.NDArray[np.float64] = widths / widths.sum()
    return out


def loud_frames(mel: FloatArray) -> npt.NDArray[np.bool_]:
    """``mel`` ``[T, 80]``: frames whose loudest band is within 3 nats of the 95th percentile."""
    peak = mel.max(axis=1)
    loud: npt.NDArray[np.bool_] = peak > np.percentile(peak, 95) - 3.0
    return loud


def power_share(mel: FloatArray, widths: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each band's share of each frame's power, ``[T, 80]``."""
    p = widths[None] * np.exp(2.0 * mel.astype(np.float64))
    share: npt.NDArray[np.float64] = p / p.sum(axis=1, keepdims=True)
    return share


def smooth(x: npt.NDArray[np.float64], taps: int = 5) -> npt.NDArray[np.float64]:
    kernel = np.hanning(taps + 2)[1:-1]
    kernel /= kernel.sum()
    padded = np.pad(x, taps // 2, mode="edge")
    out: npt.NDArray[np.float64] = np.convolve(padded, kernel, mode="valid")
    return out


def measure(model: Any, g2p: Any, speakers: dict[str, FloatArray], texts: dict[str, list[str]],
            low: float, high: float) -> dict[str, Any]:  # fmt: skip
    from emostream.networks.acoustic_onnx import Prosody, pack_one

    widths = band_widths()
    diffs, shares, per_speaker = [], [], {}
    for name, emb in speakers.items():
        lang = "zh" if name.startswith("z") else "en"
        mine_d, mine_w = [], []
        for text in texts[lang]:
            seq = g2p(text)
            mels = []
            for e in (low, high):
                inputs = pack_one(seq.ids(), seq.tones, seq.langs, emb, 0, 1.0, Prosody(energy=e))
                mels.append(model.infer(inputs)[0])
            lo, hi = mels
            if lo.shape != hi.shape:  # durations moved: not comparable frame by frame
                continue
            loud = loud_frames(0.5 * (lo + hi))
            mine_d.append((hi - lo)[loud].astype(np.float64))
            mine_w.append(power_share(0.5 * (lo + hi)[loud], widths))
        d, w = np.concatenate(mine_d), np.concatenate(mine_w)
        level = 20.0 / math.log(10.0) * float(np.mean(np.sum(w * d, axis=1)))
        per_speaker[name] = {"frames": len(d), "mel_level_db": round(level, 3)}
        diffs.append(d)
        shares.append(w)
    d_all, w_all = np.concatenate(diffs), np.concatenate(shares)
    d_mean, w_mean = d_all.mean(axis=0), w_all.mean(axis=0)
    level_nats = float(np.sum(w_mean * d_mean))
    level_db = 20.0 / math.log(10.0) * level_nats
    shape = smooth((d_mean - level_nats) / level_db)
    shape -= float(np.sum(w_mean * shape))  # smoothing moved the level a hair: back to 0
    return {
        "per_speaker": per_speaker,
        "mel_level_db": round(level_db, 3),
        "asked_db": round(20.0 * math.log10(high / low), 3),
        "difference_nats": [round(float(x), 5) for x in d_mean],
        "power_share": [round(float(x), 6) for x in w_mean],
        "shape_nats_per_db": [round(float(x), 6) for x in shape],
    }


def vocoder_check(model: Any, g2p: Any, emb: FloatArray, texts: list[str],
                  lite: Path) -> dict[str, Any]:  # fmt: skip
    """What the light vocoder makes of a uniform log-mel offset (level) and of
    :func:`emostream.voices.effort.effort_offset` (balance): RMS level and the 2–8 kHz vs
    0–1 kHz balance of its audio, mean change over ``texts``."""
    from emostream.networks.acoustic_onnx import Prosody, pack_one
    from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder
    from emostream.voices.effort import apply_effort, effort_offset

    voc = OnnxLiteVocoder(lite, threads=1)

    def figures(m: FloatArray) -> tuple[float, float]:
        x = np.asarray(voc(np.ascontiguousarray(m, dtype=np.float32)), np.float64)
        spec = np.abs(np.fft.rfft(x)) ** 2
        f = np.fft.rfftfreq(len(x), 1 / 22050)
        tilt = 10 * np.log10(spec[(f > 2000) & (f < 8000)].sum() / spec[f < 1000].sum())
        return 10 * math.log10(float(np.mean(x**2))), float(tilt)

    changes: dict[str, list[tuple[float, float]]] = {}
    for text in texts:
        seq = g2p(text)
        inputs = pack_one(seq.ids(), seq.tones, seq.langs, emb, 0, 1.0, Prosody())
        mel = np.ascontiguousarray(model.infer(inputs)[0].T)
        base = figures(mel)
        for db in (-6.0, 6.0):
            for name, moved in (
                (f"uniform_{db:+.0f}db", mel + np.float32(db * math.log(10) / 20)),
                (f"effort_balance_{db:+.0f}db", apply_effort(mel, effort_offset(mel, db))),
            ):
                level, tilt = figures(moved)
                changes.setdefault(name, []).append((level - base[0], tilt - base[1]))
    return {
        "texts": texts,
        **{
            name: {"level_db": round(float(np.mean([c[0] for c in v])), 2),
                   "hf_balance_db": round(float(np.mean([c[1] for c in v])), 2)}
            for name, v in changes.items()
        },
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.effort_direction",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--speakers", default=SPEAKERS)
    p.add_argument("--texts", type=int, default=8)
    p.add_argument("--low", type=float, default=0.7)
    p.add_argument("--high", type=float, default=1.4)
    p.add_argument("--vocoder-texts", type=int, default=4)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    from emostream.networks.acoustic_onnx import OnnxAcousticModel
    from emostream.text.phonemes import G2P

    model = OnnxAcousticModel(Path(a.model), threads=1)
    g2p = G2P()
    with np.load(a.speakers_npz) as z:
        table = {k: z[k].astype(np.float32) for k in z.files}
    speakers = {s: table[s] for s in a.speakers.split(",") if s}
    texts = {}
    for lang in ("en", "zh"):
        lines = (REPO / f"models/corpus/text/{lang}.txt").read_text(encoding="utf-8").splitlines()
        lines = [x.strip() for x in lines if x.strip()]
        texts[lang] = lines[:: max(1, len(lines) // a.texts)][: a.texts]
    found = measure(model, g2p, speakers, texts, a.low, a.high)
    from emostream.voices.effort import band_slopes

    ansi = band_slopes().astype(np.float64)
    ansi_shape = (ansi - float(np.sum(np.asarray(found["power_share"]) * ansi))) * math.log(10) / 20
    shape = np.asarray(found["shape_nats_per_db"], np.float64)
    found["effort_module_shape_nats_per_db"] = [round(float(x), 6) for x in ansi_shape]
    found["correlation_model_vs_effort_module"] = round(
        float(np.corrcoef(shape, ansi_shape)[0, 1]), 3
    )
    found["shape_range_nats_per_db"] = {"model": round(float(np.ptp(shape)), 4),
                                        "effort_module": round(float(np.ptp(ansi_shape)), 4)}  # fmt: skip
    check = vocoder_check(model, g2p, speakers[next(iter(speakers))],
                          texts["en"][: a.vocoder_texts], Path(a.lite))  # fmt: skip
    report = run_record("lab.effort_direction", argv) | {
        "model": str(Path(a.model).name),
        "what": "the acoustic model's log-mel response to its energy input "
                f"({a.low} -> {a.high}) over loud frames; shape = that response with its "
                "level taken out, per dB of it, smoothed over 5 bands (nats per dB), beside "
                "emostream.voices.effort's (ANSI S3.5-1997 normal-to-loud, level taken out on "
                "the same power share); then the light vocoder's audio for a uniform and for "
                "an effort-balance change of its input mels",
        "speakers": list(speakers), "texts_per_speaker": a.texts,
        **found, "vocoder_check": check,
    }  # fmt: skip
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    big = ("difference_nats", "power_share", "shape_nats_per_db", "effort_module_shape_nats_per_db")
    print(json.dumps({k: v for k, v in report.items() if k not in big}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
