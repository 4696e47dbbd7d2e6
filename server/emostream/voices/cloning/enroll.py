"""Enrolment: the bytes of an uploaded clip → a speaker embedding, one path for every route.

``POST /v1/voices`` calls :meth:`Enroller.enroll` (the clip is kept with the registered voice,
so it is always decoded) and a WebSocket ``start.reference_audio`` :meth:`Enroller.embed` (the
embedding alone: decoded only when the cache does not hold it). Both check the clip with the
same :class:`~emostream.voices.cloning.clip.ClipIntake` (a bad clip raises
:class:`~emostream.voices.cloning.clip.ClipError`), embed with the same encoder and go through the same
:class:`~emostream.voices.cloning.cache.EmbeddingCache`, keyed by encoder version and the upload's
SHA-256, so a clip sent again (either way, to any server sharing the Redis) is not embedded
again. Decoding and embedding run off the event loop (``offload``, default
``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from emostream.voices.cloning.cache import EmbeddingCache
from emostream.voices.cloning.clip import Clip, ClipIntake

FloatArray = npt.NDArray[np.float32]
T = TypeVar("T")
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]


class Embedder(Protocol):
    """What enrolment needs of a speaker encoder (:class:`~emostream.voices.cloning.encoder.SpeakerEncoder`)."""

    version: str

    def embed_clip(self, clip: Clip) -> FloatArray: ...


@dataclass(frozen=True)
class Enrolment:
    """A checked clip and its speaker embedding."""

    clip: Clip
    embedding: FloatArray


class Enroller:
    """Clip bytes → speaker embedding through ``intake``, ``encoder`` and ``cache`` (optional)."""

    def __init__(
        self,
        intake: ClipIntake,
        encoder: Embedder,
        *,
        cache: EmbeddingCache | None = None,
        offload: Offload | None = None,
    ) -> None:
        self.intake = intake
        self.encoder = encoder
        self.cache = cache
        self._offload: Offload = offload or asyncio.to_thread

    @property
    def max_bytes(self) -> int:
        """The largest clip accepted (bytes)."""
        return self.intake.limits.max_bytes

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` off the event loop (blocking work: decoding, embedding, storage)."""
        return cast(T, await self._offload(fn))

    async def enroll(self, data: bytes) -> Enrolment:
        """The clip ``data`` decoded and checked, and its embedding (from the cache when it
        holds this clip). Raises :class:`~emostream.voices.cloning.clip.ClipError`."""
        clip = await self.run(lambda: self.intake(data))
        embedding = await self._embedding(clip.sha256, lambda: self._embed(clip))
        return Enrolment(clip, embedding)

    async def embed(self, data: bytes) -> FloatArray:
        """The embedding of the clip ``data``: from the cache when it holds this clip (nothing
        decoded), else decoded, checked and embedded. Raises
        :class:`~emostream.voices.cloning.clip.ClipError`; an oversized clip before anything else."""
        if len(data) > self.max_bytes:
            self.intake(data)  # raises the oversized ClipError without decoding

        async def compute() -> FloatArray:
            return await self._embed(await self.run(lambda: self.intake(data)))

        return await self._embedding(hashlib.sha256(data).hexdigest(), compute)

    async def _embed(self, clip: Clip) -> FloatArray:
        return await self.run(lambda: self.encoder.embed_clip(clip))

    async def _embedding(
        self, sha256: str, compute: Callable[[], Awaitable[FloatArray]]
    ) -> FloatArray:
        if self.cache is None:
            return await compute()
        return await self.cache.get_or_compute(self.encoder.version, sha256, compute)
