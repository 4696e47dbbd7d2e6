"""The streamer's windows: filled to the buckets of a runner that pads (the engine path)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import numpy.typing as npt

from emostream.codec.packetizer import OutputFormat
from emostream.engine.chunked import PadSide
from emostream.engine.runner import Bucketed
from emostream.engine.streamer import Packet, UtteranceRequest, stream_utterance
from emostream.voices.base import Controls, Latent, Voice, VoiceInfo

HOP = 256
FRAMES = 344  # 4 s of audio


class _Voice:
    info = VoiceInfo("t", "t", "en", 22050, ())
    hop_length = HOP
    context_frames = 14


class _Runner:
    """Records the windows it is asked to decode; pads to ``buckets`` when given."""

    def __init__(self) -> None:
        self.windows: list[int] = []

    async def acoustic(
        self, voice: Voice, text: str, controls: Controls, *, deadline: float | None = None
    ) -> Latent:
        return Latent(np.zeros((80, FRAMES), np.float32))

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
    ) -> npt.NDArray[np.float32]:
        self.windows.append(int(frames.shape[1]))
        return np.zeros(frames.shape[1] * HOP, np.float32)

    def cancel(self, stream_id: str) -> None: ...

    def close(self) -> None: ...


class _Padding(_Runner):
    def decode_buckets(self, voice: Voice) -> tuple[int, ...]:
        return (32, 96)


async def _windows(runner: _Runner) -> tuple[list[int], int]:
    async def one() -> AsyncIterator[str]:
        yield "hello"

    voice: Voice = _Voice()  # type: ignore[assignment]
    request = UtteranceRequest(voice=voice, fmt=OutputFormat(codec="pcm_s16le"))
    items = [i async for i in stream_utterance(request, one(), runner)]
    samples = sum(i.samples for i in items if isinstance(i, Packet))
    return runner.windows, samples


async def test_windows_fill_the_buckets_of_a_padding_runner() -> None:
    assert isinstance(_Padding(), Bucketed) and not isinstance(_Runner(), Bucketed)
    planned, audio = await _windows(_Runner())
    assert planned == [28, 49, 59, 74, 76, 76, 76, 76, 54]  # 14, 21, 31, 46, 48 ... frames
    filled, filled_audio = await _windows(_Padding())
    assert filled == [32, 96, 96, 96, 96, 68]  # 18, 68, 68, 68, 68, 54 frames
    assert filled_audio == audio  # the same audio, in fewer calls
