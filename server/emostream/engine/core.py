"""The engine loop: one device, one scheduler, every front end's model calls.

The engine process (:mod:`emostream.engine.process`: ``python -m emostream.engine.process``)
loads the voices on its device, collects the stages they declare (:func:`collect_stages`;
:class:`~emostream.voices.base.BatchedStage`: no voice type is checked) and serves front ends
(:class:`~emostream.engine.client.EngineClient`) on a Unix socket, through
:mod:`emostream.engine.channel`, with :class:`EngineCore`.

:class:`EngineCore` is the loop of vLLM's ``EngineCore.step``: take what the sockets
brought (calls are submitted to the
:class:`~emostream.engine.scheduling.scheduler.EngineScheduler`, cancels drop queued work),
**schedule** one batch, **execute** it (pad the windows into the bucket shape, one call of
the stage's ``run``), **deliver** each result to its client by request id, and publish the
load for admission. One thread: the device call blocks it, and meanwhile new calls wait in
the socket buffers. Where that thread's time goes and what the batches were
(:class:`~emostream.engine.stats.EngineStats`) is logged at info every ``stats_interval_s``
(``EMOSTREAM_ENGINE_STATS_S``, default 5; 0: never) as one line, ``engine stats {json}``.
Under load the acoustic stages linger (``EMOSTREAM_ENGINE_ACOUSTIC_LINGER_MS``, the
scheduler's Linger): the loop then sleeps in its poll until the hold ends or a message comes.
"""

from __future__ import annotations

import json
import logging
import selectors
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from emostream.engine.channel import FrameDecoder, SlotArena, StatusBlock, encode
from emostream.engine.costs import CostTable, LinearCost, MeasuredCost
from emostream.engine.messages import (
    ArraySpec,
    Call,
    Cancel,
    Done,
    Dropped,
    Error,
    Hello,
    ToClient,
    ToEngine,
    Welcome,
    pickled,
    unpickled,
)
from emostream.engine.scheduling.scheduler import EngineScheduler
from emostream.engine.scheduling.work import Plan, StageSpec
from emostream.engine.stats import EngineStats
from emostream.voices.base import BatchedStage, StagedVoice

log = logging.getLogger(__name__)


def collect_stages(
    voices: Iterable[object], overrides: Mapping[str, BatchedStage] | None = None
) -> dict[str, BatchedStage]:
    """Every stage the voices declare, by key (``overrides``: this device's runner for a
    key, e.g. the GPU vocoder engine's). Raises when a declared stage has nothing to run."""
    stages: dict[str, BatchedStage] = {}
    for voice in voices:
        if not isinstance(voice, StagedVoice):
            continue
        for stage in voice.batched_stages():
            chosen = (overrides or {}).get(stage.key, stage)
            if chosen.run is None:
                raise RuntimeError(f"stage {stage.key!r} has nothing to run it in this process")
            stages.setdefault(stage.key, chosen)
    return stages


@dataclass
class _Call:
    client: _Client
    rid: int  # the client's request id
    slot: int  # -1: inline
    spec: ArraySpec | None  # the input array in the slot
    obj: Any  # the inline input (an acoustic request, or an array that did not fit)
    extra: Any  # decode: the pad side


class _Client:
    def __init__(self, sock: socket.socket, cid: int) -> None:
        self.sock = sock
        self.cid = cid
        self.decoder = FrameDecoder(ToEngine)
        self.arena: SlotArena | None = None
        self.outbox: list[bytes] = []  # encoded messages not yet sent (see flush)

    def send(self, message: ToClient) -> None:
        """Queue ``message``; :meth:`flush` sends what is queued."""
        self.outbox.append(encode(message))

    def flush(self) -> None:
        """Send the queued messages in one write: one wake-up of the front end per batch,
        not one per answer (measured: docs/measurements.md, "GPU engine", Engine stats)."""
        if not self.outbox:
            return
        data = self.outbox[0] if len(self.outbox) == 1 else b"".join(self.outbox)
        self.outbox.clear()
        try:
            self.sock.sendall(data)
        except OSError:
            pass  # gone: its EOF is handled by the loop


