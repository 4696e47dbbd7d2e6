"""The evaluation instruments, and the embedded voice judged by them."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from emostream.stream.oneshot import synthesize
from emostream.voices.base import Controls
from emostream.voices.piper_voice import PiperVoice
from lab.quality import Transcriber, prosody, wer, words


def test_wer() -> None:
    assert wer("the cat sat", "the cat sat") == 0.0
    assert wer("the cat sat", "the bat sat") == pytest.approx(1 / 3)
    assert wer("the cat sat", "cat sat down now") == pytest.approx(3 / 3)
    assert wer("Half past 7.", "half past seven") == 0.0
    # Whisper's English normaliser: contractions expanded, case and punctuation dropped,
    # written and spelt-out numbers and currency to one form.
    assert words("Don't-stop, NOW!") == ["do", "not", "stop", "now"]
    assert wer("I owe her eleven dollars and forty cents.", "I owe her $11.40") == 0.0
    assert wer("Gift twenty subs", "gift 20 subs") == 0.0
    assert wer("Gift twenty subs", "give 20 subs") == pytest.approx(1 / 3)


def test_canonical_closes_the_normalisers_gaps_on_both_sides() -> None:
    # The normaliser writes "three, two, one" as 321 but "3, 2, 1" as "3 2 one".
    assert words("Three, two, one... go!") == words("3, 2, 1 go.") == ["321", "go"]
    assert wer("It's 2:47 in the morning.", "It's 247 in the morning.") == 0.0
    assert wer("Closes at 9:15 pm.", "closes at 9.15pm") == 0.0
    assert wer("Hahaha, no.", "Ha-ha-ha, no.") == 0.0
    assert wer("Hahaha, no.", "Ha-ha, no.") == pytest.approx(1 / 4)  # one laugh short
    assert wer("That's alright, okay?", "That's all right, OK.") == 0.0
    assert words("that one got me") == ["that", "1", "got", "me"]
    # Still errors: another number, another word, a number lost.
    assert wer("Three, two, one... go!", "3, 2, go.") == pytest.approx(1 / 2)
    assert wer("At 9:15 pm.", "At 9:50 pm.") == pytest.approx(1 / 3)
    assert wer("Lmao, okay.", "Elmau okay.") == pytest.approx(1 / 2)


def test_corpus_rate_weighs_by_reference_length() -> None:
    from lab.acoustic_quality import corpus_rate, intelligibility_summary

    rows = [
        {"system": "m", "speaker": "a", "text": "Yep.", "asr": "Yap.", "wer": 1.0},
        {"system": "m", "speaker": "a", "text": "one two three four five six seven eight nine",
         "asr": "one two three four five six seven eight nine", "wer": 0.0},
        {"system": "m", "speaker": "b", "text": "the cat sat on the mat",
         "asr": "the cat sat on a mat", "wer": 1 / 6},
    ]  # fmt: skip
    # 1 + 0 + 1 edits over 1 + 1 (one run of numbers) + 6 reference tokens.
    assert corpus_rate(rows, "wer") == pytest.approx(2 / 8, abs=1e-4)
    summary = intelligibility_summary(rows, ["a", "b"], "en")["m"]
    assert summary["wer"] == pytest.approx((1 + 0 + 1 / 6) / 3, abs=1e-4)
    assert summary["wer_corpus"] == pytest.approx(0.25, abs=1e-4)
    assert summary["per_speaker"]["a"]["wer_corpus"] == pytest.approx(1 / 2, abs=1e-4)
    zh = [{"system": "m", "speaker": "a", "text": "你好", "asr": "你好"},
          {"system": "m", "speaker": "a", "text": "今天天气很好", "asr": "今天天气很号"}]  # fmt: skip
    assert corpus_rate(zh, "cer") == pytest.approx(1 / 8, abs=1e-4)
    assert corpus_rate(zh, "syllable_error") == pytest.approx(1 / 8, abs=1e-4)


@pytest.fixture(scope="module")
def asr() -> Transcriber:
    return Transcriber(threads=2)


def speak(voice: PiperVoice, text: str, **controls: float) -> np.ndarray:
    pcm = asyncio.run(synthesize(voice, text, Controls(**controls), sample_rate=24000))
    return pcm.astype(np.float32) / 32768


@pytest.mark.slow
def test_embedded_voice_is_intelligible_through_the_streaming_path(
    joe: PiperVoice, asr: Transcriber
) -> None:
    texts = [
        "Please call Stella and ask her to bring these things with her from the store.",
        "Could you tell me the way to the nearest library, please?",
        "We will meet at the station at half past seven tomorrow morning.",
    ]
    # VITS samples noise, so each run differs a little; tiny.en misses a word now and then.
    errors = [wer(t, asr(speak(joe, t), 24000)) for t in texts]
    assert sum(errors) / len(errors) <= 0.2 and max(errors) <= 0.35, errors
    # The instrument can fail: noise is not transcribed as the sentence.
    noise = np.random.default_rng(0).normal(0, 0.1, 24000 * 3).astype(np.float32)
    assert wer(texts[0], asr(noise, 24000)) > 0.8


@pytest.mark.slow
def test_speed_control_moves_speaking_rate(joe: PiperVoice) -> None:
    text = "A large red balloon floated slowly over the quiet village."
    n = len(words(text))
    slow = prosody(speak(joe, text, speed=0.75), 24000, n)
    fast = prosody(speak(joe, text, speed=1.4), 24000, n)
    assert fast.words_per_s > slow.words_per_s * 1.4
