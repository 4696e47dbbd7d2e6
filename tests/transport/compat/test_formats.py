"""Format names of the compatible APIs (emostream.transport.compat.formats), sans I/O."""

from __future__ import annotations

import pytest

from emostream.transport.compat.formats import (
    CompatFormat,
    FormatRefused,
    cartesia_format,
    elevenlabs_format,
)


@pytest.mark.parametrize(
    ("name", "fmt", "source"),
    [(None, CompatFormat("mp3", "pcm_s16le", 44100, 128), 48000),
     ("pcm_22050", CompatFormat("raw", "pcm_s16le", 22050), 24000),
     ("ulaw_8000", CompatFormat("raw", "pcm_mulaw", 8000), 16000),
     ("mp3_22050_32", CompatFormat("mp3", "pcm_s16le", 22050, 32), 24000)],
)  # fmt: skip
def test_elevenlabs_names(name: str | None, fmt: CompatFormat, source: int) -> None:
    assert elevenlabs_format(name) == fmt and fmt.source_rate == source


@pytest.mark.parametrize("name", ["opus_48000_64", "pcm_12345", "ulaw_16000", "mp3_22050_192"])
def test_elevenlabs_refusals_say_why(name: str) -> None:
    with pytest.raises(FormatRefused, match=name.split("_")[0]):
        elevenlabs_format(name)


def test_cartesia_objects() -> None:
    raw = {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 44100}
    assert cartesia_format(raw, containers=("raw",)) == CompatFormat("raw", "pcm_f32le", 44100)
    with pytest.raises(FormatRefused, match="container"):
        cartesia_format({**raw, "container": "wav"}, containers=("raw",))
