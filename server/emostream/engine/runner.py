"""Where model calls run. The streaming loop awaits a runner, never a model directly.

:class:`ThreadRunner` runs calls on a small thread pool (ONNX Runtime releases the
GIL), which is the CPU path. A GPU runner (batched across streams) implements the
same two coroutines.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
import numpy.typing as npt

from emostream.engine.chunked import PadSide
from emostream.voices.base import Controls, Latent, Voice


class Runner(Protocol):
    async def acoustic(self, voice: Voice, text: str, controls: Controls) -> Latent: ...

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
    ) -> npt.NDArray[np.float32]:
        """Decode one window. ``pad_side``: where a batching runner may pad the window (the side
        away from the utterance's edge); ``deadline`` (``time.monotonic``): when the listener
        needs the audio, for runners that schedule by urgency."""
        ...

    def cancel(self, stream_id: str) -> None: ...

    def close(self) -> None: ...


class ThreadRunner:
    """Runs model calls on ``workers`` threads (documented default 2 = the CI machine's cores)."""

    def __init__(self, *, workers: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="emostream-model")

    async def acoustic(self, voice: Voice, text: str, controls: Controls) -> Latent:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, voice.acoustic, text, controls)

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
    ) -> npt.NDArray[np.float32]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, voice.decode, frames)

    def cancel(self, stream_id: str) -> None:
        """Nothing queued per stream here: an in-flight call finishes and is discarded."""

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
