"""Word timestamps against an ASR's word timing, on held-out English lines, as JSON.

    .venv/bin/python bench/word_timestamps.py [--voice af_heart] [--n 20] [--out FILE]

Each held-out line (``lab.heldout.heldout_texts("en")``: chat lines the model never
trained on) is split and normalised as the WebSocket path does (``TextFrontEnd``),
streamed through ``stream_utterance`` with ``word_timestamps`` (the served CPU path: ONNX
acoustic model + light vocoder, PCM 16 kHz), and transcribed by faster-whisper with
``word_timestamps=True`` (Whisper base multilingual and tiny.en, int8, from the PyPI wheels of
``lab.asr``). Our words and the ASR's are matched by their normalised spelling
(lower case, letters/digits/apostrophes; difflib on the two word lists); for each matched word
the start (and end) difference is ours minus the ASR's, in ms.

A baseline makes the figure mean something: the same words spread over the utterance's voiced
span in proportion to their written length (what a client could do with no timestamps at all).
Whisper's own word times are not ground truth (DTW over cross-attention, 20 ms steps; the first
word of a clip tends to start at 0.0 s whatever leading silence there is): the figures are also
given without each line's first word, the two judges are compared with each other, and all
three (ours and both judges) with an ASR-free reference where there is one: the sound onset
(first 5 ms frame above -40 dBFS) of each word that follows at least 150 ms of silence.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]  # emostream, and lab (the ASR)

from emostream.codec.packetizer import OutputFormat
from emostream.config import Settings
from emostream.engine.runner import ThreadRunner
from emostream.stream.streamer import Event, Packet, UtteranceRequest, stream_utterance
from emostream.text.frontend import TextFrontEnd
from emostream.voices.catalog import load_acoustic_family
from lab.asr import assemble_whisper_base, tiny_en_dir
from lab.heldout import heldout_texts

RATE = 16000


def segments_of(text: str) -> list[str]:
    return TextFrontEnd.split(text)


async def synthesize(
    voice: Any, text: str, runner: ThreadRunner
) -> tuple[npt.NDArray[np.float32], list[dict[str, Any]]]:
    async def gen() -> AsyncIterator[str]:
        for s in segments_of(text):
            yield s

    request = UtteranceRequest(
        voice=voice, fmt=OutputFormat(codec="pcm_s16le", sample_rate=RATE), word_timestamps=True
    )
    pcm: list[bytes] = []
    words: list[dict[str, Any]] = []
    async for item in stream_utterance(request, gen(), runner):
        if isinstance(item, Packet):
            pcm.append(item.data)
        elif isinstance(item, Event) and item.body["type"] == "words":
            words += item.body["words"]
    audio = np.frombuffer(b"".join(pcm), dtype=np.int16).astype(np.float32) / 32768
    return audio, words


def norm(word: str) -> str:
    return re.sub(r"[^a-z0-9']", "", word.lower()).strip("'")


def asr_words(model: Any, audio: npt.NDArray[np.float32]) -> list[dict[str, Any]]:
    segments, _ = model.transcribe(
        audio, language="en", beam_size=1, temperature=0.0, word_timestamps=True,
        condition_on_previous_text=False, vad_filter=False,
    )  # fmt: skip
    return [
        {"word": w.word.strip(), "start_ms": 1000 * w.start, "end_ms": 1000 * w.end}
        for s in segments
        for w in (s.words or [])
    ]


def match(
    ours: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]
) -> list[tuple[int, int]]:
    a = [norm(w["word"]) for w in ours]
    b = [norm(w["word"]) for w in theirs]
    pairs = []
    for block in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        pairs += [(block.a + d, block.b + d) for d in range(block.size) if a[block.a + d]]
    return pairs


def baseline(words: Sequence[dict[str, Any]], audio: npt.NDArray[np.float32]) -> list[float]:
    """Starts (ms) with the words spread over the voiced span by written length."""
    frame = RATE // 100
    energy = np.sqrt(np.mean(audio[: len(audio) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    voiced = np.flatnonzero(energy > 0.1 * energy.max())
    lo, hi = (voiced[0] * 10.0, (voiced[-1] + 1) * 10.0) if len(voiced) else (0.0, 0.0)
    total = sum(len(w["word"]) + 1 for w in words)
    starts, acc = [], 0
    for w in words:
        starts.append(lo + (hi - lo) * acc / total)
        acc += len(w["word"]) + 1
    return starts


ONSET_GAP_MS = 150.0
ONSET_RMS = 0.01  # -40 dBFS; the voices' silence is digital zero or close to it


def onsets(words: Sequence[dict[str, Any]], audio: npt.NDArray[np.float32]) -> dict[int, float]:
    """Sound onset (ms) of each word that follows >= ONSET_GAP_MS of silence (by our times)."""
    frame = RATE // 200  # 5 ms
    rms = np.sqrt(np.mean(audio[: len(audio) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    out: dict[int, float] = {}
    prev_end = 0.0
    for i, w in enumerate(words):
        if w["start_ms"] - prev_end >= ONSET_GAP_MS:
            lo = int(prev_end // 5) + 1
            hi = int((w["start_ms"] + 300) // 5)
            loud = np.flatnonzero(rms[lo:hi] > ONSET_RMS)
            if len(loud):
                out[i] = 5.0 * (lo + loud[0])
        prev_end = w["end_ms"]
    return out


def summary(errors: Sequence[float]) -> dict[str, Any]:
    if not errors:
        return {"n": 0}
    absolute = sorted(abs(e) for e in errors)
    return {
        "n": len(errors),
        "median_abs_ms": round(statistics.median(absolute), 1),
        "p90_abs_ms": round(float(np.percentile(absolute, 90)), 1),
        "mean_signed_ms": round(statistics.fmean(errors), 1),
        "within_60ms": round(sum(e <= 60 for e in absolute) / len(absolute), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--voice", default="af_heart")
    ap.add_argument("--n", type=int, default=20, help="held-out English lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from faster_whisper import WhisperModel

    family = load_acoustic_family(Settings(acoustic="on"))
    assert family is not None, "no EmoStream acoustic model under models/"
    voice = next(v for v in family.stock_voices() if v.info.id == args.voice)
    judges = {
        "whisper-base": WhisperModel(str(assemble_whisper_base()), device="cpu",
                                     compute_type="int8", cpu_threads=args.threads),
        "whisper-tiny.en": WhisperModel(str(tiny_en_dir()), device="cpu", compute_type="int8",
                                        cpu_threads=args.threads),
    }  # fmt: skip
    texts = heldout_texts("en", args.n)
    runner = ThreadRunner(workers=args.threads)
    errors: dict[str, dict[str, list[float]]] = {
        j: {"start": [], "start_not_first": [], "end": [], "baseline_start": [], "vs_onset": []}
        for j in judges
    }
    ours_vs_onset: list[float] = []
    between: list[float] = []  # base vs tiny.en on the same words
    lines = []
    t0 = time.time()
    for text in texts:
        audio, words = asyncio.run(synthesize(voice, text, runner))
        base_starts = baseline(words, audio)
        onset = onsets(words, audio)
        ours_vs_onset += [words[i]["start_ms"] - t for i, t in onset.items()]
        line: dict[str, Any] = {"text": text, "audio_ms": round(1000 * len(audio) / RATE, 1),
                                "words": [[w["word"], w["start_ms"], w["end_ms"]] for w in words]}  # fmt: skip
        heard: dict[str, dict[int, float]] = {}
        for name, model in judges.items():
            theirs = asr_words(model, audio)
            pairs = match(words, theirs)
            heard[name] = {i: theirs[j]["start_ms"] for i, j in pairs}
            for i, j in pairs:
                errors[name]["start"].append(words[i]["start_ms"] - theirs[j]["start_ms"])
                if i > 0:
                    errors[name]["start_not_first"].append(
                        words[i]["start_ms"] - theirs[j]["start_ms"]
                    )
                if i in onset:
                    errors[name]["vs_onset"].append(theirs[j]["start_ms"] - onset[i])
                errors[name]["end"].append(words[i]["end_ms"] - theirs[j]["end_ms"])
                errors[name]["baseline_start"].append(base_starts[i] - theirs[j]["start_ms"])
            line[name] = {
                "transcript": " ".join(w["word"] for w in theirs),
                "matched": f"{len(pairs)}/{len(words)}",
                "start_errors_ms": [
                    round(words[i]["start_ms"] - theirs[j]["start_ms"], 1) for i, j in pairs
                ],
            }
        both = heard["whisper-base"].keys() & heard["whisper-tiny.en"].keys()
        between += [heard["whisper-base"][i] - heard["whisper-tiny.en"][i] for i in both]
        lines.append(line)
        print(f"{text[:60]!r}: " + ", ".join(f"{n} {line[n]['matched']}" for n in judges),
              file=sys.stderr)  # fmt: skip
    runner.close()
    report = {
        "what": "word start/end times (ours, on the stream timeline) minus the ASR's word times",
        "date": datetime.date.today().isoformat(),
        "machine": "2-core CPU (shared with other benchmarks)",
        "command": " ".join([".venv/bin/python", "bench/word_timestamps.py", *sys.argv[1:]]),
        "voice": args.voice,
        "path": "served CPU path: ONNX acoustic model + light vocoder, stream_utterance, PCM 16 kHz",
        "texts": f"heldout_texts('en', {args.n})",
        "goal": "median absolute start error <= 60 ms",
        "onset": f"first 5 ms frame above RMS {ONSET_RMS} after >= {ONSET_GAP_MS:g} ms of silence",
        "judges": {
            name: {
                "start": summary(e["start"]),
                "start, each line's first word left out": summary(e["start_not_first"]),
                "end": summary(e["end"]),
                "baseline_start (length-proportional, no timestamps)": summary(e["baseline_start"]),
                "judge start minus sound onset (words after silence)": summary(e["vs_onset"]),
            }
            for name, e in errors.items()
        },
        "ours start minus sound onset (words after silence)": summary(ours_vs_onset),
        "judge_vs_judge_start (whisper-base minus tiny.en, same words)": summary(between),
        "seconds": round(time.time() - t0, 1),
        "lines": lines,
    }
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "lines"}, indent=1))


if __name__ == "__main__":
    main()
