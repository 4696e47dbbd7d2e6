"""Quality of voices exactly as a server built from ``Settings`` serves them, as JSON.

    python -m lab.served_voices --voices joe,af_heart,zf_xiaoxiao \\
        [--en-texts 40] [--zh-texts 40] [--dnsmos-texts 10] [--vocoder auto|lite|v1] \\
        [--models-dir DIR] -o FILE

Each voice speaks the project's held-out lines of its language (``models/corpus/heldout``,
never used in training) through the product path (``load_catalog`` + the chunked streamer at
24 kHz, what ``/v1/audio/speech`` returns); Whisper base transcribes (English WER after
Whisper's normaliser, Mandarin CER and toned-syllable error) and DNSMOS (P.835 OVRL, P.808)
rates the first ``--dnsmos-texts`` clips. Used to choose the default voice by measured quality;
``--vocoder`` compares the CPU default (light vocoder) with HiFi-GAN V1 on the same voice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from typing import Any

import numpy as np

from emostream.config import Settings
from emostream.stream.oneshot import synthesize
from emostream.voices.catalog import load_catalog
from lab.acoustic_quality import (
    dnsmos_scores,
    intelligibility_summary,
    run_record,
    score_row,
)
from train import sentences

log = logging.getLogger(__name__)
RATE = 24000


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.served_voices",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--voices", default="joe,af_heart,am_michael,zf_xiaoxiao,zm_yunxi")
    p.add_argument("--en-texts", type=int, default=40)
    p.add_argument("--zh-texts", type=int, default=40)
    p.add_argument("--dnsmos-texts", type=int, default=10)
    p.add_argument("--vocoder", default="auto", help="auto (lite on cpu), lite or v1")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models-dir", default="",
                   help="a candidate's models folder (default: the shipped models/)")  # fmt: skip
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    t0 = time.time()
    from lab.asr import whisper_base

    settings = Settings(vocoder=a.vocoder, cpu_threads=a.threads, models_dir=a.models_dir)
    catalog = load_catalog(settings)
    asr = whisper_base(threads=a.threads)
    texts = {
        "en": sentences.heldout("en")[: a.en_texts],
        "zh": sentences.heldout("zh")[: a.zh_texts],
    }
    report: dict[str, Any] = run_record("lab.served_voices", argv) | {
        "vocoder": a.vocoder,
        "asr": asr.name,
        "voices": {},
    }
    for vid in [v for v in a.voices.split(",") if v]:
        voice = catalog.get(vid)
        if voice is None:
            raise SystemExit(f"voice {vid!r} is not served by these settings")
        lang = "zh" if voice.info.language.startswith("zh") else "en"
        rows: list[dict[str, Any]] = []
        for i, text in enumerate(texts[lang]):
            pcm = asyncio.run(synthesize(voice, text, sample_rate=RATE))
            audio = pcm.astype(np.float32) / 32768.0
            row: dict[str, Any] = {"system": "model", "speaker": vid, "text": text,
                                   "asr": asr(audio, RATE, language=lang)}  # fmt: skip
            score_row(row, lang)
            row["seconds"] = round(len(audio) / RATE, 2)
            if i < a.dnsmos_texts:
                row["dnsmos"] = dnsmos_scores(audio, RATE)
            rows.append(row)
        summary = intelligibility_summary(rows, [vid], lang)
        dn = [r["dnsmos"] for r in rows if "dnsmos" in r]
        if dn:
            summary["dnsmos"] = {k: round(float(np.mean([d[k] for d in dn])), 3) for k in dn[0]}
        report["voices"][vid] = {"language": lang, "model": voice.info.model,
                                 "summary": summary, "utterances": rows}  # fmt: skip
        log.info("%s: %s", vid, json.dumps(summary))
    report["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(json.dumps({v: r["summary"] for v, r in report["voices"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
