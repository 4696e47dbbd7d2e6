"""The catalogue's data (emostream.voices.stock_voices) is true: every named voice of the model
is in it, gender and accent follow Kokoro's naming, the measured figures are the measurement's,
and each description says what they say."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from emostream.voices.acoustic import SPEAKERS, find_models_dir
from emostream.voices.stock_voices import (
    LANGUAGE_DEFAULTS,
    STOCK_VOICES,
    describe,
    is_corpus_speaker,
    language_of,
    pace_word,
    stock_voice,
)

ROOT = Path(__file__).resolve().parents[2]
TRAITS = ROOT / "bench" / "results" / "2026-12-07-cpu2-voice-traits.json"
# Kokoro's naming, written out here apart from the module's own table
KOKORO = {"a": ("en-US", "American"), "b": ("en-GB", "British"), "z": ("zh-CN", "Mandarin")}


def test_every_named_speaker_of_the_model_is_catalogued() -> None:
    models = find_models_dir()
    if models is None:
        pytest.skip("no EmoStream model under models/")
    with np.load(models / SPEAKERS) as table:
        named = {n for n in table.files if not is_corpus_speaker(n)}
    assert len(table.files) - len(named) == 600  # the corpus speakers, listed on request
    assert named == {v.id for v in STOCK_VOICES} - {"joe"}


@pytest.mark.parametrize("voice", STOCK_VOICES, ids=lambda v: v.id)
def test_entry_is_complete_and_follows_the_naming(voice: object) -> None:
    from emostream.voices.stock_voices import StockVoice

    assert isinstance(voice, StockVoice)
    assert voice.language and voice.gender in ("female", "male") and voice.description
    assert len(voice.description) <= 160 and voice.age == "adult"
    if voice.id == "joe":  # Piper en_US-joe-medium: a man's voice, US English
        assert (voice.language, voice.gender, voice.model) == ("en-US", "male", "piper-vits")
        return
    language, accent = KOKORO[voice.id[0]]
    gender = {"f": "female", "m": "male"}[voice.id[1]]
    assert (voice.language, voice.accent, voice.gender) == (language, accent, gender)
    assert voice.model == "emostream-fs2"


def test_figures_are_the_measurement_and_the_words_follow_them() -> None:
    measured = json.loads(TRAITS.read_text(encoding="utf-8"))["voices"]
    assert set(measured) == {v.id for v in STOCK_VOICES}
    for voice in STOCK_VOICES:
        m = measured[voice.id]
        assert (voice.f0_hz, voice.f0_spread_st, voice.pace) == (
            m["f0_hz"], m["f0_spread_st"], m["pace"]
        ), voice.id  # fmt: skip
        assert voice.centroid_hz == m["centroid_hz"], voice.id
        text = voice.description.lower()
        assert f"{voice.pitch} pitch" in text and f"{voice.tone} tone" in text
        assert pace_word(voice.pace) in text and voice.intonation in text
        assert voice.pitch + "-pitch" in voice.all_tags and voice.accent.lower() in voice.all_tags


def test_the_measured_words_tell_voices_apart() -> None:
    """Not every voice gets the same words: the bounds sit inside the measured spread."""
    for attr in ("pitch", "tone"):
        assert len({getattr(v, attr) for v in STOCK_VOICES}) == 3, attr
    assert stock_voice("am_onyx").pitch == "low"  # type: ignore[union-attr]  # 84 Hz
    assert stock_voice("zf_xiaoxiao").pitch == "high"  # type: ignore[union-attr]


def test_one_default_per_language_among_its_voices() -> None:
    assert LANGUAGE_DEFAULTS == {"en": "af_heart", "zh": "zf_xiaoxiao"}
    for language, voice_id in LANGUAGE_DEFAULTS.items():
        voice = stock_voice(voice_id)
        assert voice is not None and voice.language.startswith(language)
        assert "default" in voice.all_tags
    assert sum("default" in v.all_tags for v in STOCK_VOICES) == len(LANGUAGE_DEFAULTS)
    assert len({v.id for v in STOCK_VOICES}) == len(STOCK_VOICES)
    assert len({v.name for v in STOCK_VOICES}) == len(STOCK_VOICES)


def test_corpus_speakers_are_described_as_such() -> None:
    assert is_corpus_speaker("zh_cross042") and is_corpus_speaker("en_blend00")
    assert not is_corpus_speaker("af_heart") and not is_corpus_speaker("joe")
    assert "Corpus speaker" in describe("zh_cross042")
    assert describe("af_heart") == stock_voice("af_heart").description  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "language"),
    [("Hello there!", "en"), ("你好，欢迎来到直播间。", "zh"), ("今天玩 Minecraft 吗？", "zh"),
     ("Thanks! 谢谢 everyone for coming to the stream", "en"), ("12345 !!", "en"), ("", "en"),
     ("好", "zh"), ("这是{Nguyen|/wɪn/}", "zh"), ("{行|hang2}", "zh"),
     ("Say {行|hang2} please", "en")],  # overrides count as their words
)  # fmt: skip
def test_language_of(text: str, language: str) -> None:
    assert language_of(text) == language
