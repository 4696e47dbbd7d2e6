"""The long-text soak: its texts, and one short utterance against the real app."""

from __future__ import annotations

import os

import pytest

from loadtest.long_soak import KINDS, long_soak, long_text, speak
from tests.conftest import ServerThread


def test_texts_are_long_and_prose_differs_by_index() -> None:
    for kind in KINDS:
        text = long_text(kind, 1, 5000)
        assert 4900 <= len(text) <= 5000 and not text.endswith(" ")
    assert long_text("prose", 1, 5000) != long_text("prose", 2, 5000)
    assert long_text("times", 1, 50).startswith("9:05 9:05")
    with pytest.raises(ValueError):
        long_text("poetry", 1, 10)


@pytest.mark.slow
async def test_a_short_run_against_the_app(server: ServerThread) -> None:
    outcome = await speak(server.ws_url, long_text("prose", 1, 120), "prose", timeout_s=60)
    assert outcome.done is not None and outcome.audio_bytes > 0 and not outcome.errors
    report = await long_soak(
        server.ws_url, os.getpid(), chars=60, warmup=1, sequential=2, rounds=1, at_once=2,
        settle_s=0.1, timeout_s=60, rss_tolerance=10.0,
    )  # fmt: skip
    assert report["verdict"]["failed"] == 0 and len(report["sequential"]) == 2
    assert len(report["concurrent"][0]["utterances"]) == 2
