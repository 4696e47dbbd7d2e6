"""The model replica: one Serve replica per GPU (or CPU host) running a stream's model calls.

It loads the voices and the device's own runner exactly as a single-host server does
(:func:`emostream.engine.devices.setup_device`: threads on cpu, the batched GPU engine on
cuda, or a client of the engine process), and serves the
:class:`~emostream.engine.runner.Runner` calls the ingress's
:class:`~emostream.cluster.ray_runner.RayRunner` forwards: ``acoustic`` and ``decode``, with
the voice as a reference (a stock id, or an id and its speaker embedding for a clone or an
inline reference clip) and the deadline (and the call's ``need_by``, as ``need_in``) as
seconds from now (clocks differ between hosts).

A stream is open here while its ``session`` call runs: that streaming call answers at once
with this replica's identity and load, then every ``heartbeat_s`` with the load again, and
ends when the ingress cancels it (the stream ended). Open sessions are what Serve counts as
this replica's ongoing requests, so Serve's autoscaling and its power-of-two routing both
see streams. A call for a stream that is not open here (its replica died and the router sent
the call elsewhere) is refused with :class:`StreamLost`.

``max_streams`` is a soft cap: a session asked for without ``force`` is refused at it (the
ingress then asks again with ``force``, having decided admission already).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.engine.chunks import PadSide
from emostream.engine.devices import DeviceSetup, setup_device
from emostream.voices.base import Controls, Latent, SpeakerVoice, Voice
from emostream.voices.catalog import VoiceCatalog, load_catalog
from emostream.voices.cloning.cache import LRU

log = logging.getLogger(__name__)


class StreamLost(RuntimeError):
    """A call for a stream whose session is not open on this replica."""


@dataclass(frozen=True)
class VoiceRef:
    """A voice as the ingress names it to a replica: a stock id, or (clones, inline
    references) an id with its speaker embedding."""

    id: str
    speaker: npt.NDArray[np.float32] | None = None

    @classmethod
    def of(cls, voice: Voice, *, stock: bool) -> VoiceRef:
        speaker = voice.speaker if not stock and isinstance(voice, SpeakerVoice) else None
        return cls(voice.info.id, None if speaker is None else np.asarray(speaker, np.float32))


def _at(seconds: float | None, now: float) -> float | None:
    """A time given as seconds from ``now`` (None: none), on this host's clock."""
    return None if seconds is None else now + seconds


def replica_identity() -> tuple[str, str]:
    """``(replica id, node id)`` of the calling Serve replica."""
    import ray
    from ray import serve

    return (
        serve.get_replica_context().replica_id.unique_id,
        ray.get_runtime_context().get_node_id(),
    )


class ModelReplica:
    """See the module docs. ``settings``: the replica's own (``engine`` is its local one)."""

    def __init__(self, settings: dict[str, Any], *, heartbeat_s: float = 1.0) -> None:
        self.settings = Settings(**settings)
        logging.basicConfig(level=self.settings.log_level.upper())
        self.catalog: VoiceCatalog = load_catalog(self.settings)
        self.heartbeat_s = heartbeat_s
        self.max_streams = self.settings.ray_replica_max_streams
        self.replica_id, self.node_id = replica_identity()
        self._device: DeviceSetup | None = None
        self._device_lock = asyncio.Lock()
        self._voices: LRU[Voice] = LRU(self.settings.voice_cache_size)
        self.streams: set[str] = set()
        self.streams_total = 0
        self.calls = 0
        self.started = time.time()
        log.info("model replica %s on node %s: %d voices", self.replica_id, self.node_id[:12],
                 len(self.catalog))  # fmt: skip

    async def _runner(self) -> DeviceSetup:
        async with self._device_lock:
            if self._device is None:
                self._device = await setup_device(self.settings)
                await self._device.prepare(self.catalog,
                                           acoustic_graphs=self.settings.acoustic_graphs)  # fmt: skip
            return self._device

    def _voice(self, ref: VoiceRef) -> Voice:
        stock = self.catalog.get(ref.id)
        if stock is not None:
            return stock
        cached = self._voices.get(ref.id)
        if cached is not None:
            return cached
        family = self.catalog.family
        if family is None or ref.speaker is None:
            raise KeyError(f"voice {ref.id!r} is not loaded on this replica")
        voice = family.voice(ref.id, ref.speaker, language="multi", description="cloned voice")
        self._voices.put(ref.id, voice)
        return voice

    def _check(self, stream: str, replica: str | None) -> None:
        if replica and replica != self.replica_id:
            raise StreamLost(f"stream {stream!r} was placed on replica {replica}, now gone")
        if stream and stream not in self.streams:
            raise StreamLost(f"stream {stream!r} is not open on replica {self.replica_id}")

    def load(self) -> dict[str, Any]:
        return {
            "replica": self.replica_id,
            "node": self.node_id,
            "pid": os.getpid(),
            "streams": len(self.streams),
            "cap": self.max_streams,
            "streams_total": self.streams_total,
            "calls": self.calls,
        }

    # -- Serve methods ----------------------------------------------------------------------

    async def session(self, stream: str, force: bool = False) -> AsyncIterator[dict[str, Any]]:
        """A stream's life on this replica (see the module docs)."""
        if not force and len(self.streams) >= self.max_streams:
            yield {**self.load(), "refused": "full"}
            return
        await self._runner()
        self.streams.add(stream)
        self.streams_total += 1
        try:
            yield self.load()
            while True:
                await asyncio.sleep(self.heartbeat_s)
                yield self.load()
        finally:
            self.streams.discard(stream)
            if self._device is not None:
                self._device.runner.cancel(stream)

    async def acoustic(
        self,
        ref: VoiceRef,
        text: str,
        controls: Controls,
        due_in: float | None,
        *,
        stream: str = "",
        replica: str | None = None,
        need_in: float | None = None,
    ) -> Latent:
        self._check(stream, replica)
        self.calls += 1
        runner = (await self._runner()).runner
        now = time.monotonic()
        deadline, need_by = _at(due_in, now), _at(need_in, now)
        return await runner.acoustic(self._voice(ref), text, controls, deadline=deadline,
                                     need_by=need_by)  # fmt: skip

    async def decode(
        self,
        ref: VoiceRef,
        frames: npt.NDArray[np.float32],
        pad_side: PadSide,
        due_in: float | None,
        *,
        stream: str = "",
        replica: str | None = None,
        need_in: float | None = None,
    ) -> npt.NDArray[np.float32]:
        self._check(stream, replica)
        self.calls += 1
        runner = (await self._runner()).runner
        now = time.monotonic()
        deadline, need_by = _at(due_in, now), _at(need_in, now)
        return await runner.decode(self._voice(ref), frames, stream_id=stream or "-",
                                   pad_side=pad_side, deadline=deadline,
                                   need_by=need_by)  # fmt: skip

    async def stats(self, replica: str | None = None) -> dict[str, Any]:
        """This replica's load and counters, and the ids of the streams open on it
        (``replica``: the id it is asked of, for the router's pinning)."""
        return {**self.load(), "open_streams": sorted(self.streams)}

    async def check_health(self) -> None:
        """Serve's health check: the runner is up (or can be brought up)."""
        await self._runner()

    def __del__(self) -> None:  # Serve calls it on a graceful shutdown
        if getattr(self, "_device", None) is not None:
            assert self._device is not None
            self._device.runner.close()
