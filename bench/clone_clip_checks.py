"""The thresholds of a clone's refinement checks (voices/cloning/refine_checks.py), measured.

Builds ~10 s clips from stock voices the server renders (the shipped acoustic model on CPU,
two sentences per voice) and from real readings on this machine (Debian's pocketsphinx and
codec2 test data), passes each through the clip intake, and reports:

* ``same``: one voice, sentence 1 then sentence 2 -> GE2E cosine of the clip's halves;
* ``pairs``: voice A's sentence 1 then voice B's sentence 2 (every pair of the same language)
  -> the same measure;
* ``voiced``: the intake's voiced fraction of speech clips and of synthetic music with rests
  (a melody, chords, chords with drums) at phrase dynamics the intake accepts.

    PYTHONPATH=server .venv/bin/python bench/clone_clip_checks.py \
        -o bench/results/2026-12-07-cpu2-clone-clip-checks.json
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile as sf

from emostream.config import Settings
from emostream.voices.base import Controls
from emostream.voices.catalog import load_acoustic_family
from emostream.voices.cloning.clip import Clip, ClipError, ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine_checks import RefineChecks, halves_similarity

F32 = npt.NDArray[np.float32]
EN = [f"{g}_{n}" for g, names in (
    ("af", "alloy aoede bella heart jessica kore nicole nova sarah sky"),
    ("am", "adam eric fenrir liam michael onyx puck santa"),
    ("bf", "emma isabella lily"), ("bm", "daniel george lewis"),
) for n in names.split()]  # fmt: skip
ZH = [f"z{g}_{n}" for g, n in (("f", "xiaobei"), ("f", "xiaoni"), ("f", "xiaoxiao"),
                               ("m", "yunjian"), ("m", "yunxi"), ("m", "yunyang"))]  # fmt: skip
TEXTS = {
    "en": (
        (
            "I usually record my streams in the evening, after the kids are asleep and the "
            "house is finally quiet."
        ),
        (
            "Tonight we are going to look at a few of your questions, and then play something "
            "relaxing until midnight."
        ),
    ),
    "zh": (
        "我一般在晚上录直播，孩子们睡着以后，家里终于安静下来了。",
        "今天晚上我们先回答几个大家的问题，然后玩点轻松的游戏，一直到午夜。",
    ),
}
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CODEC2 = Path("/usr/share/codec2")


def wav(audio: F32, rate: int) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def gap(rate: int, s: float = 0.3) -> F32:
    return np.zeros(int(rate * s), np.float32)


def render_stock(settings: Settings) -> dict[str, tuple[F32, F32]]:
    family = load_acoustic_family(settings)
    assert family is not None, "the acoustic model is needed"
    voices = {v.info.id: v for v in family.stock_voices()}
    out = {}
    for vid in EN + ZH:
        voice = voices[vid]
        texts = TEXTS["zh" if vid in ZH else "en"]
        out[vid] = tuple(voice.decode(voice.acoustic(t, Controls()).frames) for t in texts)
    return out  # type: ignore[return-value]


def real_readers() -> dict[str, tuple[F32, int]]:
    """~10 s of each real speaker found on this machine (16 kHz)."""
    found: dict[str, tuple[F32, int]] = {}
    parts = [LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-0{n}.wav" for n in (870, 890, 920)]
    if all(p.exists() for p in parts):
        audio = [sf.read(p, dtype="float32") for p in parts]
        found["librivox"] = (np.concatenate([a for a, _ in audio])[: 16000 * 12], audio[0][1])
    for name, path in (("codec2_vk5qi", CODEC2 / "wav/vk5qi.wav"),
                       ("codec2_orig16k", CODEC2 / "raw/speech_orig_16k.wav")):  # fmt: skip
        if path.exists():
            a, r = sf.read(path, dtype="float32")
            found[name] = (np.asarray(a[: r * 12], np.float32), int(r))
    return found


def music(kind: str, seed: int = 0, rate: int = 22050) -> F32:
    """~10 s of synthetic music in 2 s phrases with rests and phrase dynamics."""
    rng = np.random.default_rng(seed)
    scale = [261.6, 293.7, 329.6, 349.2, 392.0, 440.0, 493.9, 523.3]

    def note(f: float, dur: float) -> F32:
        t = np.arange(int(dur * rate)) / rate
        x = sum((0.6**k) * np.sin(2 * np.pi * f * (k + 1) * t) for k in range(8))
        return np.asarray(x * np.minimum(1, t / 0.01) * np.exp(-3 * t), np.float32)

    phrases = []
    for p in range(5):
        notes = []
        for _ in range(8):
            f = scale[int(rng.integers(0, 8))]
            x = note(f, 0.25)
            if kind != "melody":
                x = x + note(f * 1.26, 0.25) + note(f * 1.5, 0.25)
            notes.append(x)
        phrase = np.concatenate(notes) * (0.3 + 0.35 * (p % 3))
        if kind == "drums":
            for s in range(0, len(phrase) - 2000, rate // 2):
                phrase[s : s + 2000] += rng.normal(0, 0.3, 2000) * np.exp(-np.arange(2000) / 300)
        phrases += [phrase, np.zeros(rate // 2, np.float32)]
    y = np.concatenate(phrases)
    return np.asarray(0.5 * y / np.abs(y).max(), np.float32)


def intake(intake_: ClipIntake, audio: F32, rate: int) -> Clip | str:
    try:
        return intake_(wav(audio, rate))
    except ClipError as exc:
        return exc.code


def stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {"n": len(values), "min": round(float(a.min()), 4),
            "p05": round(float(np.percentile(a, 5)), 4), "p50": round(float(np.median(a)), 4),
            "p95": round(float(np.percentile(a, 95)), 4), "max": round(float(a.max()), 4)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-o", "--output", default="")
    args = p.parse_args()
    t0 = time.perf_counter()
    settings = Settings(acoustic="on")
    enc = SpeakerEncoder()
    checks = RefineChecks()
    take = ClipIntake()
    stock = render_stock(settings)
    rate = 22050

    def measure(audio: F32, r: int) -> dict[str, Any]:
        clip = intake(take, audio, r)
        if isinstance(clip, str):
            return {"refused": clip}
        return {"halves": halves_similarity(clip, enc.embed_audio),
                "voiced": clip.voiced_fraction, "speech_s": clip.speech_s}  # fmt: skip

    same = {vid: measure(np.concatenate([a, gap(rate), b]), rate) for vid, (a, b) in stock.items()}
    # ~6 s clips (3 s of each sentence): the shortest a clip is split at (5 s of speech)
    cut = 3 * rate
    same_short = {
        vid: measure(np.concatenate([a[:cut], gap(rate), b[:cut]]), rate)
        for vid, (a, b) in stock.items()
    }
    pairs_short = {
        f"{va}+{vb}": measure(np.concatenate([stock[va][0][:cut], gap(rate), stock[vb][1][:cut]]),
                              rate)
        for group in (EN, ZH) for va, vb in itertools.combinations(group, 2)
    }  # fmt: skip
    pairs: dict[str, dict[str, Any]] = {}
    for group in (EN, ZH):
        for va, vb in itertools.permutations(group, 2):
            if va < vb or len(pairs) % 7 == 0:  # every unordered pair, some in both orders
                pairs[f"{va}+{vb}"] = measure(
                    np.concatenate([stock[va][0], gap(rate), stock[vb][1]]), rate
                )
    real = real_readers()
    real_same = {name: measure(a, r) for name, (a, r) in real.items()}
    real_pairs = {}
    for (na, (a, ra)), (nb, (b, rb)) in itertools.permutations(real.items(), 2):
        a16 = (
            a if ra == 16000 else np.asarray(__import__("soxr").resample(a, ra, 16000), np.float32)
        )
        b16 = (
            b if rb == 16000 else np.asarray(__import__("soxr").resample(b, rb, 16000), np.float32)
        )
        real_pairs[f"{na}+{nb}"] = measure(
            np.concatenate([a16[: 16000 * 6], gap(16000), b16[16000 * 6 : 16000 * 12]]), 16000
        )
    tunes = {k: measure(music(k), 22050) for k in ("melody", "chords", "drums")}

    def col(d: dict[str, dict[str, Any]], key: str) -> list[float]:
        return [float(v[key]) for v in d.values() if key in v]

    same_h = col(same, "halves") + col(real_same, "halves")
    pair_h = col(pairs, "halves") + col(real_pairs, "halves")
    thr = checks.min_halves_cosine
    report = {
        "what": "GE2E cosine of a clip's halves (one speaker vs two) and voiced fraction "
        "(speech vs music), through the clip intake, for the refinement checks",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(
            ["PYTHONPATH=server .venv/bin/python", "bench/clone_clip_checks.py", *sys.argv[1:]]
        ),
        "host": {"cpus": os.cpu_count(), "machine": platform.machine()},
        "thresholds": {"min_halves_cosine": thr, "max_voiced_fraction": checks.max_voiced_fraction},
        "halves_cosine": {
            "same_speaker": stats(same_h),
            "two_speakers": stats(pair_h),
            "same_below_threshold": sum(h < thr for h in same_h),
            "two_speakers_caught": f"{sum(h < thr for h in pair_h)} of {len(pair_h)}",
            "two_speakers_missed": sorted(
                [k for k, v in {**pairs, **real_pairs}.items() if v.get("halves", 0) >= thr]
            ),
        },
        "halves_cosine_6s": {
            "same_speaker": stats(col(same_short, "halves")),
            "two_speakers": stats(col(pairs_short, "halves")),
            "same_below_threshold": sum(h < thr for h in col(same_short, "halves")),
            "two_speakers_caught": f"{sum(h < thr for h in col(pairs_short, 'halves'))} of "
            f"{len(col(pairs_short, 'halves'))}",
        },
        "voiced_fraction": {
            "speech": stats(col(same, "voiced") + col(real_same, "voiced")),
            "music": {k: v.get("voiced", v.get("refused")) for k, v in tunes.items()},
        },
        "clips": {
            "same": same,
            "real_same": real_same,
            "pairs": pairs,
            "real_pairs": real_pairs,
            "same_6s": same_short,
            "pairs_6s": pairs_short,
            "music": tunes,
        },
        "seconds": round(time.perf_counter() - t0, 1),
    }
    text = json.dumps(report, indent=1, default=lambda x: round(float(x), 4))
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("thresholds", "halves_cosine", "halves_cosine_6s",
                                             "voiced_fraction", "seconds")}, indent=1,
                     default=lambda x: round(float(x), 4)))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
