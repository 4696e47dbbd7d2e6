"""``python -m lab.reading_ab``: two readings of one Mandarin character, heard by Whisper.

Question: where the dictionary allows two readings (谁 shéi / shuí), which one do listeners
recognise? Each reading is forced on every occurrence of ``--char`` (a wrapper around the
front end's :func:`emostream.text.zh.polyphones.single_char_reading`, as seen from
:mod:`emostream.text.zh.g2p`), and the same lines are spoken by the teacher (Kokoro, the
same phonemes) and by the model on the CPU path (ONNX acoustic model + light vocoder,
:class:`lab.acoustic_quality.OwnModel`), for stock voices of the model. Whisper base
transcribes; per reading and system: how many clips contain the character (or its
traditional form), toned-syllable error and CER (corpus rates, :mod:`lab.acoustic_quality`).

The lines (:data:`LINES`, new chat lines, none in the held-out set) are for 谁; ``--lines
FILE`` (one per line) tests another character.

Found 2026-12-06 (v0.4, light v0.2; 16 lines x 4 voices,
``bench/results/acoustic/2026-12-06-cpu2-reading-ab-shei.json``): shuí was heard as 谁 in 39 /
34 of 64 clips (teacher / model), shéi in 64 / 63; toned-syllable error 8.9 / 9.1 % -> 3.2 /
3.2 %. The front end now says shéi (现代汉语词典's first reading).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
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

LINES = (
    "谁在直播间里放音乐？",
    "刚才是谁说我唱歌跑调的？",
    "谁能告诉我这关怎么过？",
    "你猜猜我今天遇到谁了。",
    "这是谁的猫，怎么跑到我桌上了？",
    "谁还没吃晚饭，举个手。",
    "我也不知道该相信谁。",
    "谁家的狗一直在叫啊？",
    "谁想跟我一起打排位？",
    "到底谁是卧底，大家投票吧。",
    "谁都别想拿走我的薯片。",
    "今天谁来当房管？",
    "那个背影好像是谁来着？",
    "是谁偷偷把音量调大了？",
    "谁送的火箭，谢谢老板！",
    "你说谁菜呢？",
)
VOICES = ("zf_xiaoxiao", "zm_yunxi", "zf_xiaobei", "zm_yunjian")
TRADITIONAL = {"谁": "誰"}


@contextmanager
def forced_reading(char: str, reading: str) -> Iterator[None]:
    """Every ``char`` read ``reading`` (toned pinyin, e.g. ``shei2``) while inside: the
    front end's syllables of each word are rewritten after its own rules ran, so phrases,
    context rules and sandhi inputs all see the forced reading."""
    from emostream.text.zh.g2p import MandarinFrontEnd
    from emostream.text.zh.types import split_toned

    base, tone = split_toned(reading)
    original: Callable[..., list[Any]] = MandarinFrontEnd._word_syllables

    def word_syllables(self: MandarinFrontEnd, *args: Any, **kwargs: Any) -> list[Any]:
        out = original(self, *args, **kwargs)
        for syl in out:
            if syl.char == char:
                syl.base, syl.tone = base, tone
        return out

    setattr(MandarinFrontEnd, "_word_syllables", word_syllables)  # noqa: B010
    try:
        yield
    finally:
        setattr(MandarinFrontEnd, "_word_syllables", original)  # noqa: B010


def heard(char: str, hypothesis: str) -> bool:
    return char in hypothesis or TRADITIONAL.get(char, char) in hypothesis


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted({(r["reading"], r["system"]) for r in rows}):
        sel = [r for r in rows if (r["reading"], r["system"]) == key]
        out[f"{key[1]} {key[0]}"] = {
            "clips": len(sel),
            "char_heard": sum(r["char_heard"] for r in sel),
            "syllable_error": corpus_rate(sel, "syllable_error"),
            "cer": corpus_rate(sel, "cer"),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.reading_ab", description=__doc__)
    p.add_argument("--char", default="谁")
    p.add_argument("--readings", default="shui2,shei2", help="toned pinyin, comma-separated")
    p.add_argument("--lines", default="", help="a file of lines (default: the 谁 lines)")
    p.add_argument("--voices", default=",".join(VOICES))
    add_ab_args(p)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    t_start = time.time()
    from emostream.text.phonemes import G2P

    lines = (
        [t.strip() for t in Path(a.lines).read_text(encoding="utf-8").splitlines() if t.strip()]
        if a.lines
        else list(LINES)
    )
    voices = [v for v in a.voices.split(",") if v]
    asr, own, teacher = ab_systems(a)
    rows: list[dict[str, Any]] = []
    for reading in a.readings.split(","):
        with forced_reading(a.char, reading):
            own.g2p = teacher.g2p = G2P()  # fresh caches: the readings differ
            for v in voices:
                voice = own.voice(v)
                for text in lines:
                    for system in ("teacher", "model"):
                        if system == "teacher":
                            audio, rate = teacher.speak(v, text), TEACHER_SR
                        else:
                            audio, rate = own.speak(voice, text), MODEL_SR
                        row = {"reading": reading, "system": system, "speaker": v, "text": text,
                               "asr": asr(audio, rate, language="zh")}  # fmt: skip
                        score_row(row, "zh")
                        row["char_heard"] = heard(a.char, row["asr"])
                        rows.append(row)
                        log.info("%s %s %s: %s", reading, system, v, row["asr"])
    report = run_record("lab.reading_ab", argv) | {
        "char": a.char, "voices": voices, "lines": lines, "asr": asr.name,
        "summary": summarise(rows), "rows": rows,
    }  # fmt: skip
    print(json.dumps(report["summary"], ensure_ascii=False, indent=1))
    _write(report, a.output, t_start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
