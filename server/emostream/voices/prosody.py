"""Prosody as numbers: measure a reference clip (pyworld), and apply controls to predicted prosody.

*Emotion by reference clip*: :func:`measure_prosody` reads F0 level and range, energy, a speaking
rate proxy and the pause share from 16 kHz speech (WORLD's DIO + StoneMask, 10 ms frames);
:func:`relative_controls` turns a reference clip's figures, against the same speaker's neutral
figures, into :class:`~emostream.text.emotion.ProsodyControls` — the same controls an emotion
label produces, so the acoustic model needs one path for both.

*Applying controls* (numpy, for the variance adaptor): :func:`apply_pitch` shifts and scales F0
in the log domain around the utterance's mean, :func:`apply_energy` scales energy,
:func:`apply_durations` divides speech durations by the rate and scales pauses, with rounding
that carries the remainder so totals do not drift.

pyworld is optional (``pip install pyworld``; it imports ``pkg_resources``, so setuptools<81).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from emostream.text.emotion import LIMITS, ProsodyControls
from emostream.voices.cloning.clip import SAMPLE_RATE, active_frames, frame_db

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class ProsodyStats:
    f0_median_hz: float  # over voiced frames
    f0_range_st: float  # p90 - p10 of voiced F0, semitones
    energy_db: float  # RMS of active frames, dBFS
    syllable_rate: float  # voiced-segment onsets per second of active speech
    pause_fraction: float  # inactive share of the span from first to last active frame


def _f0(audio: FloatArray, sample_rate: int, frame_period_ms: float) -> npt.NDArray[np.float64]:
    import pyworld

    x = audio.astype(np.float64)

    def track(lo: float, hi: float) -> npt.NDArray[np.float64]:
        f0, t = pyworld.dio(x, sample_rate, f0_floor=lo, f0_ceil=hi, frame_period=frame_period_ms)
        return np.asarray(pyworld.stonemask(x, f0, t, sample_rate), dtype=np.float64)

    # two passes: a wide search finds the speaker's register, a one-octave-each-way search
    # around its median then avoids octave jumps (which would inflate the range)
    first = track(60.0, 600.0)
    if np.count_nonzero(first > 0) < 10:
        return first
    median = float(np.median(first[first > 0]))
    return track(max(40.0, median / 1.7), min(1000.0, median * 2.0))


def count_nuclei(
    levels_db: FloatArray, voiced: npt.NDArray[np.bool_], *, dip_db: float = 2.0
) -> int:
    """Syllable nuclei: peaks of the smoothed level contour at voiced frames, each separated
    from the previous one by a dip of at least ``dip_db`` (after de Jong & Wempe, 2009)."""
    kernel = np.hanning(7)
    smooth = np.convolve(levels_db.astype(np.float64), kernel / kernel.sum(), mode="same")
    loud = float(np.percentile(smooth, 95))
    count, valley, last_peak = 0, np.inf, -np.inf
    for i in range(1, len(smooth) - 1):
        value = smooth[i]
        valley = min(valley, value)
        is_peak = smooth[i - 1] < value >= smooth[i + 1]
        if not is_peak or i >= len(voiced) or not voiced[i] or value < loud - 25.0:
            continue
        if value - valley >= dip_db and (count == 0 or last_peak - valley >= dip_db):
            count += 1
            last_peak, valley = value, value
        elif value > last_peak:
            last_peak = value
    return count


def measure_prosody(audio: FloatArray, sample_rate: int = SAMPLE_RATE) -> ProsodyStats:
    """Prosody figures of one speech clip. Raises ``ValueError`` if it has no voiced frames."""
    f0 = _f0(audio, sample_rate, 10.0)
    voiced = f0 > 0
    if np.count_nonzero(voiced) < 10:
        raise ValueError("too few voiced frames to measure pitch")
    st = 12.0 * np.log2(f0[voiced] / 100.0)
    hop = sample_rate // 100
    levels = frame_db(audio.astype(np.float32), frame=hop * 5 // 2, hop=hop)
    active = active_frames(levels)
    on = np.flatnonzero(active)
    span = active[on[0] : on[-1] + 1] if on.size else active
    speech_s = max(1e-3, float(np.count_nonzero(active)) / 100.0)
    nuclei = count_nuclei(levels, voiced[: len(levels)])
    power = 10.0 ** (levels[active] / 10.0) if on.size else np.array([1e-12])
    return ProsodyStats(
        f0_median_hz=float(100.0 * 2.0 ** (np.median(st) / 12.0)),
        f0_range_st=float(np.percentile(st, 90) - np.percentile(st, 10)),
        energy_db=float(10.0 * np.log10(np.mean(power))),
        syllable_rate=nuclei / speech_s,
        pause_fraction=float(1.0 - np.mean(span)) if span.size else 0.0,
    )


def relative_controls(reference: ProsodyStats, neutral: ProsodyStats) -> ProsodyControls:
    """Controls that move ``neutral`` speech toward ``reference`` (clamped to emotion LIMITS).

    Energy is only meaningful when both clips were recorded at the same gain (compare clips
    *before* loudness normalisation, or leave ``energy_scale`` out).
    """

    def clamp(name: str, value: float) -> float:
        lo, hi = LIMITS[name]
        return min(hi, max(lo, value))

    shift = 12.0 * math.log2(reference.f0_median_hz / neutral.f0_median_hz)
    pause_ratio = (reference.pause_fraction + 0.02) / (neutral.pause_fraction + 0.02)
    return ProsodyControls(
        pitch_shift_st=clamp("pitch_shift_st", shift),
        pitch_range=clamp("pitch_range", reference.f0_range_st / max(neutral.f0_range_st, 0.1)),
        energy_scale=clamp(
            "energy_scale", 10.0 ** ((reference.energy_db - neutral.energy_db) / 20)
        ),
        rate_scale=clamp("rate_scale", reference.syllable_rate / max(neutral.syllable_rate, 0.1)),
        pause_scale=clamp("pause_scale", pause_ratio),
    )


def apply_pitch(f0_hz: FloatArray, controls: ProsodyControls) -> FloatArray:
    """F0 with level shift and range scale applied in log-F0 around the voiced mean (0 = unvoiced)."""
    out = np.array(f0_hz, dtype=np.float32, copy=True)
    voiced = out > 0
    if not voiced.any():
        return out
    logf = np.log(out[voiced].astype(np.float64))
    mean = logf.mean()
    shifted = (
        mean + controls.pitch_range * (logf - mean) + controls.pitch_shift_st * math.log(2) / 12
    )
    out[voiced] = np.exp(shifted).astype(np.float32)
    return out


def apply_energy(energy: FloatArray, controls: ProsodyControls) -> FloatArray:
    """Linear-amplitude energy scaled by ``energy_scale``."""
    out: FloatArray = (np.asarray(energy, dtype=np.float32) * controls.energy_scale).astype(
        np.float32
    )
    return out


def apply_durations(
    durations: npt.NDArray[np.floating] | npt.NDArray[np.integer],
    is_pause: npt.NDArray[np.bool_],
    controls: ProsodyControls,
    *,
    min_frames: int = 1,
) -> npt.NDArray[np.int64]:
    """Frames per unit: speech divided by ``rate_scale``, pauses times ``pause_scale``.

    Rounding carries the remainder from unit to unit so the total matches the scaled sum to
    within one frame; every speech unit keeps at least ``min_frames``.
    """
    d = np.asarray(durations, dtype=np.float64)
    scale = np.where(is_pause, controls.pause_scale, 1.0 / controls.rate_scale)
    target = d * scale
    out = np.zeros(len(d), dtype=np.int64)
    carry = 0.0
    for i, t in enumerate(target):
        want = t + carry
        n = math.floor(want + 0.5)
        if not is_pause[i] and d[i] > 0:
            n = max(min_frames, n)
        n = max(0, n)
        carry = want - n
        out[i] = n
    return out
