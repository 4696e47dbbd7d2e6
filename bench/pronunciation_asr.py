"""Does a pronunciation override change what is heard? Whisper, the lab's judge, on the CPU path.

    python bench/pronunciation_asr.py [-o bench/results/2026-12-07-cpu2-pronunciation-asr.json]

Each case is a sentence spoken twice by the product path (``load_catalog`` with the default
CPU settings, the streaming synthesis at 24 kHz: :func:`emostream.stream.oneshot.synthesize`
with pronunciation control on): as written, and with one word given a pronunciation (an inline
override, or a dictionary entry). Whisper base (multilingual, int8; the lab's judge,
:mod:`lab.asr`) transcribes both.

* Mandarin polyphones (行 háng/xíng, 长 cháng/zhǎng, 重 chóng/zhòng, 乐 yuè/lè), voice
  ``zf_xiaoxiao``. Whisper writes words, not sounds, so the transcript is scored against the
  sentence's two readings (toneless syllables: the front end's, ``default``, and the same with
  the override's syllable) by an edit distance, two ways: ``hanzi``, a written character
  matching every syllable it can be read as (pypinyin, all readings), so that only another
  character shows a change (移行 yí xíng) and the polyphone itself, 行, fits both (a tie,
  ``either``); ``pinyin``, the transcript as pypinyin reads it in context (the task's "pinyin of
  the transcript"; pypinyin has its own slips: 很长 hěn zhǎng). The nearer reading is the one
  heard. Where the override makes no word Whisper knows it may write the common word (行动 for
  háng dòng): heard as the default.
* English names, voice ``af_heart``: the transcript's words aligned with the sentence's, and
  the stretch that holds the name (as Whisper heard it: "Win", "Nuyen", "Glim Tor") phonemised
  by the same front end (espeak-ng) and compared in sounds (edit distance over the reading's
  length) with the sentence's words there, the name read as written and as the override says;
  the nearer is the one heard.
* A dictionary (an English and a Mandarin entry) named by two sentences each ("streams"),
  scored the same way, each against itself without the dictionary.

One render and one greedy transcript per case (no sampling anywhere: a rerun on the same
machine gives the same figures).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]  # emostream, and lab (the ASR)

from emostream.config import Settings  # noqa: E402
from emostream.stream.oneshot import synthesize  # noqa: E402
from emostream.text.frontend import TextFrontEnd  # noqa: E402
from emostream.text.phonemes import G2P  # noqa: E402
from emostream.text.pron.lexicon import Lexicon, parse_entries  # noqa: E402
from emostream.text.pron.reader import PronunciationSetup  # noqa: E402
from emostream.text.pron.wire import PIN_RE, display_text  # noqa: E402
from emostream.text.zh.g2p import pinyin_of  # noqa: E402
from emostream.voices.catalog import load_catalog  # noqa: E402
from lab.asr import normalise_zh, whisper_base  # noqa: E402

RATE = 24000
# (sentence with an override, the polyphone's syllable as the front end reads it, the override's)
ZH_CASES = [
    ("我在银{行|xing2}工作。", "hang", "xing"),
    ("他是我们的{行|xing2}长。", "hang", "xing"),
    ("我们一起{行|hang2}动吧。", "xing", "hang"),
    ("这条河很{长|zhang3}。", "chang", "zhang"),
    ("孩子们都{长|chang2}大了。", "zhang", "chang"),
    ("我去过{长|zhang3}城。", "chang", "zhang"),
    ("我们{重|zhong4}新开始吧。", "chong", "zhong"),
    ("这件事很{重|chong2}要。", "zhong", "chong"),
    ("这个箱子的{重|chong2}量是多少？", "zhong", "chong"),
    ("音{乐|le4}会几点开始？", "yue", "le"),
]
# English overrides: IPA and a respelling of the same reading, for a real name espeak-ng
# misreads and two made-up ones (a name Whisper knows the spelling of, Joaquin, would be
# written as the name whatever was said)
EN_CASES = [
    "Please welcome our guest, {Nguyen|/wɪn/}.",
    "Please welcome our guest, {Nguyen|win}.",
    "I met {Zorblax|/ˈɡlɪmtɔːɹ/} yesterday.",
    "I met {Zorblax|glim tor} yesterday.",
    "Our next speaker is {Xyqorra|/ˈmeɪlɪn/}.",
    "Our next speaker is {Xyqorra|may lin}.",
]
DICTIONARY = [
    {"word": "Nguyen", "ipa": "/wɪn/"},
    {"word": "行", "pinyin": "xing2"},  # a poor entry for real use: it reads 银行 yín xíng too
]
DICT_CASES = [
    ("en", "af_heart", "Nguyen will call you back."),
    ("en", "af_heart", "Is Nguyen coming tonight?"),
    ("zh", "zf_xiaoxiao", "我在银行工作。"),
    ("zh", "zf_xiaoxiao", "那家银行很大。"),
]


def plain(text: str) -> str:
    """The sentence as written, without the overrides' pronunciations."""
    return re.sub(r"\{([^|{}]*)\|[^{}]*\}", r"\1", text)


