"""Whether a clip can be refined against: one speaker, speech (not music), enough of it.

The clip intake (:mod:`emostream.voices.cloning.clip`) already refuses what no clone can use:
broken, silent, noise, tones, too short. A clip it accepts can still be wrong to *fit* a voice
to, because refinement copies the clip's long-term spectrum
(:mod:`emostream.voices.cloning.refine`):

* **two speakers** (an interview, a duet): the fitted spectrum is a blend of both. Detected by
  the project's GE2E: the embeddings of the clip's first and second halves (of its speech, by
  the intake's activity mask) are as far apart as two different people's;
* **music or singing**: voiced (periodic) nearly all the time, where speech is voiced 30-80 %
  of its active frames (:func:`~emostream.voices.cloning.clip.voiced_fraction`);

A clip with too little speech to split (under ``min_split_speech_s``) is refined without the
two-speaker test; the refiner itself refuses one with too little clear speech
(``too_little_speech``).

:func:`refine_verdict` says which (a :class:`ClipVerdict` with a stable ``code``), or None.
Sans-I/O: the embedding function is passed in. Thresholds were measured with
``bench/clone_clip_checks.py`` on clips built from stock voices the server renders and from
real readings (``bench/results/2026-12-07-cpu2-clone-clip-checks.json``); see
:class:`RefineChecks` for the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from emostream.voices.cloning.clip import HOP, Clip

FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]
# (16 kHz audio, its 10 ms activity mask) -> unit GE2E vector (SpeakerEncoder.embed_audio)
EmbedAudio = Callable[[FloatArray, BoolArray], FloatArray]


@dataclass(frozen=True)
class ClipVerdict:
    """Why a clip is not refined against: ``code`` (stable), ``message`` (for people)."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class RefineChecks:
    """Thresholds of :func:`refine_verdict`, measured 2026-12-07 with
    ``bench/clone_clip_checks.py`` (``bench/results/2026-12-07-cpu2-clone-clip-checks.json``;
    clips through the intake).

    ``min_halves_cosine``: GE2E cosine of the clip's two halves below which it holds two
    speakers. One speaker, ~10 s clips: 0.88-0.97 (29 stock voices rendered by the server, 3
    real readers; the real ones lowest, 0.880 and 0.884); ~6 s clips: 0.84-0.95. Two speakers:
    every real pair 0.61-0.69; pairs of stock voices 0.46-0.91 (median 0.67; 6 s: 0.44-0.90,
    median 0.63), voices of one model being closer to each other than people are. 0.75 leaves
    0.09 below the lowest one-speaker clip, catches every real pair and 79 % of the stock
    pairs (86 % at 6 s); a pair it misses sounds alike to the project's own encoder, so the
    blend refined to is close to either voice. ``min_split_speech_s``: speech below which the
    halves are not compared (each half needs ~2.5 s for GE2E's 1.6 s windows to average).
    ``max_voiced_fraction``: speech 0.24-0.82 (p95 0.77), synthetic music 0.94-1.00."""

    min_halves_cosine: float = 0.75
    min_split_speech_s: float = 5.0
    max_voiced_fraction: float = 0.9


def split_halves(clip: Clip) -> tuple[tuple[FloatArray, BoolArray], tuple[FloatArray, BoolArray]]:
    """The clip's audio cut where half of its active (speech) frames lie on each side, each
    part with its own activity mask."""
    active = clip.active
    on = np.flatnonzero(active)
    cut_frame = int(on[len(on) // 2]) if on.size else len(active) // 2
    cut = cut_frame * HOP
    first = (clip.audio[:cut], active[:cut_frame])
    second = (clip.audio[cut:], active[cut_frame:])
    return first, second


def halves_similarity(clip: Clip, embed: EmbedAudio) -> float:
    """GE2E cosine of the clip's first and second halves (:func:`split_halves`)."""
    (a, ma), (b, mb) = split_halves(clip)
    ea, eb = embed(a, ma), embed(b, mb)
    return float(np.dot(ea, eb) / (np.linalg.norm(ea) * np.linalg.norm(eb) + 1e-12))


def refine_verdict(
    clip: Clip, embed: EmbedAudio, checks: RefineChecks | None = None
) -> ClipVerdict | None:
    """None when ``clip`` may be refined against, else why not (cheapest test first)."""
    c = checks or RefineChecks()
    if clip.voiced_fraction > c.max_voiced_fraction:
        return ClipVerdict(
            "not_speech",
            f"the clip sounds like music or singing (voiced {100 * clip.voiced_fraction:.0f} % "
            f"of the time; speech measures 25-80 %): refinement needs plain speech",
        )
    if clip.speech_s < c.min_split_speech_s:
        return None  # too short to split: refined without the two-speaker test
    similarity = halves_similarity(clip, embed)
    if similarity < c.min_halves_cosine:
        return ClipVerdict(
            "multiple_speakers",
            f"the clip's two halves sound like different people (GE2E cosine "
            f"{similarity:.2f}, one speaker measures {c.min_halves_cosine:g} or more): "
            "refinement needs one speaker",
        )
    return None
