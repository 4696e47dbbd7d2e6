"""Levers beyond the refiner's per-band offset, swept for a refined clone (lab analysis).

For each speaker of a set, the zero-shot clone's frames are computed once (probes and the
held-out lines); each variant changes only what comes after the acoustic model, so only the
vocoder runs again. Per variant the server's :class:`TimbreRefiner` fits its offset on top, and
the script records the server-side signals a refiner may fit with (the clip, the mels, the
project's GE2E) beside the lab's d-vector judge (which never chooses anything per speaker: it
shows which server-side signal, if any, points the way the judge does). Variants:

* ``warp`` (with ``--alphas``): a vocal-tract-length warp of the mel axis (piecewise linear,
  a source frequency f moves to alpha * f below a knee at 85 % of 8 kHz), offset fitted on top;
* ``vuv``: two offsets, one for voiced and one for unvoiced frames (a soft weight from the
  frame's 300-1000 Hz level against its 1.7-3.4 kHz level), fitted the same way;
* ``formants``: the median F1-F3 (LPC, both sides at 8 kHz) of the clip and of the zero-shot
  clone's probes, the classical VTLN estimate.

``--gain`` sets the clone gain (EMOSTREAM_CLONE_GAIN). Findings: docs/cloning.md::

    python -m lab.clone_warp --sets validation --val-root DIR --alphas 0.88,0.94,1.0,1.06,1.12 \
        --variants warp,vuv,formants -o OUT.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.heldout import REAL_SPEAKERS, RealSpeaker

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("lab.clone_warp")
FloatArray = npt.NDArray[np.float32]


def band_centres_hz() -> npt.NDArray[np.float64]:
    from emostream.networks.mel import MelConfig, _hz_to_mel, _mel_to_hz

    c = MelConfig()
    lo = _hz_to_mel(np.array([c.fmin], np.float64))[0]
    hi = _hz_to_mel(np.array([c.fmax], np.float64))[0]
    return _mel_to_hz(np.linspace(lo, hi, c.n_mels + 2))[1:-1]


def warp_positions(alpha: float, *, cut: float = 0.85) -> npt.NDArray[np.float64]:
    """For each output band, the fractional source band (piecewise-linear VTLN: a source
    frequency f moves to alpha*f below the knee, the top edge stays)."""
    f = band_centres_hz()
    fmax = 8000.0
    knee = cut * fmax * min(1.0, 1.0 / alpha)  # source knee
    out_knee = alpha * knee
    src = np.where(f <= out_knee, f / alpha,
                   knee + (f - out_knee) * (fmax - knee) / (fmax - out_knee))  # fmt: skip
    return np.interp(src, f, np.arange(len(f), dtype=np.float64))


def warp_mel(mel: FloatArray, pos: npt.NDArray[np.float64]) -> FloatArray:
    i0 = np.clip(np.floor(pos).astype(int), 0, mel.shape[0] - 1)
    i1 = np.clip(i0 + 1, 0, mel.shape[0] - 1)
    w = (pos - i0)[:, None]
    return np.ascontiguousarray(mel[i0] * (1 - w) + mel[i1] * w, dtype=np.float32)


def mfcc_cmn(audio: FloatArray, sr: int, n: int = 20) -> FloatArray:
    """Speech frames' cepstra c1..c(n-1) of the HiFi-GAN log-mel, mean removed."""
    import soxr
    from scipy.fft import dct

    from emostream.networks.mel import mel_spectrogram
    from emostream.voices.cloning.refine import speech_frames

    a = audio if sr == 22050 else soxr.resample(audio, sr, 22050)
    fr = speech_frames(mel_spectrogram(np.asarray(a, np.float32)))
    c = dct(fr, type=2, norm="ortho", axis=0)[1:n]
    return np.asarray(c - c.mean(axis=1, keepdims=True), np.float32)


def knn_distance(clip_c: FloatArray, clone_c: FloatArray) -> float:
    """Mean over the clip's frames of the distance to the nearest clone frame (and back)."""
    a, b = clip_c.T.astype(np.float64), clone_c.T.astype(np.float64)
    d = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2 * a @ b.T
    d = np.sqrt(np.maximum(d, 0))
    return float(0.5 * (d.min(1).mean() + d.min(0).mean()))


