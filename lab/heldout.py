"""Held-out speakers, texts and real-speaker clips for ``python -m lab.acoustic_quality --heldout``.

**Texts** are the hand-written held-out lines (:func:`train.sentences.heldout`,
``models/corpus/heldout/{en,zh}.txt``), never produced by the training generator.

**Synthetic held-out speakers** are Kokoro style tables left out of v0.2 and v0.3 training
(:data:`HELDOUT_VOICES`); two Mandarin entries are balanced blends that include the held-out
voices. The acoustic model is conditioned only on a 256-d GE2E embedding, so for such a speaker
the embedding is computed (:func:`teacher_embedding`): the teacher renders
:data:`CONDITIONING_RENDERS` sentences that are neither training text (``models/corpus/text``)
nor held-out text (``sentences.generate(lang, 50, seed=999)``, filtered), each is embedded with
``SpeakerEncoder.embed_audio`` at 16 kHz, the mean is L2-normalised.

**Real human speakers** for zero-shot cloning (:data:`REAL_SPEAKERS`), all offline, each split
into a conditioning part and a disjoint judge part. Sources (Debian packages, installed by
``scripts/setup.sh --dev``):

==================  ===================================================  ==================
speaker             package: files (under the package's folder)          licence
==================  ===================================================  ==================
ps_librivox         pocketsphinx-testdata: test/data/librivox/*0870-0930  BSD-2 (CMU); audio
                    (LibriVox reader, *Sense and Sensibility*, 16 kHz)    public domain
ps_cards            pocketsphinx-testdata: test/data/cards/00[1-5].wav    BSD-2 (CMU)
ps_an4              pocketsphinx-testdata: goforward/numbers/something.raw BSD-2 (CMU)
alsa_voice          alsa-utils: /usr/share/sounds/alsa/{Front,Rear,Side}_* GPL-2 (alsa-utils)
                    (speaker-test channel names, 48 kHz; ``Noise.wav`` is
                    noise and is not used)
codec2_harvard16k   codec2-examples: /usr/share/codec2/raw/               LGPL-2.1 (codec2)
                    speech_orig_16k.wav (Harvard sentences, 16 kHz)
codec2_ve9qrp       codec2-examples: /usr/share/codec2/wav/ve9qrp.wav      LGPL-2.1 (codec2)
                    (amateur radio operator, 112 s, 8 kHz)
codec2_ka9q         codec2-examples: /usr/share/codec2/raw/cq_ref.raw      LGPL-2.1 (codec2)
                    (amateur radio CQ call, 9 s, 8 kHz headerless)
asterisk_allison    asterisk-core-sounds-en-wav: /usr/share/asterisk/      CC-BY-SA-3.0
                    sounds/en_US_f_Allison/agent-*.wav (IVR prompts by     (Allison Smith)
                    Allison Smith, 8 kHz)
==================  ===================================================  ==================

Distinctness is checked with the d-vector judge (:func:`distinctness`,
``python -m lab.heldout``; each speaker's conditioning audio against every speaker's
judge audio, 2026-12-03): same speaker 0.78-0.97, other speakers at most 0.64
(codec2_ve9qrp vs codec2_ka9q, two radio amateurs on an HF channel).
Sources left out: codec2 ``vk5qi`` (0.86 against ``ve9qrp``: the judge hears the HF channel more
than the person), ``hts2``/``f2400`` (0.72-0.78 against Allison), ``vk2tpm_004`` and ``david4``
(Whisper finds no speech), Asterisk's es-MX prompts (also Allison Smith) and fr-CA (0.88 against
Allison at 8 kHz).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
REPO = Path(__file__).resolve().parents[1]
JUDGE_SR = 16000

# Kokoro voices left out of v0.2 and v0.3 training, and Mandarin blends built only from them (and one
# training voice at 0.4 for a fourth, different timbre).
HELDOUT_VOICES: dict[str, dict[str, dict[str, float]]] = {
    "en": {
        "af_river": {"af_river": 1.0},
        "am_echo": {"am_echo": 1.0},
        "bf_alice": {"bf_alice": 1.0},
        "bm_fable": {"bm_fable": 1.0},
    },
    "zh": {
        "zf_xiaoyi": {"zf_xiaoyi": 1.0},
        "zm_yunxia": {"zm_yunxia": 1.0},
        "zh_heldout_mix_xiaoyi_yunxia": {"zf_xiaoyi": 0.5, "zm_yunxia": 0.5},
        "zh_heldout_mix_xiaoyi_yunjian": {"zf_xiaoyi": 0.6, "zm_yunjian": 0.4},
    },
}
# Stock voices seen in training (judged from a speakers.npz, as v0.1 was).
TRAIN_VOICES: dict[str, list[str]] = {
    "en": ["af_heart", "am_michael"],
    "zh": ["zf_xiaoxiao", "zm_yunxi"],
}
# The stock voices a clone has to beat in the similarity criterion (English, in training).
STOCK_VOICES = ["af_heart", "am_michael", "bf_emma", "bm_george"]
CONDITIONING_RENDERS = 3
CONDITIONING_SEED = 999


def heldout_texts(lang: str, count: int | None = None) -> list[str]:
    """The first ``count`` hand-written held-out lines of ``lang``."""
    from train.sentences import heldout

    lines = heldout(lang)
    return lines if count is None else lines[:count]


def training_lines(lang: str) -> set[str]:
    path = REPO / "models/corpus/text" / f"{lang}.txt"
    if not path.exists():
        return set()
    return {x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip()}


def conditioning_texts(lang: str, count: int = CONDITIONING_RENDERS) -> list[str]:
    """Sentences for rendering an unseen voice's GE2E: neither training nor held-out text."""
    from train.sentences import generate, heldout

    banned = training_lines(lang) | set(heldout(lang))
    pool = [s for s in generate(lang, 50, seed=CONDITIONING_SEED) if s not in banned]
    # longer sentences give GE2E more partials; keep the generator's order among equals
    pool.sort(key=len, reverse=True)
    if len(pool) < count:
        raise RuntimeError(f"only {len(pool)} {lang} conditioning sentences")
    return pool[:count]


