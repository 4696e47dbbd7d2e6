from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf
import soxr

from emostream.voices.cloning.clip import (
    SAMPLE_RATE,
    ClipError,
    ClipIntake,
    ClipLimits,
    frame_db,
    prepare_clip,
    sniff_format,
)
from tests.voices.voice_fixtures import to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


def _rms_db(x: npt.NDArray[np.float32]) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(x.astype(np.float64) ** 2))))


def _at(audio: npt.NDArray[np.float32], rate: int, new_rate: int) -> npt.NDArray[np.float32]:
    return np.asarray(soxr.resample(audio, rate, new_rate), dtype=np.float32)


def _with_noise(audio: npt.NDArray[np.float32], snr_db: float) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(1)
    sig = audio / np.sqrt(np.mean(audio**2)) * 0.05
    noise = rng.normal(0.0, 0.05 / 10 ** (snr_db / 20), len(sig))
    return np.clip(sig + noise, -1, 1).astype(np.float32)


def _nan_wav(audio: npt.NDArray[np.float32], rate: int) -> bytes:
    bad = audio.copy()
    bad[1000:1010] = np.nan
    return to_bytes(bad, rate, subtype="FLOAT")


def _truncated_wav(audio: npt.NDArray[np.float32], rate: int) -> bytes:
    data = to_bytes(audio, rate)
    return data[:20] + bytes(range(256)) * 4  # header cut, garbage after


# kind -> (maker(speech audio, rate) -> bytes, expected code, expected HTTP status)
CATALOGUE: dict[str, tuple[Callable[[npt.NDArray[np.float32], int], bytes], str, int]] = {
    "empty": (lambda a, r: b"", "empty", 400),
    "oversized": (lambda a, r: b"RIFF" + bytes(11 * 1024 * 1024), "oversized", 413),
    "png image": (lambda a, r: b"\x89PNG\r\n\x1a\n" + bytes(2000), "unsupported_format", 415),
    "text file": (lambda a, r: b"hello, this is not audio\n" * 40, "unsupported_format", 415),
    "random bytes": (
        lambda a, r: np.random.default_rng(0).integers(0, 256, 50_000, dtype=np.uint8).tobytes(),
        "undecodable",
        400,
    ),
    "truncated wav": (_truncated_wav, "undecodable", 400),
    "6 kHz rate": (lambda a, r: to_bytes(_at(a, r, 6000), 6000), "sample_rate_too_low", 400),
    "NaN samples": (_nan_wav, "non_finite", 400),
    "digital silence": (lambda a, r: to_bytes(np.zeros(5 * r, np.float32), r), "silent", 400),
    "heavily clipped": (
        lambda a, r: to_bytes(np.clip(a * 30, -1, 1), r),
        "clipped",
        400,
    ),
    "1.5 s of speech": (lambda a, r: to_bytes(a[int(2.0 * r) : int(3.5 * r)], r), "too_short", 400),
    "40 s of speech": (lambda a, r: to_bytes(np.tile(a, 6), r), "too_long", 400),
    "150 s decoded": (lambda a, r: to_bytes(np.tile(a, 22), r), "too_long", 400),
    "white noise": (
        lambda a, r: to_bytes(np.random.default_rng(2).normal(0, 0.1, 6 * r).astype("f4"), r),
        "no_speech",
        400,
    ),
    "steady tone": (
        lambda a, r: to_bytes(0.3 * np.sin(2 * np.pi * 180 * np.arange(6 * r) / r), r),
        "no_speech",
        400,
    ),
    "speech under noise (5 dB)": (
        lambda a, r: to_bytes(_with_noise(a, 5.0), r),
        "too_noisy",
        400,
    ),
}


@pytest.mark.parametrize("kind", sorted(CATALOGUE))
def test_bad_clip_catalogue(kind: str, speech: Speech) -> None:
    make, code, status = CATALOGUE[kind]
    data = make(*speech)
    with pytest.raises(ClipError) as info:
        prepare_clip(data)
    assert info.value.code == code, f"{kind}: {info.value.code} {info.value.message}"
    assert info.value.http_status == status
    assert info.value.as_dict() == {"error": {"code": code, "message": info.value.message}}


def test_catalogue_is_broad() -> None:
    assert len({code for _, code, _ in CATALOGUE.values()}) >= 10


