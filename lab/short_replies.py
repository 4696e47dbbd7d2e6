"""``python -m lab.short_replies``: one- to three-word chat replies on the CPU path, and what
happens to their last sound.

Question: held-out one-word replies ("Yep.") come back from Whisper as "Yeah." / "Yabba". Is the
final unvoiced consonant cut by the server's silence trim
(:func:`emostream.voices.acoustic.trim_silence`), wrong in the front end, too short in the
model's durations, or there but weak?

A new set of short replies (:data:`REPLIES`: mostly ending in p, t, k, s, f, th, tʃ; a few
controls ending in vowels or voiced sounds; checked at run time against the held-out lines and
the training corpus) is spoken by stock speakers of the model on the CPU path (ONNX acoustic
model + light vocoder, :class:`lab.acoustic_quality.OwnModel`) and by the teacher (Kokoro,
same phonemes, same speakers, :class:`lab.acoustic_quality.Teacher`); Whisper base
transcribes (:mod:`lab.asr`, WER after Whisper's normaliser, :func:`score_row`). Systems:

* ``model``: the voice as served (``split_latents``: trim, then the vocoder);
* ``model_untrimmed``: the same mel and durations without the trim;
* ``model_padded`` (``--padded``): ``model``'s audio with 0.3 s of silence each side (does
  Whisper need more silence around a short clip?);
* ``served``: the product path (``load_catalog`` + :func:`emostream.stream.oneshot.synthesize`,
  normalize + chunked decode, 24 kHz);
* ``teacher``: Kokoro.

Per model utterance: units and frames before/after the trim, the frames the trim took from
phones (not punctuation/pads), the loudest 10 ms of the audio the trim removed, the last
150 ms as a 10 ms RMS envelope (dB re the utterance's loudest 10 ms), the final phone's
duration and level (all bands and above 2 kHz), and the same final-phone figures for the
teacher (its durations: 25 ms frames).

Prints a summary; ``-o`` writes the JSON report. ("Yep." is also a held-out line; the other 39
are new.)

Found 2026-12-06 (v0.4, light vocoder v0.2, 40 replies x 4 stock + 4 held-out voices): the end
trim never removed audible sound (loudest removed 10 ms <= -46 dB re peak), the front end's
phonemes are the teacher's, and the model's last phone is as long and as loud as the teacher's;
the teacher fails the same one-word lines. But the lead trim, cut at the ``^`` boundary, took
the first consonant's onset (263 of 320 clips lost > -40 dB of sound); fixed in ``trim_silence``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.voices.cloning.clip import frame_db
from lab.acoustic_quality import (
    MODEL_SR,
    REPO,
    TEACHER_SR,
    OwnModel,
    Teacher,
    _relpath,
    _write,
    intelligibility_summary,
    run_record,
    score_row,
)

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
HOP = 256
TEACHER_FRAME = 600  # samples per Kokoro duration frame at 24 kHz (25 ms)
SERVED_SR = 24000
VOICES = ("af_heart", "am_michael", "bf_emma", "bm_george")
PAD_S = 0.3
TAIL_MS = 150
WIN_MS = 10

# Written for this check (not the held-out lines, not the corpus; checked at run time).
# (text, final sound class): "unvoiced" final p t k s f θ tʃ; "control" a vowel or voiced sound.
REPLIES: list[tuple[str, str]] = [
    ("Yep.", "unvoiced"), ("Nope.", "unvoiced"), ("Yup.", "unvoiced"), ("Bet.", "unvoiced"),
    ("Facts.", "unvoiced"), ("Oof.", "unvoiced"), ("Welp.", "unvoiced"),
    ("Just wait.", "unvoiced"), ("Not yet.", "unvoiced"), ("Got it.", "unvoiced"),
    ("Nice shot.", "unvoiced"), ("That's it.", "unvoiced"), ("Perfect.", "unvoiced"),
    ("Check.", "unvoiced"), ("Stop.", "unvoiced"), ("Quick!", "unvoiced"),
    ("Right.", "unvoiced"), ("Good luck.", "unvoiced"), ("Thanks!", "unvoiced"),
    ("Nice.", "unvoiced"), ("Oops.", "unvoiced"), ("Big oof.", "unvoiced"),
    ("Watch this.", "unvoiced"), ("Cheers, mate.", "unvoiced"), ("Clutch.", "unvoiced"),
    ("Sick.", "unvoiced"), ("Cool trick.", "unvoiced"), ("Great catch.", "unvoiced"),
    ("Deep breath.", "unvoiced"), ("Enough.", "unvoiced"), ("Yes.", "unvoiced"),
    ("Top pick.", "unvoiced"),
    ("Same.", "control"), ("Sure thing.", "control"), ("Let's go!", "control"),
    ("Gotcha.", "control"), ("No way.", "control"), ("Good game.", "control"),
    ("Well played.", "control"), ("For real.", "control"),
]  # fmt: skip

NOT_PHONES = frozenset({"^", "$", "ˈ", "ˌ", "ː", " ", ".", ",", "!", "?", ";", ":", "…", "—"})


def last_phone(symbols: Sequence[str]) -> int:
    """Index of the last unit that is a phone (not a pad, stress, length mark, space or
    punctuation); -1 if none."""
    for k in range(len(symbols) - 1, -1, -1):
        if symbols[k] not in NOT_PHONES:
            return k
    return -1


def rms_db(audio: FloatArray, rate: int, *, win_ms: int = WIN_MS) -> FloatArray:
    """10 ms RMS in dBFS (non-overlapping windows; the last partial one dropped)."""
    n = max(1, rate * win_ms // 1000)
    if len(audio) < n:
        return np.zeros(0, np.float32)
    return frame_db(audio, frame=n, hop=n)  # the clip checker's levels, on a 10 ms grid


def highband(audio: FloatArray, rate: int, cutoff: float = 2000.0) -> FloatArray:
    """``audio`` with everything below ``cutoff`` Hz removed (FFT mask)."""
    spec = np.fft.rfft(audio.astype(np.float64))
    spec[np.fft.rfftfreq(len(audio), 1.0 / rate) < cutoff] = 0.0
    out: FloatArray = np.fft.irfft(spec, n=len(audio)).astype(np.float32)
    return out


def span_level(audio: FloatArray, rate: int, a: int, b: int, peak_db: float) -> dict[str, float]:
    """Loudest 10 ms and mean level of ``audio[a:b]``, all bands and above 2 kHz, in dB
    re ``peak_db`` (the utterance's loudest 10 ms)."""
    seg = audio[max(a, 0) : max(b, a)]
    if len(seg) < rate * WIN_MS // 1000:
        return {"max_db": float("nan"), "mean_db": float("nan"), "hf_max_db": float("nan")}
    env, hf = rms_db(seg, rate), rms_db(highband(seg, rate), rate)
    mean = float(10 * np.log10(np.mean(seg.astype(np.float64) ** 2) + 1e-12))
    return {"max_db": round(float(env.max()) - peak_db, 1),
            "mean_db": round(mean - peak_db, 1),
            "hf_max_db": round(float(hf.max()) - peak_db, 1)}  # fmt: skip


def model_tail(
    raw_audio: FloatArray,
    audio: FloatArray,
    symbols: Sequence[str],
    raw_frames: npt.NDArray[np.int64],
    frames: npt.NDArray[np.int64],
) -> dict[str, Any]:
    """What the trim did to one model utterance and how its end sounds (see module doc)."""
    env = rms_db(raw_audio, MODEL_SR)
    peak = float(env.max()) if len(env) else 0.0
    is_phone = np.array([s not in NOT_PHONES for s in symbols], bool)
    k = last_phone(symbols)
    start = int(raw_frames[:k].sum()) if k >= 0 else 0
    lead_cut = int(raw_frames[0] - frames[0]) if len(frames) else 0  # frames cut at the front
    a, b = start * HOP, (start + int(raw_frames[k])) * HOP  # in the untrimmed audio
    kept_end = lead_cut * HOP + len(audio)  # the trimmed audio's end, on the untrimmed clock
    removed = raw_audio[kept_end:]
    lead_env = rms_db(raw_audio[: lead_cut * HOP], MODEL_SR)
    removed_env = rms_db(removed, MODEL_SR)
    tail = rms_db(audio[-MODEL_SR * TAIL_MS // 1000 :], MODEL_SR) - peak
    return {
        "units": list(symbols),
        "frames_raw": raw_frames.tolist(),
        "frames_trimmed": frames.tolist(),
        "phone_frames_cut_at_end": int(np.sum((raw_frames - frames)[is_phone])),
        "last_phone": symbols[k] if k >= 0 else "",
        "last_phone_ms": round(1000.0 * int(raw_frames[k]) * HOP / MODEL_SR, 1) if k >= 0 else None,
        "last_phone_level": span_level(raw_audio, MODEL_SR, a, b, peak),
        "last_phone_end_to_audio_end_ms": round(1000.0 * (kept_end - b) / MODEL_SR, 1),
        "lead_removed_ms": round(1000.0 * lead_cut * HOP / MODEL_SR, 1),
        "lead_removed_max_db": round(float(lead_env.max()) - peak, 1) if len(lead_env) else None,
        "removed_ms": round(1000.0 * len(removed) / MODEL_SR, 1),
        "removed_max_db": round(float(removed_env.max()) - peak, 1) if len(removed_env) else None,
        "tail_150ms_db": [round(float(x), 1) for x in tail],
    }  # fmt: skip


def teacher_tail(audio: FloatArray, symbols: Sequence[str], token_frames: npt.NDArray[np.int64]
                 ) -> dict[str, Any]:  # fmt: skip
    """The teacher's final phone: duration and level, from its own durations (25 ms frames,
    pads included, one per unit when ``symbols`` has a unit per token)."""
    if len(token_frames) != len(symbols):
        return {"aligned": False}
    env = rms_db(audio, TEACHER_SR)
    peak = float(env.max()) if len(env) else 0.0
    k = last_phone(symbols)
    start = int(token_frames[:k].sum())
    a, b = start * TEACHER_FRAME, (start + int(token_frames[k])) * TEACHER_FRAME
    return {"last_phone": symbols[k], "last_phone_ms": 25.0 * int(token_frames[k]),
            "last_phone_level": span_level(audio, TEACHER_SR, a, b, peak),
            "after_last_phone_ms": round(1000.0 * (len(audio) - b) / TEACHER_SR, 1)}  # fmt: skip


def _served(catalog: Any, voice_id: str, text: str) -> FloatArray:
    from emostream.stream.oneshot import synthesize

    pcm = asyncio.run(synthesize(catalog.get(voice_id), text, sample_rate=SERVED_SR))
    return np.asarray(pcm.astype(np.float32) / 32768.0, np.float32)


def check_texts(texts: Sequence[str]) -> dict[str, list[str]]:
    """Replies that are held-out lines or corpus lines (both must stay empty)."""
    from lab.heldout import heldout_texts, training_lines

    held = {t.strip().lower() for t in heldout_texts("en")}
    corpus = {t.lower() for t in training_lines("en")}
    return {"in_heldout": [t for t in texts if t.lower() in held],
            "in_corpus": [t for t in texts if t.lower() in corpus]}  # fmt: skip


def run(
    own: OwnModel,
    teacher: Teacher | None,
    asr: Callable[..., str],
    replies: Sequence[tuple[str, str]],
    voices: Sequence[str],
    *,
    catalog: Any = None,
    padded: bool = False,
    score: bool = True,
) -> dict[str, Any]:
    from emostream.networks.acoustic_onnx import pack_one
    from emostream.voices.acoustic import split_latents
    from emostream.voices.base import Controls

    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    for spk in voices:
        voice = own.voice(spk)
        for text, kind in replies:
            req = voice.prepare(text, Controls())
            mel, dur = own.model.infer(pack_one(req.seq.ids(), req.seq.tones, req.seq.langs,
                                                req.speaker, req.emotion, req.intensity,
                                                req.prosody))  # fmt: skip
            raw_d = np.asarray(dur, np.int64)[: len(req.seq.units)]
            raw_mel = np.ascontiguousarray(mel[: max(int(raw_d.sum()), 1)].T, np.float32)
            latent = split_latents([req], mel[None], np.asarray(dur, np.int64)[None])[0]
            audio = np.asarray(own._decode(latent.frames), np.float32)
            raw_audio = np.asarray(own._decode(raw_mel), np.float32)
            pad = np.zeros(int(PAD_S * MODEL_SR), np.float32)
            systems: dict[str, tuple[FloatArray, int]] = {
                "model": (audio, MODEL_SR),
                "model_untrimmed": (raw_audio, MODEL_SR),
            }
            if padded:
                systems["model_padded"] = (np.concatenate([pad, audio, pad]), MODEL_SR)
            if catalog is not None:
                systems["served"] = (_served(catalog, spk, text), SERVED_SR)
            detail: dict[str, Any] = {"speaker": spk, "text": text, "kind": kind,
                                      "model": model_tail(raw_audio, audio, req.seq.symbols, raw_d,
                                                          np.asarray(latent.unit_frames))}  # fmt: skip
            if teacher is not None and score:
                tokens = [teacher.vocab[c] for c in req.seq.teacher_text if c in teacher.vocab]
                out = teacher.teacher(tokens, teacher.styles[spk])
                systems["teacher"] = (out.audio, TEACHER_SR)
                detail["teacher"] = teacher_tail(out.audio, req.seq.symbols, out.token_frames)
            for system, (clip, sr) in systems.items() if score else ():
                row: dict[str, Any] = {"system": system, "speaker": spk, "text": text,
                                       "kind": kind, "asr": asr(clip, sr, language="en")}  # fmt: skip
                score_row(row, "en")
                row["seconds"] = round(len(clip) / sr, 3)
                rows.append(row)
                detail[f"asr_{system}"] = row["asr"]
            details.append(detail)
            if score:
                log.info("%s %r: %s", spk, text, {s: detail[f"asr_{s}"] for s in systems})
    return {"rows": rows, "details": details}


def _mean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if not np.isnan(x)]
    return round(statistics.fmean(xs), 2) if xs else None


def summarise(rows: list[dict[str, Any]], details: list[dict[str, Any]],
              voices: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    for kind in ("all", "unvoiced", "control"):
        mine = [r for r in rows if kind == "all" or r["kind"] == kind]
        out[kind] = {
            s: {k: v[k] for k in ("wer", "wer_corpus", "utterances", "perfect")}
            for s, v in intelligibility_summary(mine, list(voices), "en").items()
        }
    for kind in ("unvoiced", "control"):
        d = [x for x in details if x["kind"] == kind]
        m = [x["model"] for x in d]
        t = [x["teacher"] for x in d if x.get("teacher", {}).get("last_phone_ms") is not None]
        out[f"{kind}_ends"] = {
            "utterances": len(d),
            "trim_took_phone_frames": sum(1 for x in m if x["phone_frames_cut_at_end"] > 0),
            "lead_cut_above_-40db": sum(
                1 for x in m if (x["lead_removed_max_db"] or -99.0) > -40.0
            ),
            "lead_removed_max_db_mean": _mean(
                [x["lead_removed_max_db"] for x in m if x["lead_removed_max_db"] is not None]
            ),
            "removed_max_db_worst": max((x["removed_max_db"] for x in m
                                         if x["removed_max_db"] is not None), default=None),
            "model_last_phone_ms": _mean([x["last_phone_ms"] for x in m]),
            "teacher_last_phone_ms": _mean([x["last_phone_ms"] for x in t]),
            "model_last_phone_max_db": _mean([x["last_phone_level"]["max_db"] for x in m]),
            "teacher_last_phone_max_db": _mean([x["last_phone_level"]["max_db"] for x in t]),
            "model_last_phone_hf_max_db": _mean([x["last_phone_level"]["hf_max_db"] for x in m]),
            "teacher_last_phone_hf_max_db": _mean([x["last_phone_level"]["hf_max_db"]
                                                   for x in t]),
            "model_audio_after_last_phone_ms": _mean([x["last_phone_end_to_audio_end_ms"]
                                                      for x in m]),
            "model_tail_150ms_db_mean": [round(float(v), 1) for v in
                                         np.mean([x["tail_150ms_db"] for x in m], axis=0)]
            if m else [],
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.short_replies",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--voices", default=",".join(VOICES))
    p.add_argument("--texts", type=int, default=None, help="the first N replies (default all)")
    p.add_argument("--kokoro-model", default=None)
    p.add_argument("--kokoro-voices", default=None,
                   help="kokoro-js voices/ folder; no teacher without it")  # fmt: skip
    p.add_argument("--heldout-voices", action="store_true",
                   help="also lab.heldout's held-out voices (GE2E from teacher renderings; "
                        "needs the teacher; not served: no catalog voice)")  # fmt: skip
    p.add_argument("--padded", action="store_true", help="also score model_padded")
    p.add_argument("--no-asr", action="store_true",
                   help="the model's trim and level figures only: no ASR, no teacher rows")  # fmt: skip
    p.add_argument("--no-served", action="store_true", help="skip the product path (oneshot)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    t0 = time.time()
    import torch

    torch.set_num_threads(a.threads)
    from lab.asr import whisper_base

    voices = [v for v in a.voices.split(",") if v]
    replies = REPLIES[: a.texts]
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path="cpu", lite=Path(a.lite),
                   threads=a.threads)  # fmt: skip
    asr = whisper_base(threads=a.threads)
    teacher = None
    if a.kokoro_voices:
        teacher = Teacher(Path(a.kokoro_model), Path(a.kokoro_voices),
                          REPO / "models/corpus/plan/speakers.json", threads=a.threads)  # fmt: skip
    catalog = None
    if not a.no_served:
        from emostream.config import Settings
        from emostream.voices.catalog import load_catalog

        catalog = load_catalog(Settings(vocoder="lite", cpu_threads=a.threads))
    heldout: list[str] = []
    if a.heldout_voices:
        if teacher is None:
            p.error("--heldout-voices needs the teacher (--kokoro-voices)")
        from lab.acoustic_quality import heldout_speakers

        heldout = list(heldout_speakers(teacher, own, "en")["voices"])
    report: dict[str, Any] = run_record("lab.short_replies", argv) | {
        "model": _relpath(a.model), "speakers_npz": _relpath(a.speakers_npz),
        "vocoder": _relpath(a.lite), "asr": asr.name, "voices": voices, "heldout_voices": heldout,
        "teacher": "Kokoro-82M v1.0 int8 ONNX, same phonemes and speakers" if teacher else None,
        "texts": [t for t, _ in replies], "text_check": check_texts([t for t, _ in replies]),
    }  # fmt: skip
    res = run(
        own, teacher, asr, replies, voices, catalog=catalog, padded=a.padded, score=not a.no_asr
    )
    if heldout:
        more = run(own, teacher, asr, replies, heldout, padded=a.padded, score=not a.no_asr)
        res = {k: res[k] + more[k] for k in res}
    report["summary"] = {}
    for name, group in (("stock", voices), ("heldout", heldout), ("all", [*voices, *heldout])):
        if group and (name != "all" or heldout):
            rows = [r for r in res["rows"] if r["speaker"] in group]
            det = [d for d in res["details"] if d["speaker"] in group]
            report["summary"][name] = summarise(rows, det, group)
    report["details"] = res["details"]
    report["utterances"] = res["rows"]
    _write(report, a.output, t0)
    print(json.dumps(report["summary"], indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
