"""A voice per language: what a voice speaks, the precedence that fills in a language, and the
stock voice nearest in timbre."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from emostream.voices.base import VoiceInfo
from emostream.voices.per_language import (
    LanguageMismatch,
    TimbreIndex,
    languages_of,
    resolve,
    speaks,
)


def info(voice_id: str, language: str) -> VoiceInfo:
    return VoiceInfo(voice_id, "m", language, 22050, ())


EN, EN2, GB = info("af_heart", "en-US"), info("am_michael", "en-US"), info("bf_emma", "en-GB")
ZH, CLONE = info("zf_xiaoxiao", "zh-CN"), info("vc_me", "multi")
MATCHED = info("zh_near", "zh-CN")


def test_languages_of_a_voice() -> None:
    assert languages_of(EN) == languages_of(GB) == {"en"}
    assert languages_of(ZH) == {"zh"}
    assert languages_of(CLONE) == {"en", "zh"}  # a clone speaks every language here
    assert languages_of(info("x", "fr-FR")) == frozenset()
    assert speaks(GB, "en") and not speaks(GB, "zh")


def _resolve(asked: dict[str, VoiceInfo], voice: VoiceInfo = EN2, explicit: bool = False,
             match: VoiceInfo | None = None) -> dict[str, str]:  # fmt: skip
    got = resolve(asked, voice=voice, explicit=explicit, info=lambda v: v,
                  match=lambda _v, _lang: match)  # fmt: skip
    return {lang: v.id for lang, v in got.items()}


def test_given_voices_win() -> None:
    assert _resolve({"en": EN, "zh": ZH}, voice=CLONE, explicit=True) == {
        "en": "af_heart", "zh": "zf_xiaoxiao"}  # fmt: skip


def test_an_explicit_voice_fills_a_language_it_speaks() -> None:
    assert _resolve({"zh": ZH}, voice=EN2, explicit=True) == {"en": "am_michael",
                                                              "zh": "zf_xiaoxiao"}  # fmt: skip
    # the server's default (not named) does not: the nearest English timbre does
    assert _resolve({"zh": ZH}, voice=EN2, match=info("en_near", "en-US")) == {
        "en": "en_near", "zh": "zf_xiaoxiao"}  # fmt: skip


def test_a_clone_given_for_one_language_speaks_the_other() -> None:
    assert _resolve({"en": CLONE}, match=MATCHED) == {"en": "vc_me", "zh": "vc_me"}
    # ... but a named voice that speaks the language comes first
    assert _resolve({"zh": CLONE}, voice=EN2, explicit=True) == {"en": "am_michael",
                                                                 "zh": "vc_me"}  # fmt: skip


def test_else_the_nearest_timbre_else_the_voice() -> None:
    assert _resolve({"en": EN}, match=MATCHED) == {"en": "af_heart", "zh": "zh_near"}
    assert _resolve({"en": EN}, voice=EN2, match=None) == {"en": "af_heart", "zh": "am_michael"}


def test_a_voice_given_for_a_language_it_does_not_speak_is_refused() -> None:
    with pytest.raises(LanguageMismatch, match="'af_heart' does not speak 'zh'") as caught:
        _resolve({"en": EN, "zh": EN})
    assert (caught.value.voice_id, caught.value.language) == ("af_heart", "zh")


@dataclass
class _Speaker:
    info: VoiceInfo
    speaker: np.ndarray
    hop_length: int = 256
    context_frames: int = 14


def test_the_nearest_timbre_is_the_closest_embedding_of_that_language() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal(256).astype(np.float32)
    near = _Speaker(info("zh_near", "zh-CN"), (base + 0.1 * rng.standard_normal(256)).astype(
        np.float32) * 3)  # fmt: skip
    far = _Speaker(info("zh_far", "zh-CN"), rng.standard_normal(256).astype(np.float32))
    english = _Speaker(info("en_same", "en-US"), base.copy())
    clone = _Speaker(info("vc_x", "multi"), base.copy())  # clones are not stock voices
    index = TimbreIndex([far, near, english, clone])  # type: ignore[list-item]
    source = _Speaker(info("af_x", "en-US"), base)
    assert index.nearest(source, "zh") is near  # type: ignore[arg-type,comparison-overlap]
    assert index.nearest(source, "en") is english  # type: ignore[arg-type,comparison-overlap]
    assert index.nearest(source, "fr") is None  # type: ignore[arg-type]
    assert index.nearest(object(), "zh") is None  # type: ignore[arg-type]  # no embedding
