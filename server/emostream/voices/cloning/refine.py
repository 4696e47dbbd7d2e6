"""Refinement of a clone against its own clip: the voice's timbre fitted to the recording.

A clone is first the model conditioned on the GE2E vector of its clip (zero-shot). GE2E keeps
who is speaking only coarsely, and the model reads it through a space learned from 630 teacher
voices, so a clone's spectrum stays close to the teacher's average. The clip itself holds what
is missing: its long-term spectrum and how much each band moves. :class:`TimbreRefiner` finds a
per-voice affine correction of the model's log-mel, one scale and one offset per band (a
``[2, 80]`` array, applied to every frame before the vocoder: ``mel * scale + offset``), by
analysis through synthesis: render fixed probe sentences with the clone, measure the mean and
spread of the log-mel of their speech frames, compare them with the clip's, move the correction
by the difference, repeat. The level is left alone (the mean shift has zero mean over the
bands), each band's shift is bounded (``max_offset``) and its scale too (``scale_range``; by
default the scale stays 1: fitting the spread cost naturalness for almost no likeness). A
clip's band limit (a telephone clip has nothing above ~3.6 kHz) is matched like any other
colour of the recording, within those bounds; with ``match_bandwidth=False`` the bands above
the clip's source bandwidth are left as the model makes them.

Everything runs on what the server ships (the acoustic model, the vocoder, the mel features,
the project's GE2E): no torch, no gradient, no extra download. The renderer is passed in, so the
same code serves ONNX Runtime on CPU and torch on a GPU.

The measured effect, method and chosen settings are in ``docs/cloning.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import soxr

from emostream.networks.mel import MelConfig, mel_filterbank, mel_spectrogram

FloatArray = npt.NDArray[np.float32]
MEL = MelConfig()
N_MELS = MEL.n_mels

# Probe sentences: varied English and Mandarin phones, about 14 s of speech with a stock voice.
# Not in any training or held-out text list (tests/voices/cloning/test_refine.py checks).
PROBES: tuple[str, ...] = (
    "The quick brown fox jumps over a lazy dog beside the river.",
    "She sells fresh fish, warm bread and sweet cherries at the market.",
    "Would you mind checking whether the garage door is shut tonight?",
    "我们明天早上八点在学校门口见面。",
    "Thank you for waiting, your order will arrive in about an hour.",
    "这个周末天气很好，我想去公园散散步。",
)

Render = Callable[[str, FloatArray], FloatArray]  # (text, timbre [2, 80]) -> audio at 22.05 kHz
Embed = Callable[[FloatArray], FloatArray]  # 16 kHz audio -> unit GE2E vector


class RefineError(Exception):
    """The clip cannot be refined against (too little speech in it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Refinement:
    """A fitted correction and what it changed.

    ``timbre``: ``[2, 80]``, per band the scale and the offset of the log-mel (natural log
    units; :func:`apply_timbre`). ``spectral_gap_db_*``:
    RMS over the corrected bands of the difference between the clip's and the clone's mean
    spectrum, before and after. ``ge2e_*``: cosine of the clone's speech to the clip under the
    project's GE2E (None when no encoder was given)."""

    timbre: FloatArray
    spectral_gap_db_before: float
    spectral_gap_db_after: float
    ge2e_before: float | None
    ge2e_after: float | None
    bandwidth_hz: float
    iterations: int
    seconds: float

    def summary(self) -> dict[str, float | int | None]:
        """JSON-ready figures (no arrays)."""

        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {
            "spectral_gap_db_before": r(self.spectral_gap_db_before),
            "spectral_gap_db_after": r(self.spectral_gap_db_after),
            "ge2e_similarity_before": r(self.ge2e_before),
            "ge2e_similarity_after": r(self.ge2e_after),
            "bandwidth_hz": round(self.bandwidth_hz),
            "iterations": self.iterations,
            "seconds": round(self.seconds, 2),
        }


def speech_frames(mel: FloatArray, *, window: float = 4.0) -> FloatArray:
    """The frames of ``mel [80, T]`` whose mean log-mel is within ``window`` (nats) of the
    loud end (the 95th percentile): speech, not pauses or breaths."""
    if mel.shape[1] == 0:
        return mel
    level = mel.mean(axis=0)
    keep = level > np.percentile(level, 95) - window
    return mel[:, keep]


def identity_timbre() -> FloatArray:
    """The correction that changes nothing (scale 1, offset 0)."""
    return np.stack([np.ones(N_MELS, np.float32), np.zeros(N_MELS, np.float32)])


def apply_timbre(mel: FloatArray, timbre: FloatArray) -> FloatArray:
    """``mel [80, T]`` corrected by ``timbre [2, 80]`` (scale, offset per band)."""
    out = mel * timbre[0][:, None] + timbre[1][:, None]
    return np.ascontiguousarray(out, dtype=np.float32)


def spectrum_stats(audio: FloatArray, sample_rate: int) -> tuple[FloatArray, FloatArray, int]:
    """Mean and standard deviation per band of the log-mel (HiFi-GAN features) of the speech
    frames of ``audio``, and how many frames that was."""
    a22 = audio if sample_rate == MEL.sample_rate else soxr.resample(audio, sample_rate,
                                                                       MEL.sample_rate)  # fmt: skip
    frames = speech_frames(mel_spectrogram(np.asarray(a22, dtype=np.float32)))
    if frames.shape[1] == 0:
        zero = np.zeros(N_MELS, np.float32)
        return zero, zero, 0
    return (frames.mean(axis=1).astype(np.float32), frames.std(axis=1).astype(np.float32),
            int(frames.shape[1]))  # fmt: skip


def band_mask(bandwidth_hz: float) -> npt.NDArray[np.bool_]:
    """Bands whose filters lie wholly below ``bandwidth_hz`` (95 % of it: resamplers roll
    off before Nyquist)."""
    fb = mel_filterbank(MEL)
    freqs = np.arange(fb.shape[1]) * MEL.sample_rate / MEL.n_fft
    top = np.array([freqs[np.nonzero(row)[0][-1]] if row.any() else 0.0 for row in fb])
    return np.asarray(top <= 0.95 * bandwidth_hz)


def _gap_db(a: FloatArray, b: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    d = (a - b)[mask]
    d = d - d.mean()
    return float(np.sqrt(np.mean(d**2)) * 20.0 / np.log(10.0))


class TimbreRefiner:
    """Fits a clone's timbre correction to its clip (see the module docstring).

    ``probes``: sentences rendered at each step; ``iterations``: analysis-through-synthesis
    steps (each renders every probe once); ``max_offset``: bound of each band's mean shift
    (nats; 2.0 is 17 dB); ``scale_range``: bounds of each band's scale (its spread; the
    default (1, 1) fits the mean alone: a (0.7, 1.4) range gained +0.005 d-vector similarity on
    the test speakers and lost 0.15-0.29 DNSMOS P.808, docs/cloning.md);
    ``match_bandwidth``: also match the clip above its source bandwidth (its band limit);
    ``min_speech_frames``: the least speech a clip must hold (frames of 11.6 ms); ``embed``:
    the project's GE2E for the before/after figure (optional)."""

    def __init__(
        self,
        *,
        probes: Sequence[str] = PROBES,
        iterations: int = 2,
        max_offset: float = 2.0,
        scale_range: tuple[float, float] = (1.0, 1.0),
        match_bandwidth: bool = True,
        min_speech_frames: int = 150,
        embed: Embed | None = None,
    ) -> None:
        if iterations < 1:
            raise ValueError("iterations must be at least 1")
        self.probes = tuple(probes)
        self.iterations = iterations
        self.max_offset = max_offset
        self.scale_range = scale_range
        self.match_bandwidth = match_bandwidth
        self.min_speech_frames = min_speech_frames
        self.embed = embed

    def refine(
        self, render: Render, clip_audio: FloatArray, clip_rate: int, *, source_rate: int
    ) -> Refinement:
        """The correction for the clone ``render`` speaks with, fitted to ``clip_audio``
        (recorded at ``source_rate``, now at ``clip_rate``). Raises :class:`RefineError`."""
        t0 = time.perf_counter()
        mean_c, std_c, n = spectrum_stats(clip_audio, clip_rate)
        if n < self.min_speech_frames:
            raise RefineError(
                "too_little_speech",
                f"the clip holds {n * MEL.hop_length / MEL.sample_rate:.1f} s of clear speech; "
                f"refinement needs {self.min_speech_frames * MEL.hop_length / MEL.sample_rate:.1f} s",
            )
        # Matching every band also follows the stored clip's roll-off near its Nyquist (the
        # top two bands of a 16 kHz clip). Leaving them out was measured and lost likeness:
        # d-vector 0.777 -> 0.721 (ps_librivox), 0.855 -> 0.832, 0.758 -> 0.753 (docs/cloning.md).
        bandwidth = min(source_rate, clip_rate) / 2.0
        mask = band_mask(bandwidth) if not self.match_bandwidth else np.ones(N_MELS, bool)
        timbre = identity_timbre()
        audio = [render(t, timbre) for t in self.probes]
        mean_s, std_s = self._stats(audio)
        pivot = mean_s  # the clone's own mean: the scale turns around it
        gap_before = _gap_db(mean_c, mean_s, mask)
        ge2e_before = self._similarity(audio, clip_audio, clip_rate)
        scale = np.ones(N_MELS, np.float32)
        shift = np.zeros(N_MELS, np.float32)
        lo, hi = self.scale_range
        for _ in range(self.iterations):
            diff = np.where(mask, mean_c - mean_s, 0.0)
            diff[mask] -= diff[mask].mean()
            shift = np.clip(shift + diff, -self.max_offset, self.max_offset)
            shift[mask] -= shift[mask].mean()
            ratio = np.where(mask, std_c / np.maximum(std_s, 1e-3), 1.0)
            scale = np.clip(scale * ratio, lo, hi).astype(np.float32)
            timbre = np.stack([scale, pivot * (1.0 - scale) + shift]).astype(np.float32)
            audio = [render(t, timbre) for t in self.probes]
            mean_s, std_s = self._stats(audio)
        return Refinement(
            timbre=timbre,
            spectral_gap_db_before=gap_before,
            spectral_gap_db_after=_gap_db(mean_c, mean_s, mask),
            ge2e_before=ge2e_before,
            ge2e_after=self._similarity(audio, clip_audio, clip_rate),
            bandwidth_hz=bandwidth,
            iterations=self.iterations,
            seconds=time.perf_counter() - t0,
        )

    @staticmethod
    def _stats(audio: Sequence[FloatArray]) -> tuple[FloatArray, FloatArray]:
        joined = np.concatenate([np.asarray(a, np.float32) for a in audio])
        mean, std, _ = spectrum_stats(joined, MEL.sample_rate)
        return mean, std

    def _similarity(
        self, audio: Sequence[FloatArray], clip_audio: FloatArray, clip_rate: int
    ) -> float | None:
        if self.embed is None:
            return None
        a16 = soxr.resample(np.concatenate(audio), MEL.sample_rate, 16000)
        c16 = clip_audio if clip_rate == 16000 else soxr.resample(clip_audio, clip_rate, 16000)
        a, b = self.embed(np.asarray(a16, np.float32)), self.embed(np.asarray(c16, np.float32))
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))
