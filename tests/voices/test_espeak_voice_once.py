"""piper calls espeak-ng's set_voice before every phonemize, and each call grows the process
by about 1.3 kB for good; :func:`set_espeak_voice_once` skips the calls that change nothing."""

from __future__ import annotations

import ctypes
import gc
import os

import pytest

from emostream.voices.piper_voice import PiperVoice, set_espeak_voice_once
from loadtest.procstats import sample


def test_repeated_voice_is_set_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from piper import espeakbridge

    calls: list[str] = []
    monkeypatch.setattr(espeakbridge, "set_voice", calls.append)
    set_espeak_voice_once()
    for voice in ("en-us", "en-us", "cmn", "cmn", "en-us"):
        espeakbridge.set_voice(voice)
    assert calls == ["en-us", "cmn", "en-us"]
    set_espeak_voice_once()  # idempotent: not wrapped twice
    espeakbridge.set_voice("en-us")
    assert calls == ["en-us", "cmn", "en-us"]


def _trimmed_rss() -> int:
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return sample(os.getpid()).rss_bytes


@pytest.mark.slow
def test_phonemizing_does_not_grow_the_process(joe: PiperVoice) -> None:
    text = "Thanks for the follow, and welcome to the stream everyone."
    for _ in range(100):
        joe.phoneme_ids(text)
    before = _trimmed_rss()
    for _ in range(3000):
        joe.phoneme_ids(text)
    grown = _trimmed_rss() - before
    # measured: 3.9 MB (1.3 kB a call) with a set_voice per call, 0.0 MB without
    assert grown < 1.5 * 2**20, f"{grown / 2**20:.2f} MB after 3,000 phonemize calls"
