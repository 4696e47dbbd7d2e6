"""Re-score a saved ``lab.acoustic_quality`` report with the current text normalisation.

The ASR transcripts are kept per utterance, so a change of scoring (English: Whisper's text
normaliser; Mandarin: numbers read by the product's front end on both sides) needs no new
synthesis or ASR pass. Rows get the new scores, summaries are rebuilt, the old summary is kept
under ``summary_before_rescore``.

    python -m lab.rescore bench/results/acoustic/REPORT.json [-o OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lab.acoustic_quality import intelligibility_summary, score_row

SCORING = (
    "English: WER over whisper-normalizer's EnglishTextNormalizer (numbers, currency, percent, "
    "fillers to one written form) and lab.quality.canonical (a run of numbers as one token of "
    "its digits, laughter as one 'ha' per syllable, alright = all right, ok = okay); Mandarin: "
    "zhconv to simplified, numbers read by emostream.text.zh.g2p on both sides, then CER and "
    "toned-pinyin syllable error, a transcript's digit runs (Whisper's 321 for 三、二、一) read as the number or digit by digit, whichever is closer to the reference (lab.asr.zh_tokens, 2026-12-06). Summaries: mean over utterances and *_corpus (edits over all "
    "utterances / reference tokens over all utterances)"
)


def rescore_section(section: dict[str, Any]) -> dict[str, Any]:
    """New scores for every row of one intelligibility section, and its summary rebuilt."""
    lang = section["language"]
    for row in section["utterances"]:
        score_row(row, lang)
    section.setdefault("summary_before_rescore", section.get("summary"))
    section["summary"] = intelligibility_summary(section["utterances"], section["speakers"], lang)
    section["scoring"] = SCORING
    return section


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.rescore", description=__doc__.split("\n")[0])
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
