"""Whole-utterance synthesis through the streaming path (CLI ``say``, evaluation)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import numpy.typing as npt

from emostream.codec.packetizer import OutputFormat
from emostream.engine.runner import Runner, ThreadRunner
from emostream.stream.streamer import Packet, UtteranceRequest, stream_utterance
from emostream.text.frontend import TextFrontEnd
from emostream.text.pron.reader import PronunciationSetup
from emostream.voices.base import Controls, Voice


async def synthesize(
    voice: Voice,
    text: str,
    controls: Controls | None = None,
    *,
    sample_rate: int = 24000,
    runner: Runner | None = None,
    pronunciation: PronunciationSetup | None = None,
) -> npt.NDArray[np.int16]:
    """Speak ``text`` and return the whole s16 PCM at ``sample_rate`` (16/24/48 kHz).
    ``pronunciation``: read overrides and dictionary words (:mod:`emostream.text.pron`; an
    override that cannot be applied raises
    :class:`~emostream.text.frontend.OverrideRefused`)."""
    texts = TextFrontEnd.split(text, pronunciation=pronunciation)
    own = runner is None
    runner = runner or ThreadRunner(workers=1)

    async def segments() -> AsyncIterator[str]:
        for t in texts:
            yield t

    request = UtteranceRequest(
        voice=voice, controls=controls or Controls(), fmt=OutputFormat("pcm_s16le", sample_rate)
    )
    chunks: list[bytes] = []
    try:
        async for item in stream_utterance(request, segments(), runner):
            if isinstance(item, Packet):
                chunks.append(item.data)
    finally:
        if own:
            runner.close()
    return np.frombuffer(b"".join(chunks), dtype=np.int16)
