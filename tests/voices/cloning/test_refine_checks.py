"""Which clips a clone is refined against: one speaker and speech; the rest is skipped with a
reason (the intake has already refused what no clone can use)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
import soxr

from emostream.voices.cloning.clip import ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine_checks import (
    RefineChecks,
    halves_similarity,
    refine_verdict,
    split_halves,
)
from tests.voices.voice_fixtures import to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


def _16k(speech: Speech) -> npt.NDArray[np.float32]:
    audio, rate = speech
    return np.asarray(audio if rate == 16000 else soxr.resample(audio, rate, 16000), np.float32)


def test_halves_hold_half_the_speech_each(speech: Speech) -> None:
    clip = ClipIntake()(to_bytes(*speech))
    (a, ma), (b, mb) = split_halves(clip)
    assert len(a) + len(b) == len(clip.audio)
    assert abs(int(ma.sum()) - int(mb.sum())) <= 1
    assert len(a) == len(ma) * 160


def test_one_reader_passes(speech: Speech, encoder: SpeakerEncoder) -> None:
    clip = ClipIntake()(to_bytes(*speech))
    assert clip.speech_s >= RefineChecks().min_split_speech_s
    assert halves_similarity(clip, encoder.embed_audio) > RefineChecks().min_halves_cosine + 0.05
    assert refine_verdict(clip, encoder.embed_audio) is None


def test_two_speakers_are_caught(
    speech: Speech, other_speech: Speech, encoder: SpeakerEncoder
) -> None:
    """A real reader's first 4 s, then Piper's joe for 4 s: an interview, not a voice."""
    a, b = _16k(speech), _16k(other_speech)
    both = np.concatenate([a[: 4 * 16000], np.zeros(4800, np.float32), b[: 4 * 16000]])
    clip = ClipIntake()(to_bytes(both, 16000))
    verdict = refine_verdict(clip, encoder.embed_audio)
    assert verdict is not None and verdict.code == "multiple_speakers", verdict
    assert "one speaker" in verdict.message
    assert verdict.as_dict() == {"code": "multiple_speakers", "message": verdict.message}


def test_music_is_caught_before_anything_is_embedded(speech: Speech) -> None:
    clip = replace(ClipIntake()(to_bytes(*speech)), voiced_fraction=0.97)

    def never(*_: object) -> npt.NDArray[np.float32]:
        raise AssertionError("no embedding for a clip refused on its voicing")

    verdict = refine_verdict(clip, never)
    assert verdict is not None and verdict.code == "not_speech" and "music" in verdict.message


def test_a_short_clip_is_not_split(speech: Speech) -> None:
    audio, rate = speech
    clip = ClipIntake()(to_bytes(audio[: int(4.2 * rate)], rate))
    assert clip.speech_s < RefineChecks().min_split_speech_s

    def never(*_: object) -> npt.NDArray[np.float32]:
        raise AssertionError("halves of a short clip are not compared")

    assert refine_verdict(clip, never) is None