def toneless(pinyin: list[str]) -> list[str]:
    return [re.sub(r"\d", "", s) for s in pinyin]


def toneless_pinyin(text: str) -> str:
    from pypinyin import Style, lazy_pinyin

    return " ".join(lazy_pinyin(normalise_zh(text), style=Style.NORMAL))


def _readings(ch: str) -> set[str]:
    from pypinyin import Style, pinyin

    return set(pinyin(ch, style=Style.NORMAL, heteronym=True)[0])


def distance(ref: list[str], hyp: list[str], match: Callable[[str, str], bool]) -> int:
    """Levenshtein distance; ``match(r, h)``: a free substitution."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (not match(r, h)))
        prev = cur
    return prev[-1]


def scored(d_default: float, d_override: float) -> dict[str, Any]:
    heard = "either" if d_default == d_override else (
        "default" if d_default < d_override else "override")  # fmt: skip
    return {"distance": {"default": d_default, "override": d_override}, "heard": heard}


def zh_heard(transcript: str, default: list[str], override: list[str]) -> dict[str, Any]:
    """Which reading (toneless syllables) the transcript is nearer, judged two ways: ``hanzi``,
    a written character matching every syllable it can be read as (the polyphone itself fits
    both: a tie); ``pinyin``, the transcript read by pypinyin in context (the reading of its
    words, with pypinyin's own slips: it reads 很长 hěn zhǎng)."""
    chars = list(normalise_zh(transcript))
    read = toneless_pinyin(transcript).split()

    def fits(syllable: str, ch: str) -> bool:
        return syllable in _readings(ch)

    same: Callable[[str, str], bool] = str.__eq__
    return {"hanzi": scored(distance(default, chars, fits), distance(override, chars, fits)),
            "pinyin": scored(distance(default, read, same), distance(override, read, same))}


def phones(g2p: G2P, text: str) -> list[str]:
    """The sounds the English front end gives ``text`` (no stress, boundary or mark)."""
    return [u for u in g2p(text).symbols if u.isalpha() and u not in "ˈˌ"]


def en_heard(g2p: G2P, transcript: str, sentence: str, name: str, pin: str) -> dict[str, Any]:
    """Which reading of ``name`` in ``sentence`` (as written, or as ``pin`` says) the
    transcript is nearer: its words and the sentence's are aligned, and the stretch that holds
    the name (Whisper's "Win", "Nuyen", "When we'll" for "Nguyen will") is compared in sounds
    (edit distance over the reading's length) with the sentence's words there, the name read
    either way."""
    ref = re.findall(r"[A-Za-z']+", plain(sentence))
    hyp = re.findall(r"[A-Za-z']+", transcript)
    k = ref.index(name)
    matcher = difflib.SequenceMatcher(None, [w.lower() for w in ref], [w.lower() for w in hyp])
    stretch = next((op for op in matcher.get_opcodes() if op[1] <= k < max(op[2], op[1] + 1)))
    _, i1, i2, j1, j2 = stretch
    said = phones(g2p, " ".join(hyp[j1:j2]))
    words = ref[i1:i2]
    readings = {"default": " ".join(words), "override": " ".join(pin if w == name else w
                                                                  for w in words)}
    same: Callable[[str, str], bool] = str.__eq__
    d = {}
    for key, text in readings.items():
        r = phones(g2p, text)
        d[key] = round(distance(r, said, same) / max(1, len(r)), 3)
    return {**scored(d["default"], d["override"]), "heard_words": " ".join(hyp[j1:j2])}


def zh_readings(text: str, override: str) -> tuple[list[str], list[str]]:
    """The toneless syllables the Mandarin front end reads ``text`` with, as written and with
    the override's syllable at its character."""
    said = toneless(pinyin_of(plain(text)))
    k = sum(1 for ch in text[: text.index("{")] if "\u4e00" <= ch <= "\u9fff")
    return said, [*said[:k], override, *said[k + 1 :]]


def wired(text: str, setup: PronunciationSetup) -> str:
    return " ".join(TextFrontEnd.split(text, pronunciation=setup))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    t0 = time.time()
    catalog = load_catalog(Settings(cpu_threads=a.threads))
    asr = whisper_base(threads=a.threads)
    g2p = G2P()
    inline = PronunciationSetup()

    def render(voice_id: str, text: str, setup: PronunciationSetup, lang: str) -> str:
        voice = catalog.get(voice_id)
        assert voice is not None, voice_id
        pcm = asyncio.run(synthesize(voice, text, sample_rate=RATE, pronunciation=setup))
        return asr(pcm.astype(np.float32) / 32768.0, RATE, language=lang)

    zh_rows: list[dict[str, Any]] = []
    for text, default, override in ZH_CASES:
        said = {k: render("zf_xiaoxiao", t, inline, "zh")
                for k, t in (("as_written", plain(text)), ("override", text))}  # fmt: skip
        ref_default, ref_override = zh_readings(text, override)
        assert default in ref_default, (text, ref_default)  # the front end's reading, as listed
        zh_rows.append({
            "text": text, "syllable": {"default": default, "override": override},
            "readings": {"default": " ".join(ref_default), "override": " ".join(ref_override)},
            "transcripts": said,
            "transcript_pinyin": {k: toneless_pinyin(v) for k, v in said.items()},
            "as_written": zh_heard(said["as_written"], ref_default, ref_override),
            "override": zh_heard(said["override"], ref_default, ref_override),
        })  # fmt: skip
        print(json.dumps(zh_rows[-1], ensure_ascii=False), flush=True)

    en_rows: list[dict[str, Any]] = []
    for text in EN_CASES:
        said = {k: render("af_heart", t, inline, "en")
                for k, t in (("as_written", plain(text)), ("override", text))}  # fmt: skip
        word = re.search(r"\{([^|]*)\|", text).group(1)  # type: ignore[union-attr]
        with_pin = wired(text, inline)
        pin = PIN_RE.search(with_pin).group(0)  # type: ignore[union-attr]
        en_rows.append({
            "text": text, "transcripts": said,
            "units": {"as_written": "".join(g2p(word).symbols[1:-1]),
                      "override": "".join(g2p(pin).symbols[1:-1])},
            "as_written": en_heard(g2p, said["as_written"], text, word, pin),
            "override": en_heard(g2p, said["override"], text, word, pin),
        })  # fmt: skip
        print(json.dumps(en_rows[-1], ensure_ascii=False), flush=True)

    named = PronunciationSetup(lexicon=Lexicon(parse_entries(DICTIONARY)))
    dict_rows: list[dict[str, Any]] = []
    for lang, voice_id, text in DICT_CASES:
        said = {"without": render(voice_id, text, inline, lang),
                "naming_the_dictionary": render(voice_id, text, named, lang)}  # fmt: skip
        with_pins = wired(text, named)
        if lang == "zh":
            ref = toneless(pinyin_of(text))
            pinned = ref[:]
            for m in PIN_RE.finditer(with_pins):  # the entry's syllables at its characters
                k = len(display_text(with_pins[: m.start()]).replace(" ", ""))
                for j, syllable in enumerate(toneless(m.group(3).split())):
                    pinned[k + j] = syllable
            judged = {k: zh_heard(v, ref, pinned) for k, v in said.items()}
        else:
            pin = PIN_RE.search(with_pins).group(0)  # type: ignore[union-attr]
            judged = {k: en_heard(g2p, v, text, display_text(pin), pin) for k, v in said.items()}

        dict_rows.append({"voice": voice_id, "text": text, "transcripts": said, **judged})
        print(json.dumps(dict_rows[-1], ensure_ascii=False), flush=True)

    def count(rows: list[dict[str, Any]], key: str, by: str = "") -> dict[str, int]:
        return {h: sum((r[key][by] if by else r[key])["heard"] == h for r in rows)
                for h in ("default", "override", "either")}  # fmt: skip

    zh_dict = [r for r in dict_rows if r["voice"] == "zf_xiaoxiao"]
    en_dict = [r for r in dict_rows if r["voice"] != "zf_xiaoxiao"]
    summary = {
        "heard": "the reading a transcript is nearer: default (the word as written), override "
                 "(as the override or dictionary says), either (a tie); Mandarin by hanzi (a "
                 "character fits every reading it has: the polyphone itself ties) and by pinyin "
                 "(pypinyin's reading of the transcript in context)",
        "zh_cases": len(zh_rows),
        "zh_as_written_by_hanzi": count(zh_rows, "as_written", "hanzi"),
        "zh_with_override_by_hanzi": count(zh_rows, "override", "hanzi"),
        "zh_as_written_by_pinyin": count(zh_rows, "as_written", "pinyin"),
        "zh_with_override_by_pinyin": count(zh_rows, "override", "pinyin"),
        "zh_transcript_changed": sum(r["transcripts"]["as_written"] != r["transcripts"]["override"]
                                     for r in zh_rows),  # fmt: skip
        "en_cases": len(en_rows),
        "en_as_written": count(en_rows, "as_written"),
        "en_with_override": count(en_rows, "override"),
        "dictionary_cases": len(dict_rows),
        "dictionary_en_not_named": count(en_dict, "without"),
        "dictionary_en_named": count(en_dict, "naming_the_dictionary"),
        "dictionary_zh_not_named_by_pinyin": count(zh_dict, "without", "pinyin"),
        "dictionary_zh_named_by_pinyin": count(zh_dict, "naming_the_dictionary", "pinyin"),
        "dictionary_zh_named_by_hanzi": count(zh_dict, "naming_the_dictionary", "hanzi"),
    }  # fmt: skip
    report = {
        "what": "pronunciation overrides: which reading Whisper base hears, with and without",
        "command": "python bench/pronunciation_asr.py -o " + (a.output or "-"),
        "machine": "2-core CPU (shared), ONNX Runtime CPU, default CPU settings (light vocoder)",
        "asr": asr.name, "sample_rate": RATE, "summary": summary,
        "mandarin": zh_rows, "english": en_rows, "dictionary": dict_rows,
        "seconds": round(time.time() - t0, 1),
    }  # fmt: skip
    out = json.dumps(report, indent=1, ensure_ascii=False)
    if a.output:
        Path(a.output).write_text(out + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
