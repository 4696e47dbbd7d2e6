"""Reference-clip intake: bytes of an uploaded recording → clean 16 kHz mono speech, or a typed error.

Sans-I/O: :func:`prepare_clip` takes the uploaded bytes and returns a :class:`Clip`; nothing here
touches sockets or files. Steps, in order (each failure raises :class:`ClipError` with a stable
``code`` a client can switch on):

1. size checks (``empty``, ``oversized``) and a sniff of the container's magic bytes
   (``unsupported_format`` for images, documents, archives, text);
2. decode with libsndfile (WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF...) and, if that fails and PyAV is
   installed, with FFmpeg (WebM/Matroska and MP4/M4A as browsers record them) — ``undecodable``;
3. sanity of the signal: ``sample_rate_too_low`` (< 8 kHz), ``non_finite`` (NaN/inf samples),
   ``too_long`` (decoded audio longer than ``max_input_s``, checked before resampling), ``silent``,
   ``clipped`` (heavy clipping: many samples pinned at the peak);
4. downmix, resample to 16 kHz (soxr, high quality), trim leading/trailing silence with an energy
   detector, and measure the active speech: ``too_short`` / ``too_long`` (3–30 s by default),
   ``no_speech`` (too few voiced frames, or a level too steady for speech: noise, tones, hum),
   ``too_noisy`` (speech-to-noise-floor estimate too low);
5. loudness-normalise: the RMS over active frames is set to ``target_dbfs`` and the peak limited to
   ``peak_dbfs`` (plain RMS, not K-weighted LUFS: for 16 kHz speech the difference is a constant).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import logging
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import soundfile as sf
import soxr

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
FloatArray = npt.NDArray[np.float32]

# HTTP status a transport should answer with, per error code (default 400).
_STATUS = {"oversized": 413, "unsupported_format": 415}

AUDIO_FORMATS: frozenset[str] = frozenset({"wav", "flac", "ogg", "mp3", "aiff", "webm", "mp4"})


class ClipError(ValueError):
    """A reference clip that cannot be used. ``code`` is stable; ``message`` is for humans."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def http_status(self) -> int:
        return _STATUS.get(self.code, 400)

    def as_dict(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message}}


@dataclass(frozen=True)
class ClipLimits:
    """What the intake accepts. Every field has a documented default."""

    max_bytes: int = 10 * 1024 * 1024  # upload size limit
    min_speech_s: float = 3.0  # active speech after trimming
    max_speech_s: float = 30.0  # trimmed clip length
    max_input_s: float = 120.0  # decoded length before trimming (guards decompression bombs)
    min_sample_rate: int = 8000
    formats: frozenset[str] = AUDIO_FORMATS  # containers accepted (sniffed)
    silence_dbfs: float = -60.0  # a clip whose peak is below this is silent
    trim_below_peak_db: float = 40.0  # frames this far below the loudest frames are silence
    max_clipped_fraction: float = 0.005  # samples pinned at the peak, of all active samples
    min_snr_db: float = 12.0  # p90 - p10 frame level (≈ 22-25 dB for LibriVox; 12 ≈ 8 dB SNR)
    min_voiced_fraction: float = 0.2  # periodic (voiced) share of active frames
    min_level_spread_db: float = 6.0  # p90-p10 of active frame levels (speech is modulated)
    target_dbfs: float = -20.0  # RMS over active frames after normalisation
    peak_dbfs: float = -1.0  # peak ceiling after normalisation
    pad_s: float = 0.1  # silence kept at each end after trimming


@dataclass(frozen=True)
class Clip:
    """A usable reference clip: 16 kHz mono float32, ends trimmed, loudness-normalised."""

    audio: FloatArray
    sha256: str  # of the uploaded bytes
    source_format: str
    source_sample_rate: int
    source_channels: int
    speech_s: float  # active (non-silent) speech
    snr_db: float
    voiced_fraction: float
    sample_rate: int = SAMPLE_RATE
    active: npt.NDArray[np.bool_] = field(
        default_factory=lambda: np.zeros(0, dtype=bool), repr=False
    )  # per 10 ms frame of ``audio``

    @property
    def duration_s(self) -> float:
        return len(self.audio) / self.sample_rate

    def active_samples(self) -> npt.NDArray[np.bool_]:
        """Per-sample mask of active (speech) regions of :attr:`audio`."""
        out = np.zeros(len(self.audio), dtype=bool)
        rep = np.repeat(self.active, HOP)[: len(self.audio)]
        out[: len(rep)] = rep
        return out


