"""CI's slice of the text front-end fuzz campaign (``loadtest.fuzz_text``): hypothesis draws
chat-like and long texts from the campaign's generator, and raw Unicode, and each goes through
everything the server does to text for both voice families, with espeak-ng crash-isolated.
No input may crash espeak-ng (after :func:`emostream.text.espeak.defuse`) or raise.

``EMOSTREAM_FUZZ_TEXT_EXAMPLES`` sets the examples per test (CI: 150)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtest.fuzz_text import FrontEnd, random_text

EXAMPLES = int(os.environ.get("EMOSTREAM_FUZZ_TEXT_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def front_end() -> FrontEnd:
    return FrontEnd.load()


@FUZZ
@given(r=st.randoms(use_true_random=False), profile=st.sampled_from(["chat", "chat", "long"]))
def test_generated_texts(front_end: FrontEnd, r: random.Random, profile: str) -> None:
    before = front_end.espeak.crashes
    front_end(random_text(r, profile))
    assert front_end.espeak.crashes == before


@FUZZ
@given(text=st.text(max_size=300))
def test_raw_unicode(front_end: FrontEnd, text: str) -> None:
    before = front_end.espeak.crashes
    front_end(text)
    assert front_end.espeak.crashes == before
