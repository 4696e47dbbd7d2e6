"""Re-score a saved ``bench acoustic`` report with the current text normalisation.

The ASR transcripts are kept per utterance, so a change of scoring (English: Whisper's text
normaliser; Mandarin: numbers read by the product's front end on both sides) needs no new
synthesis or ASR pass. Rows get the new scores, summaries are rebuilt, the old summary is kept
under ``summary_before_rescore``.

    python -m emostream.bench.rescore bench/results/acoustic/REPORT.json [-o OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from emostream.bench.asr import cer, syllable_error
from emostream.bench.quality import wer

SCORING = (
    "English: WER over whisper-normalizer's EnglishTextNormalizer (numbers, currency, percent, "
    "fillers to one written form); Mandarin: zhconv to simplified, numbers read by "
    "emostream.text.mandarin on both sides, then CER and toned-pinyin syllable error"
)


def _mean(xs: list[float]) -> float:
    return round(statistics.fmean(xs), 4) if xs else float("nan")


def rescore_section(section: dict[str, Any]) -> dict[str, Any]:
    """New scores for every row of one intelligibility section, and its summary rebuilt."""
    lang = section["language"]
    keys = ["wer"] if lang == "en" else ["cer", "syllable_error"]
    for row in section["utterances"]:
        if lang == "en":
            row["wer"] = round(wer(row["text"], row["asr"]), 4)
        else:
            row["cer"] = round(cer(row["text"], row["asr"]), 4)
            row["syllable_error"] = round(syllable_error(row["text"], row["asr"]), 4)
    summary: dict[str, Any] = {}
    for system in sorted({r["system"] for r in section["utterances"]}):
        mine = [r for r in section["utterances"] if r["system"] == system]
        summary[system] = {k: _mean([r[k] for r in mine]) for k in keys}
        summary[system]["per_speaker"] = {
            spk: {k: _mean([r[k] for r in mine if r["speaker"] == spk]) for k in keys}
            for spk in section["speakers"]
        }
        summary[system]["utterances"] = len(mine)
        summary[system]["perfect"] = sum(1 for r in mine if r[keys[0]] == 0.0)
    section.setdefault("summary_before_rescore", section.get("summary"))
    section["summary"] = summary
    section["scoring"] = SCORING
    return section


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="emostream.bench.rescore", description=__doc__.split("\n")[0])
    p.add_argument("report", type=Path)
    p.add_argument("-o", "--output", type=Path, default=None, help="default: rewrite in place")
    a = p.parse_args(argv)
    report = json.loads(a.report.read_text(encoding="utf-8"))
    brief = {}
    for key in ("intelligibility_en", "intelligibility_zh"):
        if key in report:
            section = rescore_section(report[key])
            brief[key] = {s: {k: v for k, v in x.items() if k != "per_speaker"}
                          for s, x in section["summary"].items()}  # fmt: skip
    text = json.dumps(report, indent=1, ensure_ascii=False)
    (a.output or a.report).write_text(text + "\n", encoding="utf-8")
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