# ---------------------------------------------------------------------------------------------
# container sniffing and decoding


def sniff_format(data: bytes) -> str | None:
    """Container name from magic bytes; ``"not_audio:<kind>"`` for known non-audio; else None."""
    head = data[:16]
    if head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if head[:4] == b"\x1aE\xdf\xa3":
        return "webm"
    if head[4:8] == b"ftyp":
        return "mp4"
    for magic, kind in (
        (b"\x89PNG", "png"),
        (b"\xff\xd8\xff", "jpeg"),
        (b"GIF8", "gif"),
        (b"%PDF", "pdf"),
        (b"PK\x03\x04", "zip"),
        (b"\x1f\x8b", "gzip"),
        (b"RIFF", "riff"),  # RIFF but not WAVE: AVI, WebP...
    ):
        if head.startswith(magic):
            return f"not_audio:{kind}"
    sample = data[:512]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text and all(c.isprintable() or c in "\r\n\t" for c in text):
        return "not_audio:text"
    return None


def _decode_soundfile(data: bytes, max_input_s: float) -> tuple[FloatArray, int]:
    with sf.SoundFile(io.BytesIO(data)) as f:
        rate = int(f.samplerate)
        if rate > 0 and f.frames > max_input_s * rate:
            raise ClipError(
                "too_long", f"clip is {f.frames / rate:.1f} s; at most {max_input_s:g} s accepted"
            )
        audio = f.read(dtype="float32", always_2d=True)
    return np.asarray(audio, dtype=np.float32), rate


def _decode_av(data: bytes, max_input_s: float) -> tuple[FloatArray, int]:
    import av  # optional: FFmpeg for WebM/MP4 (what browsers record)

    with av.open(io.BytesIO(data), mode="r") as container:
        streams = [s for s in container.streams if s.type == "audio"]
        if not streams:
            raise ClipError("unsupported_format", "the file has no audio stream")
        stream = streams[0]
        rate = int(getattr(stream, "rate", 0) or 0)
        channels = int(getattr(stream, "channels", 1) or 1)
        chunks: list[FloatArray] = []
        total = 0
        for frame in container.decode(stream):
            if not isinstance(frame, av.AudioFrame):
                continue
            arr = frame.to_ndarray().astype(np.float32)
            if frame.format.is_planar:
                arr = arr.T  # [samples, channels]
            else:
                arr = arr.reshape(-1, channels)
            chunks.append(arr)
            total += arr.shape[0]
            if rate and total > max_input_s * rate:
                raise ClipError(
                    "too_long", f"clip is longer than {max_input_s:g} s; shorter please"
                )
    if not chunks:
        raise ClipError("undecodable", "no audio could be decoded from the file")
    return np.concatenate(chunks, axis=0), rate


def decode_audio(
    data: bytes, *, max_input_s: float = 120.0, formats: frozenset[str] = AUDIO_FORMATS
) -> tuple[FloatArray, int, str]:
    """Decode ``data`` into ``([samples, channels] float32, sample_rate, format)``."""
    kind = sniff_format(data)
    if kind is not None and kind.startswith("not_audio:"):
        raise ClipError("unsupported_format", f"not an audio file ({kind.split(':', 1)[1]})")
    if kind is not None and kind not in formats:
        raise ClipError("unsupported_format", f"{kind} files are not accepted here")
    errors: list[str] = []
    if kind not in ("webm", "mp4"):
        try:
            audio, rate = _decode_soundfile(data, max_input_s)
            return audio, rate, kind or "unknown"
        except ClipError:
            raise
        except Exception as exc:  # noqa: BLE001 - libsndfile raises several types for bad input
            errors.append(f"libsndfile: {exc}")
    try:
        audio, rate = _decode_av(data, max_input_s)
        return audio, rate, kind or "unknown"
    except ClipError:
        raise
    except ImportError:
        if kind in ("webm", "mp4"):
            raise ClipError(
                "unsupported_format", f"{kind} needs PyAV (pip install av) on the server"
            ) from None
    except Exception as exc:  # noqa: BLE001 - FFmpeg/PyAV errors vary by container
        errors.append(f"ffmpeg: {exc}")
    log.debug("undecodable clip: %s", "; ".join(errors))
    raise ClipError("undecodable", "the file could not be decoded as audio")