def teacher_embedding(
    render: Callable[[str], FloatArray],
    texts: Sequence[str],
    embed: Callable[[FloatArray], FloatArray],
    *,
    rate: int = 24000,
) -> FloatArray:
    """Mean of ``embed`` (16 kHz audio → unit vector) over renderings, L2-normalised."""
    import soxr

    vecs = [embed(np.asarray(soxr.resample(render(t), rate, JUDGE_SR), np.float32)) for t in texts]
    return unit_mean(vecs)


def unit_mean(vecs: Sequence[FloatArray]) -> FloatArray:
    mean = np.mean(np.stack(vecs), axis=0)
    out: FloatArray = (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)
    return out


# ---------------------------------------------------------------------------- real speakers
@dataclass(frozen=True)
class Segment:
    """Part of an audio file: ``[start_s, end_s)`` (``end_s`` None: to the end)."""

    path: str
    start_s: float = 0.0
    end_s: float | None = None
    raw_rate: int = 0  # headerless 16-bit little-endian at this rate; 0: a file soundfile reads


@dataclass(frozen=True)
class RealSpeaker:
    name: str
    package: str  # Debian package that ships the files
    licence: str
    conditioning: tuple[Segment, ...]
    judge: tuple[Segment, ...]
    note: str = ""
    files: tuple[str, ...] = field(default=())

    def paths(self) -> list[Path]:
        return sorted({Path(s.path) for s in (*self.conditioning, *self.judge)})

    def available(self) -> bool:
        return all(p.exists() for p in self.paths())


PS = "/usr/share/pocketsphinx/test/data/"
LV = PS + "librivox/sense_and_sensibility_01_austen_64kb-0"
ALSA = "/usr/share/sounds/alsa/"
C2 = "/usr/share/codec2/"
ALLISON = "/usr/share/asterisk/sounds/en_US_f_Allison/"


def _segs(paths: Sequence[str], raw_rate: int = 0) -> tuple[Segment, ...]:
    return tuple(Segment(p, raw_rate=raw_rate) for p in paths)


REAL_SPEAKERS: tuple[RealSpeaker, ...] = (
    RealSpeaker("ps_librivox", "pocketsphinx-testdata", "BSD-2 (CMU); LibriVox public domain",
                _segs([LV + "870.wav", LV + "890.wav"]),
                _segs([LV + "880.wav", LV + "920.wav", LV + "930.wav"])),
    RealSpeaker("ps_cards", "pocketsphinx-testdata", "BSD-2 (CMU)",
                _segs([PS + "cards/003.wav", PS + "cards/004.wav", PS + "cards/005.wav"]),
                _segs([PS + "cards/001.wav", PS + "cards/002.wav"])),
    RealSpeaker("ps_an4", "pocketsphinx-testdata", "BSD-2 (CMU)",
                _segs([PS + "goforward.raw", PS + "numbers.raw"], 16000),
                _segs([PS + "something.raw"], 16000)),
    RealSpeaker("alsa_voice", "alsa-utils", "GPL-2 (alsa-utils debian/copyright)",
                _segs([ALSA + f for f in ("Front_Center.wav", "Front_Left.wav", "Front_Right.wav",
                                          "Rear_Center.wav", "Rear_Left.wav")]),
                _segs([ALSA + f for f in ("Rear_Right.wav", "Side_Left.wav", "Side_Right.wav")]),
                "speaker-test channel names, 48 kHz"),
    RealSpeaker("codec2_harvard16k", "codec2-examples", "LGPL-2.1 (codec2 debian/copyright)",
                (Segment(C2 + "raw/speech_orig_16k.wav", 0.0, 5.4),),
                (Segment(C2 + "raw/speech_orig_16k.wav", 5.4, None),),
                "Harvard sentences, 16 kHz, split at 5.4 s"),
    RealSpeaker("codec2_ve9qrp", "codec2-examples", "LGPL-2.1 (codec2 debian/copyright)",
                (Segment(C2 + "wav/ve9qrp.wav", 0.0, 20.0),),
                (Segment(C2 + "wav/ve9qrp.wav", 60.0, 75.0),),
                "amateur radio operator, 8 kHz"),
    RealSpeaker("codec2_ka9q", "codec2-examples", "LGPL-2.1 (codec2 debian/copyright)",
                (Segment(C2 + "raw/cq_ref.raw", 0.0, 4.6, 8000),),
                (Segment(C2 + "raw/cq_ref.raw", 4.6, None, 8000),),
                "amateur radio CQ call, 8 kHz headerless"),
    RealSpeaker("asterisk_allison", "asterisk-core-sounds-en-wav", "CC-BY-SA-3.0 (Allison Smith)",
                _segs([ALLISON + f for f in ("agent-alreadyon.wav", "agent-incorrect.wav",
                                             "agent-newlocation.wav")]),
                _segs([ALLISON + f for f in ("agent-pass.wav", "agent-loginok.wav",
                                             "auth-thankyou.wav", "activated.wav")]),
                "IVR prompts, 8 kHz"),
)  # fmt: skip


