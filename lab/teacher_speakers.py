"""How clearly does the teacher speak for each kind of corpus speaker?

The training plan's Mandarin speakers are the stock voices, blends of them, and *cross*
speakers (a Mandarin voice's prosody with a timbre partly from English voices). The acoustic
model learns whatever tones the teacher renders for them, so a kind of speaker whose
Mandarin the teacher renders poorly teaches poor tones. This renders the same held-out lines
with a sample of each kind (teacher only, Kokoro int8 on CPU) and scores them with Whisper
base, per kind and per speaker::

    python -m lab.teacher_speakers --speakers .gpujob/v02b/plan/speakers.json \\
        --kokoro-model /tmp/kok/kokoro.onnx --kokoro-voices /tmp/kjs/package/voices \\
        --per-kind 6 --texts 20 -o OUT.json
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from lab.acoustic_quality import TEACHER_SR, corpus_rate, run_record, score_row

log = logging.getLogger("lab.teacher_speakers")


def kind(name: str) -> str:
    """``stock``, ``blend`` or ``cross`` from a plan speaker's name (``zh_cross003``)."""
    for k in ("cross", "blend"):
        if f"_{k}" in name:
            return k
    return "stock"


def sample(
    specs: list[dict[str, Any]], lang: str, per_kind: int, seed: int, exclude: set[str]
) -> list[dict[str, Any]]:
    """Up to ``per_kind`` speakers of ``lang`` of each kind, drawn with ``seed``."""
    r = random.Random(seed)
    out: list[dict[str, Any]] = []
    for k in ("stock", "blend", "cross"):
        pool = [s for s in specs if s["lang"] == lang and kind(s["name"]) == k]
        pool = [s for s in pool if s["name"] not in exclude]
        out += r.sample(pool, min(per_kind, len(pool)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--speakers", required=True, help="a plan's speakers.json")
    p.add_argument("--kokoro-model", required=True)
    p.add_argument("--kokoro-voices", required=True)
    p.add_argument("--lang", default="zh", choices=("zh", "en"))
    p.add_argument("--per-kind", type=int, default=6)
    p.add_argument("--texts", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)

    import soxr

    from emostream.text.phonemes import G2P
    from lab.asr import whisper_base
    from lab.heldout import HELDOUT_VOICES, heldout_texts
    from train.teacher import KokoroTeacher, kokoro_vocab, load_voices, speaker_style

    t0 = time.time()
    specs = json.loads(Path(a.speakers).read_text(encoding="utf-8"))
    chosen = sample(specs, a.lang, a.per_kind, a.seed, set(HELDOUT_VOICES[a.lang]))
    teacher = KokoroTeacher(Path(a.kokoro_model), threads=a.threads)
    table, vocab, g2p = load_voices(Path(a.kokoro_voices)), kokoro_vocab(), G2P()
    asr = whisper_base(threads=a.threads)
    texts = heldout_texts(a.lang)[: a.texts]
    tokens = {t: [vocab[c] for c in g2p(t).teacher_text if c in vocab] for t in texts}
    rows: list[dict[str, Any]] = []
    for spec in chosen:
        style = speaker_style(table, spec["weights"], spec.get("timbre"))
        for text in texts:
            wav = teacher(tokens[text], style).audio
            hyp = asr(soxr.resample(wav, TEACHER_SR, 16000).astype(np.float32), 16000,
                      language=a.lang)  # fmt: skip
            row = {"speaker": spec["name"], "kind": kind(spec["name"]), "text": text,
                   "asr": hyp}  # fmt: skip
            score_row(row, a.lang)
            rows.append(row)
        log.info("%s done", spec["name"])
    keys = ("wer",) if a.lang == "en" else ("cer", "syllable_error")

    def rates(rs: list[dict[str, Any]]) -> dict[str, float]:
        return {k: corpus_rate(rs, k) for k in keys}

    summary = {
        "per_kind": {
            k: rates([r for r in rows if r["kind"] == k]) | {"speakers": n}
            for k, n in sorted(Counter(kind(s["name"]) for s in chosen).items())
        },
        "per_speaker": {
            s["name"]: rates([r for r in rows if r["speaker"] == s["name"]]) | {"spec": s}
            for s in chosen
        },
    }
    report = run_record("lab.teacher_speakers", argv) | {
        "asr": asr.name,
        "texts": len(texts),
        "summary": summary,
        "wall_s": round(time.time() - t0),
        "utterances": rows,
    }
    Path(a.output).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(summary["per_kind"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
