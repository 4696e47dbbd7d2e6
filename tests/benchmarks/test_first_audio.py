"""``emostream bench first-audio`` measures live synthesis unless asked for the phrase cache."""

from __future__ import annotations

import asyncio

from emostream.benchmarks.first_audio import SENTENCES, run
from tests.conftest import ServerThread


def test_repeated_sentences_are_synthesised_live_unless_cache_is_asked(
    server: ServerThread,
) -> None:
    url = f"ws://127.0.0.1:{server.port}/v1/stream"
    n = len(SENTENCES) + 2  # every sentence once, then two of them again
    live = asyncio.run(run(url, n, 1, "joe", "pcm_s16le", 24000, 0))
    assert live["utterances"] == n and live["cached_utterances"] == 0
    assert live["phrase_cache"].startswith("bypassed")
    cached = asyncio.run(run(url, n, 1, "joe", "pcm_s16le", 24000, 0, cache=True))
    # The first pass stored nothing (cache: false), so this pass stores each sentence once
    # and answers its repeats from the cache.
    assert cached["cached_utterances"] >= 2 and cached["phrase_cache"] == "used"
