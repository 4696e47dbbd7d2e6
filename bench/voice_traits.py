"""What each named stock voice sounds like, measured: pitch, pitch movement, brightness, pace.

The voice catalogue (``server/emostream/voices/stock_voices.py``) describes every named voice
in a few words; the pitch, brightness and pace words come from this measurement, not from the
teacher's marketing. Each voice reads the same two sentences of its language on the served CPU
path (ONNX Runtime, light vocoder, 24 kHz PCM through the streamer):

    .venv/bin/python bench/voice_traits.py [-o bench/results/2026-12-07-cpu2-voice-traits.json]

Per voice: ``f0_hz``, the median F0 of voiced 5 ms frames (WORLD's Harvest, pyworld, 60-500
Hz; DIO read joe an octave high); ``f0_spread_st``, the standard deviation of F0 in semitones
(how much the pitch moves); ``centroid_hz``, the centroid of the mean magnitude spectrum of the
speech frames up to 8 kHz (higher: brighter); ``voiced``, the share of speech frames with an F0
(breathy or whispered speech has less); ``pace``, speech seconds (frames within 35 dB of the
loud level) per character of the text, over the median of the voices of that language (above
1: slower). One text per voice, about 4 s of speech: a rough portrait, not a ranking.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from emostream.benchmarks.first_audio import host_info
from emostream.config import Settings
from emostream.stream.oneshot import synthesize
from emostream.voices.catalog import load_catalog
from emostream.voices.stock_voices import is_corpus_speaker

RATE = 24000
TEXTS = {
    "en": "Thanks for the follow, and welcome to the stream. Today we are trying something new.",
    "zh": "谢谢大家的关注，欢迎来到直播间。今天我们来试一点新的东西。",
}


def speech_mask(x: npt.NDArray[np.float64], frame: int) -> npt.NDArray[np.bool_]:
    n = len(x) // frame
    rms = np.sqrt(np.mean(x[: n * frame].reshape(n, frame) ** 2, axis=1) + 1e-12)
    return rms > float(np.percentile(rms, 95)) * 10 ** (-35 / 20)


def traits(pcm: npt.NDArray[np.int16]) -> dict[str, float]:
    import pyworld

    x = pcm.astype(np.float64) / 32768.0
    f0, _ = pyworld.harvest(x, RATE, frame_period=5.0, f0_floor=60.0, f0_ceil=500.0)
    voiced = f0[f0 > 0]
    semitones = 12 * np.log2(voiced / np.median(voiced))
    frame = RATE // 100
    mask = speech_mask(x, frame)
    frames = x[: len(mask) * frame].reshape(len(mask), frame)[mask]
    spectrum = np.mean(np.abs(np.fft.rfft(frames * np.hanning(frame), n=1024)), axis=0)
    freqs = np.fft.rfftfreq(1024, 1 / RATE)
    band = freqs <= 8000
    centroid = float(np.sum(freqs[band] * spectrum[band]) / np.sum(spectrum[band]))
    return {
        "f0_hz": round(float(np.median(voiced)), 1),
        "f0_spread_st": round(float(np.std(semitones)), 2),
        "centroid_hz": round(centroid, 0),
        "speech_s": round(float(mask.sum()) / 100, 2),
        "voiced": round(float(np.mean(f0[: 2 * len(mask)][np.repeat(mask, 2)[: len(f0)]] > 0)), 2),
    }


async def measure() -> dict[str, dict[str, Any]]:
    catalog = load_catalog(Settings(cpu_threads=1))
    out: dict[str, dict[str, Any]] = {}
    for info in catalog.infos():  # every named voice (not the corpus speakers)
        voice = catalog.get(info.id)
        if voice is None or is_corpus_speaker(info.id):
            continue
        lang = info.language.split("-")[0]
        pcm = await synthesize(voice, TEXTS[lang], sample_rate=RATE)
        out[info.id] = {"language": lang, **traits(pcm)}
        print(info.id, out[info.id], flush=True)
    for lang, text in TEXTS.items():
        rates = {k: v["speech_s"] / len(text) for k, v in out.items() if v["language"] == lang}
        median = float(np.median(list(rates.values())))
        for k, rate in rates.items():
            out[k]["pace"] = round(rate / median, 3)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", default="bench/results/2026-12-07-cpu2-voice-traits.json")
    args = p.parse_args()
    voices = asyncio.run(measure())
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/voice_traits.py -o " + args.output,
        "host": host_info(),
        "texts": TEXTS,
        "method": __doc__.split("\n\n", 2)[2].strip(),
        "voices": voices,
    }
    Path(args.output).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print("wrote", args.output)


if __name__ == "__main__":
    main()
