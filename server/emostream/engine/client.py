"""A front end's :class:`~emostream.engine.runner.Runner` over the engine process.

:class:`EngineClient` sends every call of a stage a voice declares
(:func:`emostream.voices.base.stage_of`) to the engine process
(:mod:`emostream.engine.process`) through :mod:`emostream.engine.channel`: mel windows
in and audio out through this client's shared-memory slots, control messages on the
socket. What stays here, on a few local threads (a :class:`ThreadRunner`): the text front
end of an acoustic call (``voice.prepare``: G2P) and every call of a voice that declares no
stage (e.g. Piper's), as on the GPU path. The streamer does not change.

``admit`` (:class:`~emostream.engine.admission.Admits`) reads the load the engine
publishes (no round trip) and asks :func:`~emostream.engine.admission.decide`, counting
the utterances this front end admitted since that snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.engine.admission import AdmissionPolicy, Decision, Verdict, decide
from emostream.engine.channel import FrameDecoder, SlotArena, StatusBlock, encode
from emostream.engine.chunks import PadSide
from emostream.engine.messages import (
    Call,
    Cancel,
    Done,
    Dropped,
    Error,
    Hello,
    Reply,
    ToClient,
    Welcome,
    pickled,
    unpickled,
)
from emostream.engine.runner import ThreadRunner
from emostream.voices.base import Controls, Latent, StagedVoice, Voice, stage_of

log = logging.getLogger(__name__)

Audio = npt.NDArray[np.float32]
# A window's audio must fit a slot, or it travels pickled inside the message: the light
# vocoder's 256-frame rows (256 x 256 float32 = 256 KiB) did not fit 128 KiB slots, and
# delivering them pickled took most of the engine loop under load (measured:
# docs/measurements.md, "Engine scheduler and loop"). Shared memory is only backed where
# written.
SLOT_BYTES = 256 << 10


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    slot: int
    stream: str
    dtype: Any = None  # what an answer in the slot is read as (None: as written)


class EngineClient:
    """See the module docs. ``await start()`` connects; ``close()`` disconnects."""

    def __init__(
        self,
        socket_path: str,
        *,
        workers: int = 2,
        slots: int = 256,
        slot_bytes: int = SLOT_BYTES,
        policy: AdmissionPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.socket_path = socket_path
        self.policy = policy or AdmissionPolicy()
        self._clock = clock
        self._local = ThreadRunner(workers=workers)
        self._slots, self._slot_bytes = slots, slot_bytes
        self._arena: SlotArena | None = None
        self._status: StatusBlock | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._admits: deque[float] = deque()
        self._gone: str = ""
        self._lengths: dict[str, tuple[int, ...]] = {}  # decode stage -> padded lengths

    async def start(self) -> None:
        reader, self._writer = await asyncio.open_unix_connection(self.socket_path)
        self._arena = SlotArena(self._slots, self._slot_bytes)
        self._writer.write(encode(Hello(self._arena.name, self._slot_bytes, self._slots)))
        decoder = FrameDecoder(ToClient)
        while True:
            data = await reader.read(1 << 16)
            if not data:
                raise RuntimeError("engine process closed the connection")
            messages = decoder.feed(data)
            if messages:
                break
        match messages[0]:
            case Welcome(status_name=status_name, lengths=lengths):
                self._lengths = dict(lengths)
                self._status = StatusBlock(name=status_name)
            case other:
                raise RuntimeError(f"engine answered {type(other).__name__} to hello")
        for msg in messages[1:]:
            self._on_message(msg)
        self._reader = asyncio.create_task(self._read(reader, decoder), name="emostream-engine")

    # -- Runner ------------------------------------------------------------------------

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        stage = stage_of(voice, "acoustic")
        if not isinstance(voice, StagedVoice) or stage is None or stage.size is None:
            return await self._local.acoustic(voice, text, controls, deadline=deadline)
        prepare = voice.prepare  # the text front end stays here (StagedVoice)
        request = await self._local.run(lambda: prepare(text, controls), deadline=deadline)
        # No stream id here (Runner.acoustic): "" makes it a one-off call in the engine.
        spec, value, array = await self._call(stage.key, "", deadline, stage.size(request),
                                              obj=request, need_by=need_by)  # fmt: skip
        if spec is None:
            latent: Latent = value
            return latent
        unit_frames, units, before, after = value
        return Latent(frames=array, unit_frames=unit_frames, units=units, before=before,
                      after=after)  # fmt: skip

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Audio:
        stage = stage_of(voice, "decode")
        if stage is None:
            return await self._local.decode(
                voice, frames, stream_id=stream_id, pad_side=pad_side, deadline=deadline
            )
        window = np.ascontiguousarray(frames, dtype=np.float32)
        # The engine answers in its backend's dtype (fp16 on a GPU): read as float32.
        spec, value, array = await self._call(stage.key, stream_id, deadline,
                                              int(window.shape[1]), array=window,
                                              extra=pad_side, dtype=np.float32,
                                              need_by=need_by)  # fmt: skip
        out: Audio = array if spec is not None else np.asarray(value, dtype=np.float32)
        return out

    def decode_buckets(self, voice: Voice) -> tuple[int, ...]:
        """The window lengths the engine pads ``voice``'s decode calls to (from its welcome;
        empty when it runs them unpadded, or here): the streamer fills windows to them."""
        stage = stage_of(voice, "decode")
        return () if stage is None else tuple(self._lengths.get(stage.key, ()))

    def cancel(self, stream_id: str) -> None:
        """The engine drops the stream's queued calls (and answers ``dropped``)."""
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(encode(Cancel(stream_id)))

    def close(self) -> None:
        self._local.close()
        if self._reader is not None:
            self._reader.cancel()
        if self._writer is not None:
            self._writer.close()
        self._fail_all("engine client closed")
        if self._status is not None:
            self._status.close()
        if self._arena is not None:
            self._arena.close()
            self._arena = None

    # -- admission ---------------------------------------------------------------------

    def admit(self) -> Decision:
        """One more utterance? (see the module docs). Counted as reserved when admitted."""
        now = self._clock()
        load = self._status.read() if self._status is not None else None
        while self._admits and self._admits[0] < now - 1.0:
            self._admits.popleft()
        if load is None:
            decision = Decision(Verdict.ADMIT, "", 0.0, 0.0)
        else:
            reserved = sum(1 for t in self._admits if t >= load.now)
            decision = decide(load, self.policy, reserved=reserved)
        if decision.admitted:
            self._admits.append(now)
        return decision

    # -- channel -----------------------------------------------------------------------

    async def _call(
        self,
        stage: str,
        stream: str,
        deadline: float | None,
        length: int,
        *,
        array: npt.NDArray[np.float32] | None = None,
        obj: Any = None,
        extra: Any = None,
        dtype: Any = None,
        need_by: float | None = None,
    ) -> tuple[Any, Any, Any]:
        """Send one call; ``(spec, value, array)``: ``array`` read from the slot (as
        ``dtype`` when given) when the answer came through it (``spec`` not None), else the
        inline ``value``. ``need_by`` (None: the due) goes with it: the engine counts the
        call late only when it is delivered after that (Runner's module docs)."""
        if self._gone:
            raise RuntimeError(self._gone)
        arena, writer = self._arena, self._writer
        assert arena is not None and writer is not None, "await start() first"
        rid = next(self._ids)
        slot = arena.take()
        spec = None
        if slot is None:
            slot = -1
        elif array is not None and arena.fits(array.nbytes):
            spec = arena.write(slot, array)
        if array is not None and spec is None:
            obj = array
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = _Pending(fut, slot, stream, dtype)
        due = self._clock() if deadline is None else deadline
        writer.write(encode(Call(rid, stage, stream, due, length, slot, spec, pickled(obj),
                                 extra, need_by)))  # fmt: skip
        result: tuple[Any, Any, Any] = await fut
        return result

    async def _read(self, reader: asyncio.StreamReader, decoder: FrameDecoder) -> None:
        try:
            while data := await reader.read(1 << 20):
                for msg in decoder.feed(data):
                    self._on_message(msg)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        self._fail_all("engine process went away")

    def _on_message(self, msg: ToClient) -> None:
        """One message from the engine (:mod:`~emostream.engine.messages`), by its type:
        a :class:`Reply` settles its call (a second ``Welcome`` is not sent)."""
        if not isinstance(msg, Reply):
            return
        pending = self._pending.pop(msg.rid, None)
        if pending is None:
            return
        arena = self._arena
        fut, slot = pending.future, pending.slot
        try:
            if fut.done():
                return
            match msg:
                case Done(spec=spec):
                    array = (arena.read(slot, spec, pending.dtype)
                             if spec is not None and arena else None)  # fmt: skip
                    fut.set_result((spec, unpickled(msg.inline), array))
                case Error():
                    fut.set_exception(RuntimeError(f"engine: {msg.text}"))
                case Dropped():  # the stream was cancelled
                    fut.cancel()
        finally:
            if slot >= 0 and arena is not None:
                arena.free(slot)

    def _fail_all(self, why: str) -> None:
        self._gone = why
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                with contextlib.suppress(RuntimeError):  # its loop is closed
                    p.future.set_exception(RuntimeError(why))
