"""load_catalog: which stock voices a server loads, and a clear error for a missing default."""

from __future__ import annotations

from pathlib import Path

import pytest

from emostream.config import Settings
from emostream.voices.catalog import LITE_VOCODER, load_catalog


def test_default_voice_must_be_loaded() -> None:
    settings = Settings(embedded_voice=False, acoustic="off", default_voice="joe")
    with pytest.raises(RuntimeError, match="default voice 'joe' is not loaded"):
        load_catalog(settings)
    with pytest.raises(RuntimeError, match="default voice 'auto' is not loaded"):
        load_catalog(Settings(embedded_voice=False, acoustic="off"))


def test_auto_default_voice_is_the_measured_one() -> None:
    """auto: af_heart when the EmoStream voices are loaded (docs/voices.md "Default voice"), joe
    when they are off; a named default stays what it names."""
    assert Settings().default_voice == "auto"
    catalog = load_catalog(Settings())
    assert catalog.default_for("auto") == "af_heart" and catalog.default_for("joe") == "joe"
    assert load_catalog(Settings(acoustic="off")).default_for("auto") == "joe"
    with pytest.raises(RuntimeError, match="'zf_nobody' is not loaded"):
        catalog.default_for("zf_nobody")


def test_embedded_voice_off_serves_acoustic_speakers_only() -> None:
    pytest.importorskip("torch")
    env = {"EMOSTREAM_EMBEDDED_VOICE": "0", "EMOSTREAM_DEFAULT_VOICE": "af_heart"}
    settings = Settings.from_env(env, acoustic="on")
    assert settings.embedded_voice is False
    catalog = load_catalog(settings)
    assert "joe" not in catalog and "af_heart" in catalog
    assert catalog.family is not None


def test_unknown_vocoder_checkpoint_fails_loudly() -> None:
    pytest.importorskip("torch")
    settings = Settings(
        acoustic="on", vocoder="v1", vocoder_checkpoint="/nonexistent/generator.pth"
    )
    with pytest.raises(FileNotFoundError):
        load_catalog(settings)


def test_unknown_vocoder_is_refused() -> None:
    with pytest.raises(RuntimeError, match="unknown vocoder 'hifigan3'"):
        load_catalog(Settings(acoustic="on", vocoder="hifigan3"))


LITE_SHIPPED = (Path(__file__).resolve().parents[2] / "models" / LITE_VOCODER).is_file()


@pytest.mark.skipif(not LITE_SHIPPED, reason="the light vocoder is not under models/ yet")
def test_cpu_default_is_onnx_with_the_light_vocoder() -> None:
    from emostream.networks.acoustic_onnx import OnnxAcousticModel
    from emostream.voices.catalog import LITE_CONTEXT

    catalog = load_catalog(Settings(acoustic="on"))
    assert catalog.family is not None and isinstance(catalog.family.model, OnnxAcousticModel)
    voice = catalog.get("zf_xiaoxiao")
    assert voice is not None and voice.context_frames == LITE_CONTEXT