def read_segment(seg: Segment, rate: int = JUDGE_SR) -> FloatArray:
    """Mono float32 at ``rate``."""
    import soxr

    path = Path(seg.path)
    if seg.raw_rate:
        raw = path.read_bytes()
        audio = np.frombuffer(raw[: len(raw) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
        sr = seg.raw_rate
    else:
        import soundfile as sf

        audio, sr = sf.read(path, dtype="float32", always_2d=True)
        audio = audio.mean(axis=1)
    start = int(seg.start_s * sr)
    end = len(audio) if seg.end_s is None else int(seg.end_s * sr)
    audio = audio[start:end]
    if sr != rate:
        audio = soxr.resample(audio, sr, rate)
    return np.asarray(audio, dtype=np.float32)


def join(clips: Sequence[FloatArray], gap_s: float = 0.3, rate: int = JUDGE_SR) -> FloatArray:
    gap = np.zeros(int(rate * gap_s), np.float32)
    parts: list[FloatArray] = []
    for c in clips:
        parts += [c, gap]
    return np.concatenate(parts[:-1])


def speaker_audio(spk: RealSpeaker) -> tuple[FloatArray, FloatArray]:
    """(conditioning, judge reference), 16 kHz."""
    return (
        join([read_segment(s) for s in spk.conditioning]),
        join([read_segment(s) for s in spk.judge]),
    )


# ---------------------------------------------------------------------------- criterion
def margin_summary(
    rows: dict[str, dict[str, Any]], *, min_wins: int = 7, min_margin: float = 0.08
) -> dict[str, Any]:
    """The cloning criterion over speakers with ``dvector_clone_vs_ref`` and
    ``dvector_stock_vs_ref_max``: how many clones beat the best stock voice, and the mean margin
    (clone − best stock) over all judged speakers."""
    done = {k: v for k, v in rows.items() if "dvector_clone_vs_ref" in v}
    margins = [v["dvector_clone_vs_ref"] - v["dvector_stock_vs_ref_max"] for v in done.values()]
    wins = sum(1 for m in margins if m > 0)
    mean_margin = round(statistics.fmean(margins), 4) if margins else float("nan")
    return {
        "speakers": len(done),
        "clone_beats_best_stock": wins,
        "mean_margin_over_best_stock": mean_margin,
        "margin_per_speaker": {k: round(m, 4) for k, m in zip(done, margins)},
        "criterion": f">= {min_wins} of {max(8, len(done))} clones beat the best stock voice, "
        f"mean margin >= {min_margin}",
        "criterion_met": len(done) >= 8 and wins >= min_wins and mean_margin >= min_margin,
    }


def distinctness(
    speakers: Sequence[RealSpeaker] = REAL_SPEAKERS,
    embed: Callable[[FloatArray], FloatArray] | None = None,
) -> dict[str, Any]:
    """d-vector cosine of each speaker's conditioning audio against every speaker's judge audio:
    the diagonal is the same person, the rest must stay clearly lower."""
    if embed is None:
        from lab.dvector import DVectorJudge

        embed = DVectorJudge().embed
    names, cond, ref = [], [], []
    for spk in speakers:
        if spk.available():
            c, r = speaker_audio(spk)
            names.append(spk.name)
            cond.append(embed(c))
            ref.append(embed(r))
    matrix = [[round(float(np.dot(a, b)), 3) for b in ref] for a in cond]
    n = len(names)
    off = [(matrix[i][j], names[i], names[j]) for i in range(n) for j in range(n) if i != j]
    worst = max(off) if off else (float("nan"), "", "")
    return {
        "speakers": names,
        "cond_vs_judge": matrix,
        "same_speaker_min": min(matrix[i][i] for i in range(n)) if n else float("nan"),
        "other_speaker_max": worst[0],
        "other_speaker_max_pair": list(worst[1:]),
    }


if __name__ == "__main__":  # python -m lab.heldout: the distinctness check
    import json

    print(json.dumps(distinctness(), indent=1))
