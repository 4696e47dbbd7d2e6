"""Vocal effort: how the ``energy`` control and the emotions' loudness reach the listener.

Louder speech is not the same speech turned up: as a talker raises the voice, the 1–3 kHz region
rises about 1.4 dB per dB of overall level while the region below 300 Hz rises about 0.25 dB
(ANSI S3.5-1997, Table 3: long-term speech spectra of normal, raised, loud and shouted speech
after Pearsons, Bennett & Fidell, 1977). A request's effort ``level_db = 20·log10(energy_scale)``
(:func:`effort_db`: the ``energy`` control times the emotion profile's energy, see
:mod:`emostream.text.emotion`) is realised in two parts, both after the acoustic model, so the
CPU (ONNX) and GPU (torch) paths do the same:

* **spectral balance** (:func:`effort_offset`, :func:`apply_effort`): each mel band of the
  segment's log-mel moves by ``level_db × slope_b`` dB, ``slope_b`` being the standard's
  loud-vs-normal slope at the band's centre, less one uniform amount that keeps the power of
  the segment's loud frames where it was (its own spectrum weighs the bands): the balance
  changes, the level does not (brighter as the voice gets louder, darker as it gets softer);
* **level** (:func:`effort_gain`, :func:`apply_gain`): the decoded audio times
  ``10**(level_db / 20)``, exactly what the control asks. Not in the mels: the light vocoder
  barely follows a level change of its input (a uniform +6 dB in the log-mel comes out about
  +0.9 dB; ``lab.effort_direction``), and the acoustic model's own energy input moved its mels
  ~4 dB per 6 dB asked, with no spectral change beside the level (same tool) — so the model's
  energy input is held at 1 (:func:`emostream.voices.acoustic.prosody_for`). A gain above 1 goes
  with a memoryless soft limiter above −3 dBFS (chunk by chunk the same), instead of the hard
  clip at full scale the output format would otherwise apply.

The gain and the balance (the offset's differences between bands) are linear in ``level_db``,
which is linear in an emotion's intensity, so a label at intensity ``k`` is ``neutral + (label −
neutral) × k`` in dB and in spectral balance; only the uniform term that holds the power is not.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from emostream.networks.mel import MelConfig, mel_filterbank, silence_level

FloatArray = npt.NDArray[np.float32]

# ANSI S3.5-1997 Table 3: one-third-octave band centres (Hz) and the standard speech spectrum
# level (dB per Hz) of normal (62.35 dB overall) and loud (74.85 dB) vocal effort.
ANSI_BANDS_HZ = (160, 200, 250, 315, 400, 500, 630, 800, 1000, 1250, 1600, 2000, 2500, 3150,
                 4000, 5000, 6300, 8000)  # fmt: skip
ANSI_NORMAL_DB = (32.41, 34.48, 34.75, 33.98, 34.59, 34.27, 32.06, 28.30, 25.01, 23.00, 20.15,
                  17.32, 13.18, 11.55, 9.33, 5.31, 2.59, 1.13)  # fmt: skip
ANSI_LOUD_DB = (35.29, 37.76, 41.55, 43.78, 43.40, 44.85, 45.55, 44.05, 42.16, 40.53, 37.70,
                34.39, 30.98, 28.21, 25.41, 18.35, 13.87, 11.39)  # fmt: skip
ANSI_OVERALL_DB = (62.35, 74.85)  # normal, loud

MEL = MelConfig()  # the acoustic model's mels (HiFi-GAN V1's settings)
LIMIT_KNEE = 10.0 ** (-3.0 / 20.0)  # the soft limiter's knee (−3 dBFS)
QUIET_NATS = 5.0  # frames whose loudest band is this far below the loudest frame's don't weigh


def effort_db(energy_scale: float) -> float:
    """The effort an energy scale asks for, in dB (``20·log10``). Raises ``ValueError`` for a
    scale that is not a positive finite number."""
    if not (energy_scale > 0.0 and math.isfinite(energy_scale)):
        raise ValueError("energy scale must be a positive finite number")
    return 20.0 * math.log10(energy_scale)


def effort_gain(level_db: float) -> float:
    """The audio gain that realises ``level_db``."""
    return float(10.0 ** (level_db / 20.0))


@lru_cache(maxsize=4)
def band_slopes(config: MelConfig = MEL) -> FloatArray:
    """Per mel band (``[n_mels]``): dB the band rises per dB of overall level when the voice goes
    from normal to loud (the standard's bands interpolated in log-frequency at each band's
    centre; held at the ends)."""
    fb = mel_filterbank(config).astype(np.float64)
    freqs = np.linspace(0.0, config.sample_rate / 2, fb.shape[1])
    centre = (fb * freqs).sum(axis=1) / np.maximum(fb.sum(axis=1), 1e-12)
    per_db = (np.asarray(ANSI_LOUD_DB) - np.asarray(ANSI_NORMAL_DB)) / (
        ANSI_OVERALL_DB[1] - ANSI_OVERALL_DB[0]
    )
    bands = np.log(np.asarray(ANSI_BANDS_HZ, dtype=np.float64))
    slopes = np.interp(np.log(np.maximum(centre, 1.0)), bands, per_db)
    out: FloatArray = slopes.astype(np.float32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4)
def _band_widths(config: MelConfig = MEL) -> npt.NDArray[np.float64]:
    """Relative width of each band (1 / its Slaney triangle's height): a log-mel value is a
    mean magnitude over the band, so its power is that squared times the width."""
    fb = mel_filterbank(config).astype(np.float64)
    widths: npt.NDArray[np.float64] = 1.0 / np.maximum(fb.max(axis=1), 1e-12)
    out: npt.NDArray[np.float64] = widths / widths.sum()
    return out


def power_share(frames: FloatArray, config: MelConfig = MEL) -> npt.NDArray[np.float64]:
    """Each band's share of the power of ``frames`` ``[n_mels, T]`` (log-mel), averaged over the
    loud frames (loudest band within :data:`QUIET_NATS` of the loudest frame's); uniform when
    there are no frames."""
    n = frames.shape[0]
    if frames.shape[-1] == 0:
        return np.full(n, 1.0 / n)
    x = frames.astype(np.float64)
    peak = x.max(axis=0)
    loud = x[:, peak >= peak.max() - QUIET_NATS]
    power = _band_widths(config)[:, None] * np.exp(2.0 * (loud - loud.max()))
    share = (power / power.sum(axis=0, keepdims=True)).mean(axis=1)
    out: npt.NDArray[np.float64] = share / share.sum()
    return out


def effort_offset(frames: FloatArray, level_db: float,
                  config: MelConfig = MEL) -> FloatArray:  # fmt: skip
    """The per-band log-mel offset (nats, ``[n_mels]``) that gives ``frames`` the spectral
    balance of ``level_db`` more effort without moving the power of its loud frames (the level
    is the gain's: :func:`effort_gain`). Zero for ``level_db == 0``."""
    if level_db == 0.0:
        return np.zeros(frames.shape[0], np.float32)
    slopes = band_slopes(config).astype(np.float64)
    if frames.shape[0] != slopes.shape[0]:
        raise ValueError(f"frames have {frames.shape[0]} bands, effort knows {slopes.shape[0]}")
    tilt = level_db * slopes * math.log(10.0) / 20.0  # nats: the standard's change per band
    # less the uniform part that would move the power: sum(share * exp(2 * offset)) == 1
    level = 0.5 * math.log(float(np.sum(power_share(frames, config) * np.exp(2.0 * tilt))))
    offset: FloatArray = (tilt - level).astype(np.float32)
    return offset


def apply_effort(frames: FloatArray, offset: FloatArray,
                 config: MelConfig = MEL) -> FloatArray:  # fmt: skip
    """``frames`` ``[n_mels, T]`` plus ``offset`` per band, never below digital silence's
    log-mel (the vocoder never saw lower)."""
    moved = frames + offset[:, None].astype(np.float32)
    out: FloatArray = np.maximum(moved, np.float32(silence_level(config)))
    return out


def apply_gain(audio: FloatArray, gain: float) -> FloatArray:
    """``audio × gain``; above 1, samples past :data:`LIMIT_KNEE` are bent toward full scale
    (``knee + (1 − knee)·tanh(excess / (1 − knee))``: continuous in value and slope, never past
    1), sample by sample, so every chunk is limited alike."""
    if gain == 1.0:
        return audio
    out: FloatArray = (np.asarray(audio, dtype=np.float32) * np.float32(gain)).astype(np.float32)
    if gain > 1.0:
        over = np.abs(out) > LIMIT_KNEE
        if over.any():
            room = 1.0 - LIMIT_KNEE
            excess = (np.abs(out[over]) - LIMIT_KNEE) / room
            out[over] = np.sign(out[over]) * (LIMIT_KNEE + room * np.tanh(excess))
    return out