@pytest.mark.parametrize(
    "fmt,subtype,rate",
    [
        ("WAV", "PCM_16", None),
        ("WAV", "FLOAT", 44100),
        ("FLAC", None, 22050),
        ("OGG", "VORBIS", 44100),
        ("OGG", "OPUS", 48000),
        ("MP3", None, 44100),
        ("WAV", "PCM_16", 8000),
    ],
)
def test_good_clip_formats(fmt: str, subtype: str | None, rate: int | None, speech: Speech) -> None:
    audio, sr = speech
    if rate is not None and rate != sr:
        audio, sr = _at(audio, sr, rate), rate
    clip = prepare_clip(to_bytes(audio, sr, fmt, subtype))
    assert clip.sample_rate == SAMPLE_RATE
    assert clip.source_sample_rate == sr
    assert clip.source_format == {"WAV": "wav", "FLAC": "flac", "OGG": "ogg", "MP3": "mp3"}[fmt]
    assert 3.0 <= clip.speech_s <= clip.duration_s <= len(speech[0]) / speech[1] + 0.3
    assert clip.audio.dtype == np.float32
    speech_part = clip.audio[clip.active_samples()]
    assert abs(_rms_db(speech_part) - ClipLimits().target_dbfs) < 1.5 or np.max(
        np.abs(clip.audio)
    ) == pytest.approx(10 ** (-1 / 20), rel=1e-3)


def test_stereo_quiet_padded_clip_is_trimmed_and_normalised(speech: Speech) -> None:
    audio, sr = speech
    quiet = audio * 0.02  # about -50 dBFS speech
    padded = np.concatenate([np.zeros(3 * sr, np.float32), quiet, np.zeros(2 * sr, np.float32)])
    stereo = np.stack([padded, padded * 0.5], axis=1)
    clip = prepare_clip(to_bytes(stereo, sr))
    assert clip.source_channels == 2
    # 5 s of silence gone, speech kept (at most the pads remain)
    assert clip.duration_s < len(audio) / sr + 0.3
    assert clip.duration_s > 0.8 * len(audio) / sr
    speech_part = clip.audio[clip.active_samples()]
    assert abs(_rms_db(speech_part) - (-20.0)) < 1.5
    assert clip.sha256 == __import__("hashlib").sha256(to_bytes(stereo, sr)).hexdigest()


def test_moderate_noise_is_accepted(speech: Speech) -> None:
    clip = prepare_clip(to_bytes(_with_noise(speech[0], 30.0), speech[1]))
    assert clip.snr_db >= ClipLimits().min_snr_db


def test_limits_are_configurable(speech: Speech) -> None:
    data = to_bytes(*speech)
    with pytest.raises(ClipError) as info:
        ClipIntake(ClipLimits(max_bytes=1000))(data)
    assert info.value.code == "oversized"
    with pytest.raises(ClipError) as info:
        ClipIntake(ClipLimits(min_speech_s=20.0))(data)
    assert info.value.code == "too_short"
    with pytest.raises(ClipError) as info:
        ClipIntake(ClipLimits(formats=frozenset({"flac"})))(data)
    assert info.value.code == "unsupported_format"


def test_webm_opus_through_pyav(speech: Speech) -> None:
    av = pytest.importorskip("av")
    audio, sr = speech
    audio48 = _at(audio, sr, 48000)
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="webm") as out:
        stream = out.add_stream("libopus", rate=48000, layout="mono")
        frame = av.AudioFrame.from_ndarray(
            (audio48 * 32767).astype(np.int16)[None, :], format="s16", layout="mono"
        )
        frame.sample_rate = 48000
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    data = buf.getvalue()
    assert sniff_format(data) == "webm"
    clip = prepare_clip(data)
    assert clip.source_format == "webm"
    assert clip.speech_s > 3.0


def test_frame_db_levels() -> None:
    x = np.concatenate([np.zeros(1600), 0.1 * np.ones(1600)]).astype(np.float32)
    levels = frame_db(x)
    assert levels[0] < -100 and abs(levels[-1] - (-20.0)) < 0.01


def test_sniff() -> None:
    assert sniff_format(b"RIFF\0\0\0\0WAVEfmt ") == "wav"
    assert sniff_format(b"fLaC\0\0") == "flac"
    assert sniff_format(b"OggS\0\0") == "ogg"
    assert sniff_format(b"ID3\x04\0") == "mp3"
    assert sniff_format(b"%PDF-1.7") == "not_audio:pdf"
    assert sniff_format(b"\x00\x01\x02\x03\xf0") is None
    _ = sf  # soundfile is the decoder under test
