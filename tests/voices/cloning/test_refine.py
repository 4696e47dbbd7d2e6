"""TimbreRefiner on the shipped model: it finds a known colouring of a voice, and refuses a clip
with too little speech."""

from __future__ import annotations

import numpy as np
import pytest

from emostream.config import Settings
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.base import Controls
from emostream.voices.catalog import load_acoustic_family
from emostream.voices.cloning.refine import (
    N_MELS,
    PROBES,
    RefineError,
    TimbreRefiner,
    identity_timbre,
)

pytestmark = pytest.mark.slow

CLIP_LINES = (
    "Good evening everyone, and welcome back to the channel.",
    "Today we are going to build a small wooden birdhouse together.",
    "You will need some glue, a saw, and a little bit of patience.",
)


@pytest.fixture(scope="module")
def family() -> AcousticFamily:
    loaded = load_acoustic_family(Settings(acoustic="on"))
    assert loaded is not None
    return loaded


def _render(family: AcousticFamily, timbre: np.ndarray, text: str) -> np.ndarray:
    voice = family.voice("af_heart", family.speakers["af_heart"], language="en-US",
                         description="", timbre=timbre)  # fmt: skip
    return np.asarray(voice.decode(voice.acoustic(text, Controls()).frames), np.float32)


def test_it_finds_a_known_colouring(family: AcousticFamily) -> None:
    """A clip of the voice itself, tilted (darker lows, brighter highs: ±1 nat), spoken with
    other sentences than the probes: the fitted offsets follow the tilt and the gap closes."""
    tilt = identity_timbre()
    tilt[1] = np.linspace(-1.0, 1.0, N_MELS, dtype=np.float32)
    clip = np.concatenate([_render(family, tilt, t) for t in CLIP_LINES])
    refiner = TimbreRefiner()
    result = refiner.refine(lambda text, timbre: _render(family, timbre, text), clip, 22050,
                            source_rate=22050)  # fmt: skip
    assert result.timbre.shape == (2, N_MELS)
    assert np.all(result.timbre[0] == 1.0)  # the spread is not fitted by default
    assert np.corrcoef(result.timbre[1], tilt[1])[0, 1] > 0.9
    assert result.spectral_gap_db_after < result.spectral_gap_db_before / 2


def test_a_clip_with_too_little_speech_is_refused(family: AcousticFamily) -> None:
    short = _render(family, identity_timbre(), "Hi.")
    with pytest.raises(RefineError) as err:
        TimbreRefiner().refine(lambda text, timbre: _render(family, timbre, text), short, 22050,
                               source_rate=22050)  # fmt: skip
    assert err.value.code == "too_little_speech"


def test_the_probes_are_in_no_training_or_held_out_text() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "models/corpus/text"
    lines = set()
    for lang in ("en", "zh"):
        path = root / f"{lang}.txt"
        if path.exists():
            lines |= {x.strip() for x in path.read_text(encoding="utf-8").splitlines()}
    assert lines, "the corpus text lists are part of the repo"
    from train.sentences import heldout

    lines |= set(heldout("en")) | set(heldout("zh"))
    assert not lines & set(PROBES)