# ---------------------------------------------------------------------------------------------
# signal analysis (16 kHz mono)

FRAME = 400  # 25 ms analysis window
HOP = 160  # 10 ms


def frame_db(audio: FloatArray, *, frame: int = FRAME, hop: int = HOP) -> FloatArray:
    """RMS level in dBFS of each ``hop``-spaced frame (a 10 ms grid at 16 kHz)."""
    n = max(1, 1 + (len(audio) - frame) // hop) if len(audio) >= frame else 1
    padded = np.zeros(max(len(audio), frame + (n - 1) * hop), dtype=np.float32)
    padded[: len(audio)] = audio
    idx = np.arange(frame)[None, :] + hop * np.arange(n)[:, None]
    power = np.mean(padded[idx].astype(np.float64) ** 2, axis=1)
    levels: FloatArray = (10.0 * np.log10(power + 1e-12)).astype(np.float32)
    return levels


def active_frames(
    levels: FloatArray, *, below_peak_db: float = 40.0, floor_db: float = -60.0
) -> npt.NDArray[np.bool_]:
    """Frames louder than ``max(loud - below_peak_db, noise_floor + 6, floor_db)``.

    "loud" is the 95th percentile frame level (robust to a single click), the noise floor the
    10th percentile. Gaps shorter than 200 ms between active frames are filled (pauses inside
    speech stay speech).
    """
    if levels.size == 0:
        return np.zeros(0, dtype=bool)
    loud = float(np.percentile(levels, 95))
    floor = float(np.percentile(levels, 10))
    threshold = max(loud - below_peak_db, min(floor + 6.0, loud - 6.0), floor_db)
    mask = levels > threshold
    gap = 20
    on = np.flatnonzero(mask)
    if on.size > 1:
        for a, b in itertools.pairwise(on):
            if 1 < b - a <= gap:
                mask[a:b] = True
    return mask


def voiced_fraction(audio: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    """Share of active 40 ms frames whose normalised autocorrelation has a pitch peak.

    Lags cover 60–400 Hz; a frame counts as voiced when the peak exceeds 0.5. Stationary noise
    scores near 0, speech 0.3–0.8.
    """
    frame, hop = 640, HOP
    lo, hi = SAMPLE_RATE // 400, SAMPLE_RATE // 60
    starts = np.flatnonzero(mask)[::2] * hop  # every other active 10 ms frame
    starts = starts[starts + frame + hi <= len(audio)]
    if starts.size == 0:
        return 0.0
    idx = starts[:, None] + np.arange(frame + hi)[None, :]
    seg = audio[idx].astype(np.float64)
    seg -= seg.mean(axis=1, keepdims=True)
    spec = np.fft.rfft(seg, n=2 * (frame + hi), axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, axis=1)[:, : hi + 1]
    ac0 = ac[:, :1]
    norm = ac[:, lo : hi + 1] / np.maximum(ac0, 1e-12)
    # unbiased-ish: correct the linear taper of the windowed autocorrelation
    lags = np.arange(lo, hi + 1)
    norm = norm * (frame + hi) / (frame + hi - lags)
    return float(np.mean(norm.max(axis=1) > 0.5))


def clipped_fraction(audio: FloatArray, *, relative: float = 0.9999) -> float:
    """Share of samples within ``relative`` of the peak that sit in runs of ≥ 3 (plateaus)."""
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak <= 0.0:
        return 0.0
    near = np.abs(audio) >= relative * peak
    # runs of ≥3: a sample and both neighbours near the peak
    run = near[1:-1] & near[:-2] & near[2:]
    return float(np.count_nonzero(run)) / max(1, audio.size)


# ---------------------------------------------------------------------------------------------
# the intake


def _db(x: float) -> float:
    return float(20.0 * np.log10(max(x, 1e-12)))


def prepare_clip(data: bytes, limits: ClipLimits | None = None) -> Clip:
    """Validate and clean an uploaded reference clip. Raises :class:`ClipError`."""
    lim = limits or ClipLimits()
    if len(data) == 0:
        raise ClipError("empty", "the uploaded file is empty")
    if len(data) > lim.max_bytes:
        raise ClipError(
            "oversized",
            f"the file is {len(data) / 1e6:.1f} MB; at most {lim.max_bytes / 1e6:.1f} MB accepted",
        )
    raw, rate, fmt = decode_audio(data, max_input_s=lim.max_input_s, formats=lim.formats)
    if raw.size == 0:
        raise ClipError("undecodable", "the file holds no audio samples")
    if rate < lim.min_sample_rate:
        raise ClipError(
            "sample_rate_too_low",
            f"sample rate {rate} Hz; at least {lim.min_sample_rate} Hz needed",
        )
    if not np.all(np.isfinite(raw)):
        raise ClipError("non_finite", "the audio holds NaN or infinite samples")
    channels = int(raw.shape[1])
    mono = raw.mean(axis=1, dtype=np.float64).astype(np.float32)
    peak = float(np.max(np.abs(mono)))
    if _db(peak) < lim.silence_dbfs:
        raise ClipError("silent", "the clip is silent")
    if clipped_fraction(mono) > lim.max_clipped_fraction:
        raise ClipError(
            "clipped", "the recording is heavily clipped (distorted); record at a lower level"
        )
    audio = mono if rate == SAMPLE_RATE else soxr.resample(mono, rate, SAMPLE_RATE, "HQ")
    audio = np.asarray(audio, dtype=np.float32)

    levels = frame_db(audio)
    mask = active_frames(levels, below_peak_db=lim.trim_below_peak_db, floor_db=lim.silence_dbfs)
    on = np.flatnonzero(mask)
    if on.size == 0:
        raise ClipError("silent", "no sound above the silence threshold")
    pad = round(lim.pad_s * SAMPLE_RATE / HOP)
    first, last = max(0, on[0] - pad), min(len(mask), on[-1] + 1 + pad)
    audio = audio[first * HOP : min(len(audio), last * HOP + FRAME - HOP)]
    mask = mask[first:last]
    speech_s = float(np.count_nonzero(mask)) * HOP / SAMPLE_RATE
    duration = len(audio) / SAMPLE_RATE
    if duration > lim.max_speech_s:
        raise ClipError(
            "too_long",
            f"{duration:.1f} s of audio after trimming; at most {lim.max_speech_s:g} s accepted",
        )
    if speech_s < lim.min_speech_s:
        raise ClipError(
            "too_short",
            f"{speech_s:.1f} s of speech after trimming; at least {lim.min_speech_s:g} s needed",
        )
    voiced = voiced_fraction(audio, mask)
    lv = levels[first:last]
    spread = float(np.percentile(lv[mask], 90) - np.percentile(lv[mask], 10))
    if voiced < lim.min_voiced_fraction or spread < lim.min_level_spread_db:
        raise ClipError("no_speech", "no speech found in the clip (noise, tones or hum only)")
    # loud frames over the noise floor, on the untrimmed signal (silent pads show the floor)
    snr = float(np.percentile(levels, 90) - np.percentile(levels, 10))
    if snr < lim.min_snr_db:
        raise ClipError(
            "too_noisy",
            f"speech is only {snr:.0f} dB above the background; record somewhere quieter",
        )

    active = np.zeros(len(audio), dtype=bool)
    rep = np.repeat(mask, HOP)[: len(audio)]
    active[: len(rep)] = rep
    rms = float(np.sqrt(np.mean(audio[active].astype(np.float64) ** 2)))
    gain = 10.0 ** ((lim.target_dbfs - _db(rms)) / 20.0)
    new_peak = float(np.max(np.abs(audio))) * gain
    ceiling = 10.0 ** (lim.peak_dbfs / 20.0)
    if new_peak > ceiling:
        gain *= ceiling / new_peak
    audio = (audio * gain).astype(np.float32)
    return Clip(
        audio=audio,
        sha256=hashlib.sha256(data).hexdigest(),
        source_format=fmt,
        source_sample_rate=rate,
        source_channels=channels,
        speech_s=speech_s,
        snr_db=snr,
        voiced_fraction=voiced,
        active=mask,
    )


@dataclass(frozen=True)
class ClipIntake:
    """A configured :func:`prepare_clip` (what the HTTP layer holds)."""

    limits: ClipLimits = field(default_factory=ClipLimits)

    def __call__(self, data: bytes) -> Clip:
        return prepare_clip(data, self.limits)
