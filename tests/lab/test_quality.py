"""The evaluation instruments, and the embedded voice judged by them."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from emostream.engine.oneshot import synthesize
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