FS_FORMANT = 8000


def frame_formants(audio: FloatArray, sr: int, *, order: int = 10) -> npt.NDArray[np.float64]:
    """``[frames, 3]``: F1-F3 (Hz) of the voiced, loud frames of ``audio``, by LPC at 8 kHz
    (so a telephone clip and a wide-band rendering are measured on the same band)."""
    import soxr
    from scipy.linalg import solve_toeplitz

    x = np.asarray(soxr.resample(audio, sr, FS_FORMANT), np.float64)
    n, hop = 200, 80  # 25 ms, 10 ms
    if len(x) < n:
        return np.zeros((0, 3))
    x = np.append(x[0], x[1:] - 0.97 * x[:-1])
    idx = np.arange(n)[None, :] + hop * np.arange((len(x) - n) // hop + 1)[:, None]
    frames = x[idx] * np.hamming(n)[None, :]
    energy = 10 * np.log10((frames**2).sum(1) + 1e-12)
    out = []
    for f in frames[energy > np.percentile(energy, 95) - 20]:
        r = np.correlate(f, f, "full")[n - 1 :]
        if r[0] <= 0 or r[FS_FORMANT // 400 : FS_FORMANT // 60].max() / r[0] < 0.3:
            continue  # silent or not voiced (no autocorrelation peak at a 60-400 Hz pitch)
        try:
            a = solve_toeplitz(r[:order], -r[1 : order + 1])
        except np.linalg.LinAlgError:
            continue
        roots = np.roots(np.concatenate([[1.0], a]))
        roots = roots[roots.imag > 0]
        freq = np.angle(roots) * FS_FORMANT / (2 * np.pi)
        bw = -np.log(np.abs(roots)) * FS_FORMANT / np.pi
        fm = np.sort(freq[(freq > 150) & (freq < 3700) & (bw < 400)])
        if len(fm) >= 3:
            out.append(fm[:3])
    return np.array(out) if out else np.zeros((0, 3))


def median_formants(audio: FloatArray, sr: int) -> npt.NDArray[np.float64]:
    """Median F1-F3 (Hz) over :func:`frame_formants` (NaN when no frame qualified)."""
    f = frame_formants(audio, sr)
    return np.median(f, axis=0) if len(f) else np.full(3, np.nan)


LOW, MID = slice(8, 27), slice(40, 59)  # 300-1000 Hz, 1.7-3.4 kHz (inside a phone band)


def voicing_feature(mel: FloatArray) -> FloatArray:
    """Per frame: low-band minus mid-band log-mel (high for vowels, low for fricatives)."""
    return np.asarray(mel[LOW].mean(0) - mel[MID].mean(0), np.float32)


def threshold(z: FloatArray) -> tuple[float, float]:
    lo, hi = np.percentile(z, [10, 90])
    return float((lo + hi) / 2), float(max(hi - lo, 1e-3) * 0.1)


def voiced_weight(mel: FloatArray, theta: float, tau: float) -> FloatArray:
    return np.asarray(1.0 / (1.0 + np.exp(-(voicing_feature(mel) - theta) / tau)), np.float32)


def refine_vuv(render: Any, frames: dict[str, FloatArray], probes: tuple[str, ...],
               clip_audio: FloatArray, clip_rate: int, *, iterations: int = 2,
               max_offset: float = 2.0) -> tuple[FloatArray, float, float]:  # fmt: skip
    """Two offsets (voiced, unvoiced frames), by analysis through synthesis. ``render(text,
    offsets [2, 80], theta, tau)``. Returns (offsets, theta, tau) of the clone."""
    import soxr

    from emostream.networks.mel import mel_spectrogram

    def speech(mel: FloatArray, window: float = 4.0) -> npt.NDArray[np.bool_]:
        level = mel.mean(axis=0)
        return np.asarray(level > np.percentile(level, 95) - window)

    c22 = soxr.resample(clip_audio, clip_rate, 22050) if clip_rate != 22050 else clip_audio
    cm = mel_spectrogram(np.asarray(c22, np.float32))
    cm = cm[:, speech(cm)]
    tc, sc = threshold(voicing_feature(cm))
    wc = voiced_weight(cm, tc, sc)
    model = np.concatenate([frames[t] for t in probes], axis=1)
    ts, ss = threshold(voicing_feature(model[:, speech(model)]))

    def class_means(mel: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
        v = (mel * w).sum(1) / max(w.sum(), 1e-6)
        u = (mel * (1 - w)).sum(1) / max((1 - w).sum(), 1e-6)
        return v, u

    vc, uc = class_means(cm, wc)
    off = np.zeros((2, 80), np.float32)
    for _ in range(iterations):
        mels, weights = [], []
        for t in probes:
            m = mel_spectrogram(render(t, off, ts, ss))
            k = min(m.shape[1], frames[t].shape[1])
            mels.append(m[:, :k])
            weights.append(voiced_weight(frames[t], ts, ss)[:k])
        mel, ws = np.concatenate(mels, axis=1), np.concatenate(weights)
        keep = speech(mel)
        vs, us = class_means(mel[:, keep], ws[keep])
        off[0] += vc - vs
        off[1] += uc - us
        p = float(ws[keep].mean())
        off -= (p * off[0] + (1 - p) * off[1]).mean()
        off = np.clip(off, -max_offset, max_offset).astype(np.float32)
    return off, ts, ss


def run_set(own: Any, speakers: tuple[RealSpeaker, ...], texts: list[str], *, gain: float,
            alphas: list[float], variants: list[str]) -> dict[str, Any]:  # fmt: skip
    import soxr

    from emostream.voices.acoustic import clone_embedding, speaker_centre
    from emostream.voices.base import Controls
    from emostream.voices.cloning.clip import prepare_clip
    from emostream.voices.cloning.encoder import SpeakerEncoder, cosine
    from emostream.voices.cloning.refine import PROBES, TimbreRefiner, apply_timbre
    from lab.acoustic_quality import MODEL_SR, _wav_bytes
    from lab.clone_refine import source_rate
    from lab.dvector import DVectorJudge
    from lab.heldout import speaker_audio

    judge, ge2e = DVectorJudge(), SpeakerEncoder()
    centre = speaker_centre(own.speakers)
    out: dict[str, Any] = {}
    for spk in speakers:
        if not spk.available():
            continue
        cond, ref = speaker_audio(spk)
        clip = prepare_clip(_wav_bytes(cond, 16000))
        voice = own.voice(spk.name, clone_embedding(ge2e.embed_clip(clip), centre, gain))
        frames = {t: voice.acoustic(t, Controls()).frames for t in (*PROBES, *texts)}
        ref_d, ref_g = judge.embed(ref), ge2e.embed_utterance(ref)
        clip_c = mfcc_cmn(clip.audio, clip.sample_rate)
        rate = source_rate(spk)
        rows: dict[str, Any] = {}
        if "formants" in variants:
            ident = np.concatenate([np.asarray(voice.decode(frames[t]), np.float32)
                                    for t in PROBES])  # fmt: skip
            fc, fs = median_formants(clip.audio, clip.sample_rate), median_formants(ident, MODEL_SR)
            rows["formants"] = {"clip": fc.round().tolist(), "clone": fs.round().tolist(),
                                "ratio": (fc / fs).round(3).tolist()}  # fmt: skip
            print(spk.name, "formants", rows["formants"], flush=True)
        for alpha in alphas:
            pos = warp_positions(alpha)
            last: dict[str, FloatArray] = {}

            def render(t: str, tim: Any, pos: Any = pos, last: Any = last, voice: Any = voice,
                       frames: Any = frames) -> FloatArray:  # fmt: skip
                a = np.asarray(voice.decode(apply_timbre(warp_mel(frames[t], pos), tim)),
                               np.float32)  # fmt: skip
                last[t] = a
                return a

            t0 = time.perf_counter()
            res = TimbreRefiner(embed=ge2e.embed_utterance).refine(
                render, clip.audio, clip.sample_rate, source_rate=rate
            )
            probes = np.concatenate([last[t] for t in PROBES])
            evals = [np.asarray(soxr.resample(render(t, res.timbre), MODEL_SR, 16000),
                                np.float32) for t in texts]  # fmt: skip
            row = {
                **res.summary(),
                "knn_after": round(knn_distance(clip_c, mfcc_cmn(probes, MODEL_SR)), 4),
                "dvector": round(
                    float(np.mean([judge.similarity(judge.embed(a), ref_d) for a in evals])), 4
                ),
                "ge2e_ref": round(
                    float(np.mean([cosine(ge2e.embed_utterance(a), ref_g) for a in evals])), 4
                ),
                "s": round(time.perf_counter() - t0, 1),
            }
            # knn before offset: warped, identity timbre (re-render the probes once)
            rows[f"{alpha:.3f}"] = row
            print(spk.name, alpha, {k: row[k] for k in ("spectral_gap_db_before",
                  "spectral_gap_db_after", "ge2e_similarity_after", "knn_after", "dvector",
                  "ge2e_ref", "s")}, flush=True)  # fmt: skip
        if "vuv" in variants:

            def render_vuv(t: str, off: Any, th: float, tau: float, voice: Any = voice,
                           frames: Any = frames) -> FloatArray:  # fmt: skip
                w = voiced_weight(frames[t], th, tau)
                corr = off[0][:, None] * w[None] + off[1][:, None] * (1 - w[None])
                return np.asarray(
                    voice.decode(np.ascontiguousarray(frames[t] + corr, np.float32)), np.float32
                )

            t0 = time.perf_counter()
            off, th, tau = refine_vuv(render_vuv, frames, PROBES, clip.audio, clip.sample_rate)
            evals = [np.asarray(soxr.resample(render_vuv(t, off, th, tau), MODEL_SR, 16000),
                                np.float32) for t in texts]  # fmt: skip
            probes = np.concatenate([render_vuv(t, off, th, tau) for t in PROBES])
            p16 = np.asarray(soxr.resample(probes, MODEL_SR, 16000), np.float32)
            c16 = np.asarray(clip.audio, np.float32)
            row = {
                "ge2e_similarity_after": round(
                    cosine(ge2e.embed_utterance(p16), ge2e.embed_utterance(c16)), 4
                ),
                "knn_after": round(knn_distance(clip_c, mfcc_cmn(probes, MODEL_SR)), 4),
                "dvector": round(
                    float(np.mean([judge.similarity(judge.embed(a), ref_d) for a in evals])), 4
                ),
                "ge2e_ref": round(
                    float(np.mean([cosine(ge2e.embed_utterance(a), ref_g) for a in evals])), 4
                ),
                "offset_vu_rms": round(float(np.sqrt(np.mean((off[0] - off[1]) ** 2))), 3),
                "s": round(time.perf_counter() - t0, 1),
            }
            rows["vuv"] = row
            print(spk.name, "vuv", row, flush=True)
        out[spk.name] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    from lab.acoustic_quality import OwnModel
    from lab.clone_gain import validation_speakers
    from lab.heldout import heldout_texts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", default="validation")
    p.add_argument("--val-root", default="")
    p.add_argument("--speakers", default="", help="comma list to keep (default all)")
    p.add_argument("--gain", type=float, default=1.3)
    p.add_argument("--alphas", default="0.88,0.94,1.0,1.06,1.12")
    p.add_argument("--variants", default="warp")
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--texts", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path="cpu", lite=Path(a.lite),
                   threads=a.threads)  # fmt: skip
    texts = [t for t in heldout_texts("en") if own.encodable(t)][:40][-a.texts :]
    alphas = [float(x) for x in a.alphas.split(",") if x]
    report: dict[str, Any] = {"command": " ".join(sys.argv), "sets": {}}
    for name in a.sets.split(","):
        speakers = REAL_SPEAKERS if name == "test" else validation_speakers(Path(a.val_root))
        if a.speakers:
            keep = set(a.speakers.split(","))
            speakers = tuple(s for s in speakers if s.name in keep)
        report["sets"][name] = run_set(own, speakers, texts, gain=a.gain, alphas=alphas,
                                       variants=a.variants.split(","))  # fmt: skip
        Path(a.output).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
