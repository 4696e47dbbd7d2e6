"""Where the held-out Mandarin errors come from: the predictors, the decoder or the vocoder.

For each held-out voice (:data:`lab.heldout.HELDOUT_VOICES`) and held-out line, the teacher
(Kokoro, CPU) renders the line, and five systems are transcribed by Whisper base:

* ``teacher``         — the teacher's own audio (the floor these sets allow);
* ``teacher_mel``     — the teacher's mel (as the corpus stores it) through the vocoder:
                        what the vocoder loses;
* ``oracle``          — the acoustic model fed the teacher's durations, pitch, pitch shapes and
                        energy (teacher-forced, as in training), decoded, vocoded: what the
                        decoder loses;
* ``oracle_duration`` — the teacher's durations only, the model's own pitch and energy;
* ``model``           — the model on its own, as served: what the predictors lose on top.

With ``--v1`` also ``teacher_22k`` (the teacher's audio at the model's 22.05 kHz),
``teacher_mel_v1``, ``oracle_v1`` and ``model_v1`` (HiFi-GAN V1 universal, torch on CPU, instead of the
light vocoder).

``--voices zf_xiaoxiao,zm_yunxi,...`` puts training voices in place of the held-out ones: the
same losses for speakers the model has seen (is a loss the decoder's, or unseen speakers'?).

``python -m lab.prosody_oracle --model models/acoustic/emostream-fs2-v0.4.onnx --speakers-npz
models/acoustic/speakers-v0.4.npz --kokoro-model K.onnx --kokoro-voices DIR --texts 20 -o OUT``
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lab.acoustic_quality import (
    MODEL_SR,
    TEACHER_SR,
    Teacher,
    corpus_rate,
    run_record,
    score_row,
)

log = logging.getLogger("lab.prosody_oracle")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lab.prosody_oracle", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="acoustic model (.onnx or .pt)")
    p.add_argument("--lite", default="models/vocoder/emostream-lite-vocoder-v0.2.onnx")
    p.add_argument("--kokoro-model", required=True)
    p.add_argument("--kokoro-voices", required=True)
    p.add_argument("--lang", default="zh", choices=("zh", "en"))
    p.add_argument("--texts", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--v1", action="store_true", help="also HiFi-GAN V1 and the teacher at 22.05 kHz"
    )
    p.add_argument("--systems", default="", help="comma-separated subset to transcribe")
    p.add_argument("--voices", default="",
                   help="comma-separated Kokoro voices instead of the held-out ones (e.g. "
                   "training voices: is a loss the decoder's or unseen speakers'?)")  # fmt: skip
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)

    import soxr
    import torch

    from emostream.networks.acoustic import AcousticModel
    from emostream.networks.acoustic_onnx import Prosody
    from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder
    from emostream.text.emotion import EMOTIONS
    from emostream.text.phonemes import G2P
    from emostream.voices.cloning.encoder import SpeakerEncoder
    from lab.asr import whisper_base
    from lab.heldout import HELDOUT_VOICES, conditioning_texts, heldout_texts, teacher_embedding
    from train.corpus import Job, Utterance, dequantize_mel, features
    from train.train import collate, to_item

    torch.set_num_threads(a.threads)
    t0 = time.time()
    model = AcousticModel.load(a.model).float().eval()
    lite = OnnxLiteVocoder(Path(a.lite), threads=a.threads)
    teacher = Teacher(Path(a.kokoro_model), Path(a.kokoro_voices), Path("/nonexistent"),
                      threads=a.threads)  # fmt: skip
    asr = whisper_base(threads=a.threads)
    g2p, enc = G2P(), SpeakerEncoder()
    texts = heldout_texts(a.lang)[: a.texts]
    cond = conditioning_texts(a.lang)
    neutral = torch.tensor([EMOTIONS.index("neutral")])
    controls = torch.tensor([Prosody().row()], dtype=torch.float32)

    def vocode(mel_t80: np.ndarray) -> np.ndarray:
        return np.asarray(lite(np.ascontiguousarray(mel_t80.T)), dtype=np.float32)

    v1: Any = None
    if a.v1:
        from emostream.networks.hifigan import HifiGan

        v1 = HifiGan.load("universal").eval()

    def vocode_v1(mel_t80: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return np.asarray(
                v1(torch.from_numpy(np.ascontiguousarray(mel_t80.T))[None]).reshape(-1).numpy(),
                np.float32,
            )

    wanted = [s for s in a.systems.split(",") if s]

    voices: dict[str, dict[str, float]] = (
        {v: {v: 1.0} for v in a.voices.split(",") if v} if a.voices else HELDOUT_VOICES[a.lang]
    )
    rows: list[dict[str, Any]] = []
    for name, weights in voices.items():
        teacher.add_voice(name, weights)
        emb = teacher_embedding(functools.partial(teacher.speak, name), cond, enc.embed_audio,
                                rate=TEACHER_SR)  # fmt: skip
        spk = torch.from_numpy(emb.astype(np.float32))[None]
        for i, text in enumerate(texts):
            seq = g2p(text)
            tokens = [teacher.vocab[c] for c in seq.teacher_text if c in teacher.vocab]
            job = Job(f"h{i}", a.lang, text, name, seq.ids(), seq.tones, seq.langs,
                      seq.teacher_spans(), tokens)  # fmt: skip
            out = teacher.teacher(tokens, teacher.styles[name])
            rec = features(job, out.audio, out.token_frames, out.f0)
            u = Utterance(rec.utt, rec.lang, rec.text, rec.speaker, rec.ids, rec.tones,
                          rec.langs, rec.durations, rec.mel, rec.f0, rec.energy,
                          np.zeros(256, np.float16))  # fmt: skip
            b = collate([to_item(u, emb.astype(np.float32))], model.config, torch.device("cpu"))
            one = torch.ones(1)
            with torch.no_grad():
                forced = model(b["ids"], b["tones"], b["langs"], spk, neutral, one,
                               b["durations"], b["pitch"], b["energy"],
                               b["contour"] if model.config.contour else None)["mel"]  # fmt: skip
                h, _ = model.infer_units(b["ids"], b["tones"], b["langs"], spk, neutral, one,
                                         controls)  # fmt: skip
                frames, fpad = model.regulate(h, b["durations"])
                dur_only = model.decode(frames, fpad)
                free, _ = model.infer(b["ids"], b["tones"], b["langs"], spk, neutral, one,
                                      controls)  # fmt: skip
            audio = {
                "teacher": (out.audio, TEACHER_SR),
                "teacher_mel": (vocode(dequantize_mel(rec.mel)), MODEL_SR),
                "oracle": (vocode(forced[0].numpy()), MODEL_SR),
                "oracle_duration": (vocode(dur_only[0].numpy()), MODEL_SR),
                "model": (vocode(free[0].numpy()), MODEL_SR),
            }
            if v1 is not None:
                audio["teacher_22k"] = (soxr.resample(out.audio, TEACHER_SR, MODEL_SR), MODEL_SR)
                audio["teacher_mel_v1"] = (vocode_v1(dequantize_mel(rec.mel)), MODEL_SR)
                audio["model_v1"] = (vocode_v1(free[0].numpy()), MODEL_SR)
                audio["oracle_v1"] = (vocode_v1(forced[0].numpy()), MODEL_SR)
            if wanted:
                audio = {k: v for k, v in audio.items() if k in wanted}
            for system, (wav, sr) in audio.items():
                hyp = asr(soxr.resample(wav, sr, 16000).astype(np.float32), 16000, language=a.lang)
                row = {"system": system, "speaker": name, "text": text, "asr": hyp,
                       "seconds": round(len(wav) / sr, 2)}  # fmt: skip
                score_row(row, a.lang)
                rows.append(row)
            log.info("%s %d: %s", name, i, {r["system"]: r["asr"] for r in rows[-len(audio) :]})
    keys = ("wer",) if a.lang == "en" else ("cer", "syllable_error")
    summary = {
        s: {k: corpus_rate([r for r in rows if r["system"] == s], k) for k in keys}
        | {"seconds": round(sum(r["seconds"] for r in rows if r["system"] == s), 1)}
        for s in dict.fromkeys(r["system"] for r in rows)
    }
    report = run_record("lab.prosody_oracle", argv) | {
        "model": a.model,
        "vocoder": a.lite,
        "asr": asr.name,
        "texts": len(texts),
        "voices": list(voices),
        "summary": summary,
        "wall_s": round(time.time() - t0),
        "utterances": rows,
    }
    Path(a.output).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
