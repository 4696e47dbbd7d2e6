"""``python -m lab.tone_range``: does a wider pitch range make the model's Mandarin tones clearer?

A model trained by regression (L1/L2 on per-unit log-F0 and its shape) predicts the mean of
what it saw, which flattens pitch: tones that differ in height and slope come out closer
together than the teacher's. This measures it and a remedy: the same lines spoken by the
teacher (Kokoro, same phonemes) and by the model on the CPU path with its pitch range
(``Prosody.pitch_range``: unit log-F0 around the utterance mean and each unit's pitch shape,
:meth:`emostream.networks.acoustic.AcousticModel.infer_units`) multiplied by each of
``--ranges``; Whisper base scores toned-syllable error and CER, pyworld the F0 range (90th -
10th percentile, semitones) of every clip.

Validation, not the held-out protocol: the lines are fresh ones from the training grammar
(:func:`train.sentences.generate`, ``--seed``, held-out lines excluded) and the
voices stock ones by default (``--voices``); a factor chosen here is then checked once on the
held-out sets (``lab.acoustic_quality``).

Found 2026-12-06 (v0.4, light v0.2; 24 lines of seed 4242 x 4 stock voices, 96 clips each;
``bench/results/acoustic/2026-12-06-cpu2-tone-range-v0.4.json``): the model is as clear as the
teacher on these (syllable error 4.8 against 5.0 %) with an F0 range 0.95 of the teacher's
(median ratio per clip); x1.15: 4.7 % (range 1.03), x1.3: 5.0 % (1.14). Flattened pitch is not
what the model loses on its own voices, so the range stays as predicted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from lab.acoustic_quality import (
    MODEL_SR,
    TEACHER_SR,
    _write,
    ab_systems,
    add_ab_args,
    corpus_rate,
    run_record,
    score_row,
)

log = logging.getLogger(__name__)

VOICES = ("zf_xiaoxiao", "zm_yunxi", "zf_xiaobei", "zm_yunjian")


@contextmanager
def pitch_range_scaled(factor: float) -> Iterator[None]:
    """Every request's ``pitch_range`` multiplied by ``factor`` while inside."""
    from emostream.voices import acoustic

    name = "prosody_for"
    original: Callable[..., Any] = getattr(acoustic, name)

    def scaled(controls: Any) -> Any:
        p = original(controls)
        return dataclasses.replace(p, pitch_range=p.pitch_range * factor)

    setattr(acoustic, name, scaled)
    try:
        yield
    finally:
        setattr(acoustic, name, original)


def f0_range_st(audio: Any, rate: int) -> float:
    from lab.quality import prosody

    return round(prosody(audio, rate, 1).f0_range_st, 3)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    teacher = {
        (r["speaker"], r["text"]): r["f0_range_st"] for r in rows if r["system"] == "teacher"
    }
    for system in dict.fromkeys(r["system"] for r in rows):
        sel = [r for r in rows if r["system"] == system]
        ratios = [r["f0_range_st"] / teacher[(r["speaker"], r["text"])] for r in sel
                  if teacher.get((r["speaker"], r["text"]))]  # fmt: skip
        out[system] = {
            "clips": len(sel),
            "syllable_error": corpus_rate(sel, "syllable_error"),
            "cer": corpus_rate(sel, "cer"),
            "f0_range_st": round(statistics.fmean(r["f0_range_st"] for r in sel), 3),
            "f0_range_over_teacher_median": round(statistics.median(ratios), 3) if ratios else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.tone_range", description=__doc__)
    p.add_argument("--ranges", default="1.0,1.15,1.3")
    p.add_argument("--lines", type=int, default=24)
    p.add_argument("--seed", type=int, default=4242)
    p.add_argument("--voices", default=",".join(VOICES))
    add_ab_args(p)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    t_start = time.time()
    from train.sentences import generate

    lines = generate("zh", a.lines, seed=a.seed)
    voices = [v for v in a.voices.split(",") if v]
    asr, own, teacher = ab_systems(a)
    rows: list[dict[str, Any]] = []

    def add(system: str, speaker: str, text: str, audio: Any, rate: int) -> None:
        row = {"system": system, "speaker": speaker, "text": text,
               "asr": asr(audio, rate, language="zh"), "f0_range_st": f0_range_st(audio, rate)}  # fmt: skip
        score_row(row, "zh")
        rows.append(row)
        log.info("%s %s: %s", system, speaker, row["asr"])

    for v in voices:
        for text in lines:
            add("teacher", v, text, teacher.speak(v, text), TEACHER_SR)
    for factor in (float(x) for x in a.ranges.split(",")):
        with pitch_range_scaled(factor):
            for v in voices:
                voice = own.voice(v)
                for text in lines:
                    add(f"model x{factor:g}", v, text, own.speak(voice, text), MODEL_SR)
    report = run_record("lab.tone_range", argv) | {
        "voices": voices, "lines": lines, "asr": asr.name, "summary": summarise(rows), "rows": rows,
    }  # fmt: skip
    print(json.dumps(report["summary"], ensure_ascii=False, indent=1))
    _write(report, a.output, t_start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