class EngineCore:
    """See the module docs. ``stages``: from :func:`collect_stages`; ``cost``: the prior
    of the measured cost per shape; ``stats_interval_s``: how often :meth:`serve` logs
    :attr:`stats` (0: never); ``acoustic_linger_s`` / ``vocoder_linger_s``: the linger of
    the acoustic stages and of the other (vocoder) stages
    (:class:`~emostream.engine.scheduling.work.StageSpec`,
    ``EMOSTREAM_ENGINE_ACOUSTIC_LINGER_MS``, ``EMOSTREAM_ENGINE_VOCODER_LINGER_MS``; 0: none).
    A stage only lingers where its measured cost makes a small batch dear per row (the
    scheduler's gain test): the light vocoder's calls are mostly a fixed cost, HiFi-GAN V1's
    mostly rows (measured: docs/measurements.md, "Engine scheduler and loop")."""

    def __init__(
        self,
        stages: Mapping[str, BatchedStage],
        *,
        cost: CostTable | None = None,
        clock: Callable[[], float] = time.monotonic,
        window_s: float = 2.0,
        stats_interval_s: float = 5.0,
        acoustic_linger_s: float = 0.0,
        vocoder_linger_s: float = 0.0,
    ) -> None:
        self.stages = dict(stages)
        self.clock = clock
        self.cost = MeasuredCost(cost or CostTable({}, default=LinearCost(0.002)))
        specs = [StageSpec(k, s.batch_sizes, s.lengths,
                           acoustic_linger_s if s.kind == "acoustic" else vocoder_linger_s)
                 for k, s in self.stages.items()]  # fmt: skip
        self.scheduler = EngineScheduler(specs, self.cost, window_s=window_s)
        self.status = StatusBlock()
        self._calls: dict[int, _Call] = {}
        self._next = 0
        self.clients: dict[int, _Client] = {}
        self.stats = EngineStats()
        self.stats_interval_s = stats_interval_s
        self._run_span = (0.0, 0.0)  # perf_counter around the last stage call
        self._unsent: dict[int, _Client] = {}  # clients with queued answers (flush)
        self._cpu = (time.process_time(), time.thread_time())

    # -- messages ------------------------------------------------------------------------

    def _send(self, client: _Client, message: ToClient) -> None:
        self.stats.msgs_out += 1
        client.send(message)
        self._unsent[client.cid] = client

    def flush(self) -> None:
        """Send every client's queued answers (the loop calls it after taking calls in and
        after each step; :meth:`step` flushes its own)."""
        for client in self._unsent.values():
            client.flush()
        self._unsent.clear()

    def handle(self, client: _Client, msg: ToEngine) -> None:
        """One message from ``client`` (:mod:`~emostream.engine.messages`), by its type."""
        self.stats.msgs_in += 1
        match msg:
            case Call():
                self._submit(client, msg)
            case Cancel():
                self.stats.cancels += 1
                for item in self.scheduler.cancel((client.cid, msg.stream)):
                    self._drop(item.rid)
            case Hello():
                client.arena = SlotArena(msg.slots, msg.slot_bytes, name=msg.shm_name)
                self._send(client, Welcome(self.status.name, self.decode_lengths()))

    def _submit(self, client: _Client, msg: Call) -> None:
        rid, stage, stream = msg.rid, msg.stage, msg.stream
        self.stats.calls_in[stage] += 1
        self._next += 1
        call = _Call(client, rid, msg.slot, msg.spec, unpickled(msg.inline), msg.pad_side)
        try:
            # An acoustic call has no stream (Runner.acoustic): its own id, untracked.
            key = (client.cid, stream or f"a-{rid}")
            self.scheduler.submit(self._next, key, stage, length=msg.length, now=self.clock(),
                                  due=msg.due, payload=call, track=bool(stream),
                                  need_by=msg.need_by)  # fmt: skip
        except (KeyError, ValueError) as exc:
            self._send(client, Error(rid, f"{type(exc).__name__}: {exc}"))
            return
        self._calls[self._next] = call

    def decode_lengths(self) -> dict[str, tuple[int, ...]]:
        """The padded window lengths of each decode stage that pads (told to front ends in
        the welcome: they fill their windows to these, ``ChunkSchedule.buckets``)."""
        return {k: s.lengths for k, s in self.stages.items() if s.kind == "decode" and s.lengths}

    def _drop(self, rid: int) -> None:
        call = self._calls.pop(rid, None)
        if call is not None:
            self._send(call.client, Dropped(call.rid))

    def forget(self, client: _Client) -> None:
        """A client went away: its queued calls go, its arena is closed."""
        streams = {s for s in self.scheduler.streams() if s[0] == client.cid}  # type: ignore[index]
        for stream in streams:
            self.scheduler.cancel(stream)
        for rid in [r for r, c in self._calls.items() if c.client is client]:
            del self._calls[rid]
        if client.arena is not None:
            client.arena.close()
        self.clients.pop(client.cid, None)
        self._unsent.pop(client.cid, None)
        client.outbox.clear()

    # -- step ----------------------------------------------------------------------------

    def step(self) -> bool:
        """Schedule, execute and deliver one batch; False when nothing was queued."""
        perf = time.perf_counter
        t0 = perf()
        plan = self.scheduler.schedule(self.clock())
        t1 = perf()
        if plan is None:
            self.stats.seconds["schedule"] += t1 - t0
            return False
        self._run_span = (t1, t1)
        try:
            outputs = self._execute(plan)
        except Exception as exc:  # every waiter of the batch gets the error
            log.exception("engine batch of %s failed", plan.stage)
            for item in self.scheduler.fail(plan):
                call = self._calls.pop(item.rid, None)
                if call is not None:
                    self._send(call.client, Error(call.rid, f"{type(exc).__name__}: {exc}"))
            self.flush()
            self.stats.stage(plan.stage).failed += len(plan.items)
            self.stats.seconds["run"] += perf() - t1
            return True
        t2 = perf()
        self.cost.observe(plan.stage, plan.batch, plan.length, t2 - t1)
        now = self.clock()
        deliveries = self.scheduler.complete(plan, now)
        delivered = {d.rid for d in deliveries}
        for item, value in zip(plan.items, outputs, strict=True):
            call = self._calls.get(item.rid)
            if item.rid in delivered and call is not None:
                del self._calls[item.rid]
                self._deliver(call, value)
            else:
                self._drop(item.rid)
        self.flush()
        t3 = perf()
        r0, r1 = self._run_span
        s = self.stats.batch(plan.stage, items=len(plan.items), rows=plan.batch,
                             length=plan.length, real_cells=sum(i.length for i in plan.items),
                             schedule_s=t1 - t0, prep_s=r0 - t1, run_s=r1 - r0, post_s=t2 - r1,
                             deliver_s=t3 - t2)  # fmt: skip
        s.late += sum(1 for d in deliveries if d.late)
        for item in plan.items:
            wait = now - item.submitted
            s.waits.append(wait)
            if item.urgent:
                s.urgent_waits.append(wait)
        return True

    def _input(self, call: _Call) -> Any:
        if call.spec is not None and call.client.arena is not None:
            return call.client.arena.view(call.slot, call.spec)
        return call.obj

    def _execute(self, plan: Plan) -> list[Any]:
        stage = self.stages[plan.stage]
        assert stage.run is not None
        calls: list[_Call] = [item.payload for item in plan.items]
        if stage.kind == "acoustic":
            requests = [self._input(c) for c in calls]
            r0 = time.perf_counter()
            out = list(stage.run(requests))
            self._run_span = (r0, time.perf_counter())
            return out
        windows = [np.asarray(self._input(c), dtype=np.float32) for c in calls]
        length = plan.length
        mel = np.full((plan.batch, windows[0].shape[0], length), stage.pad_value, np.float32)
        starts = []
        for row, (w, call) in enumerate(zip(windows, calls, strict=True)):
            n = w.shape[1]
            start = length - n if call.extra == "left" else 0
            mel[row, :, start : start + n] = w
            starts.append((start, n))
        r0 = time.perf_counter()
        audio = np.asarray(stage.run(mel))
        self._run_span = (r0, time.perf_counter())
        hop = audio.shape[-1] // length
        # Views of the backend's fresh result, in its dtype (fp16 from the CUDA backend: half
        # the bytes to copy into the slots; the client converts to float32 as it reads).
        return [audio[row, a * hop : (a + n) * hop] for row, (a, n) in enumerate(starts)]

    def _deliver(self, call: _Call, value: Any) -> None:
        arena = call.client.arena
        array = value if isinstance(value, np.ndarray) else getattr(value, "frames", None)
        if arena is None or call.slot < 0 or array is None or not arena.fits(array.nbytes):
            self._send(call.client, Done(call.rid, None, pickled(value)))
            return
        spec = arena.write(call.slot, array)
        rest = None if array is value else (value.unit_frames, value.units, value.before,
                                            value.after)  # fmt: skip
        self._send(call.client, Done(call.rid, spec, pickled(rest)))

    def stats_report(self) -> dict[str, Any]:
        """The stats of the interval since the last report (see
        :class:`~emostream.engine.stats.EngineStats`), with the engine process's CPU
        seconds (all threads; the loop's thread) and the scheduler's load now."""
        cpu, thread = time.process_time(), time.thread_time()
        extra: dict[str, Any] = {
            "cpu_s": {"process": round(cpu - self._cpu[0], 3),
                      "loop_thread": round(thread - self._cpu[1], 3)},
        }  # fmt: skip
        self._cpu = (cpu, thread)
        load = self.scheduler.load(self.clock())
        sched = self.scheduler.stats
        extra["load"] = {
            "live_streams": load.live_streams,
            "queued": load.queued,
            "in_flight": self.scheduler.in_flight,
            "clients": len(self.clients),
            "busy_fraction": round(load.busy_fraction, 3),
            "demand_fraction": round(load.demand_fraction, 3),
            "committed_fraction": round(load.committed_fraction, 3),
            "urgent_p95_ms": round(1e3 * load.urgent_p95_s, 2),
            "late_recent": load.late_recent,
            "late_total": sched.late,
            "cancelled_total": sched.cancelled,
            # schedule() calls that held a lingering stage (ran another stage or waited)
            "held_total": sched.held,
            "waited_total": sched.waited,
        }
        # The measured cost per shape (moving average of the execute step: padding, the
        # stage's call, slicing), ms: calibrates the cost table (emostream.engine.costs).
        # "ROWSxLENGTH" for a stage with length buckets, else "ROWS" (mean over lengths).
        by: dict[tuple[str, str], list[float]] = {}
        for (stage, rows, length), seconds in sorted(self.cost.table().items()):
            spec = self.scheduler.stages.get(stage)
            shape = f"{rows}x{length}" if spec is not None and spec.lengths else f"{rows}"
            by.setdefault((stage, shape), []).append(seconds)
        shapes: dict[str, dict[str, float]] = {}
        for (stage, shape), xs in by.items():
            shapes.setdefault(stage, {})[shape] = round(1e3 * sum(xs) / len(xs), 3)
        extra["cost_ms"] = shapes
        return self.stats.report(extra)

    def _log_stats(self) -> None:
        log.info("engine stats %s", json.dumps(self.stats_report(), separators=(",", ":")))

    # -- loop ----------------------------------------------------------------------------

    def serve(self, listener: socket.socket, *, stop: Callable[[], bool]) -> None:
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ, None)
        published = 0.0
        ids = 0
        stats, perf = self.stats, time.perf_counter
        seconds = stats.seconds
        logged = perf()
        while not stop():
            queued = self.scheduler.queued
            wake = self.scheduler.wake_at  # a held stage (linger): nothing to run before then
            timeout = 0.05 if not queued else 0.0 if wake is None else wake - self.clock()
            t0 = perf()
            events = sel.select(min(0.05, max(0.0, timeout)))
            t1 = perf()
            woke = self.clock()
            seconds["poll" if queued and wake is None else "wait"] += t1 - t0
            for key, _ in events:
                if key.data is None:
                    conn, _ = listener.accept()
                    ids += 1
                    client = _Client(conn, ids)
                    self.clients[ids] = client
                    sel.register(conn, selectors.EVENT_READ, client)
                    continue
                client = key.data
                try:
                    data = client.sock.recv(1 << 20)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(client.sock)
                    client.sock.close()
                    self.forget(client)
                    continue
                stats.bytes_in += len(data)
                for msg in client.decoder.feed(data):
                    self.handle(client, msg)
            self.flush()  # welcome, dropped, errors
            t2 = perf()
            seconds["intake"] += t2 - t1
            ran = self.step()
            stats.iteration(queued, not events and not ran)
            now = self.clock()
            if now - published >= 0.005:
                t3 = perf()
                self.status.publish(self.scheduler.load(now))
                published = now
                seconds["publish"] += perf() - t3
            if events or ran:  # the loop's host work counts in the busy share (note_busy)
                self.scheduler.note_busy(woke, self.clock())
            if self.stats_interval_s > 0 and t2 - logged >= self.stats_interval_s:
                logged = t2
                self._log_stats()
        sel.close()
        if self.stats_interval_s > 0 and stats.iterations:
            self._log_stats()

    def close(self) -> None:
        for client in list(self.clients.values()):
            client.sock.close()
            self.forget(client)
        self.status.close()
