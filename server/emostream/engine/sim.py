"""A fake device and simulated real-time streams, for scheduling tests and estimates.

:class:`FakeDevice` says how long a :class:`~emostream.engine.scheduling.work.Plan` takes
from a cost model (the H200's measured costs, :func:`emostream.engine.costs.h200_table`),
plus, optionally, the engine loop's host work around each batch (``host_per_plan_s``,
``host_per_item_s``: intake, padding, delivery; one thread, so the device waits for it),
so the real :class:`~emostream.engine.scheduling.scheduler.EngineScheduler` can be driven in
simulated time: no clock, no threads, the same result for the same seed.

:func:`simulate` plays N closed-loop listeners as the streamer serves them
(:func:`emostream.stream.streamer.stream_utterance`): an utterance is one or more segments
(``SimConfig.segments``; default one of ``utterance_s``). A segment's acoustic call is due
when the listener would run out of audio (at once before the first packet), less
``lookahead_lead_s``, and needed by that run-out (the scheduler's ``need_by``: late only
after it, ``SimResult.late_by_stage``); its windows (the streamer's
:class:`~emostream.engine.chunks.ChunkSchedule`; by default as the engine process's front
ends make them, filled to the vocoder's buckets) go one after another, the first due at
once when the listener has nothing, each later one due when the listener would run out of
the audio before it; a window delivered after that is an underrun. The next segment's
acoustic call runs one segment ahead, as the streamer's look-ahead does
(``SimConfig.lookahead``): ``gated``, once the listener has ``REFILL_AHEAD_S`` of audio
buffered (or the segment is decoded); ``eager``, the streamer before 2026-12-04, where the
second segment's call went at once, due at once, when the first segment's came back. The
utterance's work ends with a cancel (as the service does); the next utterance starts when
the listener has heard this one. With ``admit``, every utterance asks first; a refused one
tries again ``retry_s`` later.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from emostream.engine.chunks import ChunkSchedule, ChunkWindow
from emostream.engine.gpu.batcher import ENGINE_BUCKETS
from emostream.engine.scheduling.load import LoadSnapshot
from emostream.engine.scheduling.scheduler import REFILL_AHEAD_S, EngineScheduler
from emostream.engine.scheduling.work import CostModel, Delivery, Plan, StageSpec

ACOUSTIC = "acoustic"
VOCODER = "vocoder"
FRAME_S = 256 / 22050  # one mel frame of audio (hop 256 at 22.05 kHz)
# The shapes the engine process captures: ENGINE_BUCKETS, GraphedAcoustic's BATCHES.
VOCODER_STAGE = StageSpec(VOCODER, ENGINE_BUCKETS.batch_sizes, ENGINE_BUCKETS.frames)
ACOUSTIC_STAGE = StageSpec(ACOUSTIC, (1, 2, 4, 8, 16, 32))
# The load generator's closed-loop workload (loadtest.texts.REPLIES, each cut by the server's
# Segmenter: 2-3 segments, 17 in 8 replies) in audio seconds per segment: characters times
# a reply's mean audio length as measured on the H200 (2026-12-04; docs/measurements.md,
# "Figures behind the code"). tests check the cuts.
LOADGEN_SEGMENTS_S: tuple[tuple[float, ...], ...] = (
    (1.21, 1.21, 1.7), (1.37, 1.92), (1.21, 2.9), (1.64, 1.59),
    (1.7, 2.3), (0.77, 3.12), (1.81, 1.86), (0.71, 3.23),
)  # fmt: skip


@dataclass
class FakeDevice:
    """Runs nothing: a plan takes its cost model's time, times ``1 +- jitter``, plus the
    engine loop's host work (``host_per_plan_s`` + ``host_per_item_s`` per item; 0: none)."""

    cost: CostModel
    jitter: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    host_per_plan_s: float = 0.0
    host_per_item_s: float = 0.0

    def run(self, plan: Plan) -> float:
        base = self.cost.cost(plan.stage, plan.batch, plan.length)
        host = self.host_per_plan_s + self.host_per_item_s * len(plan.items)
        return base * (1.0 + self.jitter * self.rng.uniform(-1.0, 1.0)) + host


Lookahead = Literal["gated", "eager"]


@dataclass(frozen=True)
class SimConfig:
    streams: int
    seconds: float = 8.0
    utterance_s: tuple[float, float] = (2.0, 6.0)  # one segment of this many seconds
    # Utterances as their segments' audio seconds (each listener takes them in turn from a
    # random start, each segment times 1 +- segment_jitter); empty: one of utterance_s.
    segments: tuple[tuple[float, ...], ...] = ()
    segment_jitter: float = 0.1
    lookahead: Lookahead = "gated"
    lookahead_lead_s: float = 0.0  # a look-ahead acoustic call is due this much earlier
    # What a look-ahead call's due counts: "sent", the audio delivered so far (the streamer:
    # due at once before the first audio); "planned", every earlier segment's audio (the
    # listener cannot run out before it ends, whether or not its windows ran yet)
    lookahead_due: Literal["sent", "planned"] = "sent"
    units_per_s: float = 12.0  # acoustic request length per audio second
    schedule: ChunkSchedule = field(
        default_factory=lambda: ChunkSchedule(context=14, buckets=VOCODER_STAGE.lengths)
    )
    join_s: float = 0.0  # streams join spread over this long (0: at random utterance phases)
    retry_s: float = 0.5
    seed: int = 0


@dataclass
class SimResult:
    first_audio_s: list[float] = field(default_factory=list)
    windows: int = 0
    underruns: int = 0
    underruns_by_stream: dict[int, int] = field(default_factory=dict)
    utterances_by_stream: dict[int, int] = field(default_factory=dict)
    refused: int = 0
    admitted: int = 0
    plans: list[tuple[str, int, int, int]] = field(default_factory=list)  # stage, rows, B, L
    busy_s: float = 0.0
    busy_by_stage: dict[str, float] = field(default_factory=dict)  # device seconds
    audio_frames: int = 0  # emitted frames of the windows delivered
    seconds: float = 0.0
    acoustic_calls: int = 0
    acoustic_urgent: int = 0  # acoustic calls due at once (a listener with nothing buffered)
    late_by_stage: dict[str, int] = field(default_factory=dict)  # the scheduler's late count

    def p95_first_audio(self) -> float:
        xs = sorted(self.first_audio_s)
        return xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)] if xs else 0.0


@dataclass
class _Utterance:
    """One utterance as the streamer runs it: a producer (the acoustic look-ahead, one
    segment ahead through a queue of one) and a consumer (the windows of one segment)."""

    listener: int
    sid: str
    start: float
    segments: list[int]  # frames per segment
    next_segment: int = 0  # the producer's next acoustic call
    requesting: bool = False  # an acoustic call in flight
    ready: int | None = None  # a segment in the queue (its acoustic call done)
    held: int | None = None  # done but not yet queued (the queue was full)
    go_ahead: bool = False
    waiting: bool = True  # the consumer waits for the next segment
    current: int = -1
    windows: list[ChunkWindow] = field(default_factory=list)
    k: int = 0
    first_audio: float | None = None
    audio_frames: int = 0

    @property
    def frames(self) -> int:
        return sum(self.segments)

    def run_out(self, now: float) -> float:
        """When the listener runs out of audio (now, before the first packet)."""
        return now if self.first_audio is None else self.first_audio + self.audio_frames * FRAME_S

    def starving(self, now: float) -> bool:
        return self.run_out(now) - now < REFILL_AHEAD_S


def simulate(
    config: SimConfig,
    scheduler: EngineScheduler,
    device: FakeDevice,
    *,
    admit: Callable[[LoadSnapshot], bool] | None = None,
) -> SimResult:
    """Run ``config.streams`` listeners for ``config.seconds`` of simulated time (see the
    module docs); ``scheduler`` must have the ``acoustic`` and ``vocoder`` stages."""
    rng = random.Random(config.seed)
    res = SimResult(seconds=config.seconds)
    rids = itertools.count()
    seq = itertools.count()
    events: list[tuple[float, int, int]] = []  # (time, seq, listener): an utterance starts
    # rid -> (utterance, stage, segment, due: a window's run-out, when the listener has audio)
    waiting: dict[int, tuple[_Utterance, str, int, float]] = {}
    shapes = config.segments
    mean_s = sum(sum(u) for u in shapes) / len(shapes) if shapes else sum(config.utterance_s) / 2
    turn = {n: rng.randrange(len(shapes)) if shapes else 0 for n in range(config.streams)}
    eager = config.lookahead == "eager"

    for listener in range(config.streams):
        at = rng.uniform(0.0, config.join_s or mean_s)
        heapq.heappush(events, (at, next(seq), listener))

    def segment_frames(listener: int) -> list[int]:
        if not shapes:
            return [max(1, round(rng.uniform(*config.utterance_s) / FRAME_S))]
        shape = shapes[turn[listener] % len(shapes)]
        turn[listener] += 1
        j = config.segment_jitter
        return [max(1, round(s * rng.uniform(1.0 - j, 1.0 + j) / FRAME_S)) for s in shape]

    def submit_window(u: _Utterance, now: float) -> None:
        w = u.windows[u.k]
        rid, due = next(rids), u.run_out(now)
        scheduler.submit(rid, u.sid, VOCODER, length=w.hi - w.lo, now=now, due=due)
        waiting[rid] = (u, VOCODER, u.current, due)

    def produce(u: _Utterance, now: float) -> None:
        """The look-ahead's next acoustic call, when it may go."""
        j = u.next_segment
        if u.requesting or u.held is not None or j >= len(u.segments):
            return
        if j > 0 and not u.go_ahead:
            return
        # need_by: when the listener runs out without it, as the streamer passes it (the
        # due is lookahead_lead_s before that, not before now): the scheduler's late count
        need_by = due = u.run_out(now)
        planned = config.lookahead_due == "planned" and j > 0
        if planned:
            start = now if u.first_audio is None else u.first_audio
            need_by = start + sum(u.segments[:j]) * FRAME_S
        if planned or u.first_audio is not None:
            due = max(now, need_by - config.lookahead_lead_s)
        rid = next(rids)
        units = max(1, round(u.segments[j] * FRAME_S * config.units_per_s))
        scheduler.submit(rid, u.sid, ACOUSTIC, length=units, now=now, due=due, need_by=need_by)
        waiting[rid] = (u, ACOUSTIC, j, due)
        res.acoustic_calls += 1
        res.acoustic_urgent += due <= now
        u.requesting, u.next_segment = True, j + 1

    def put(u: _Utterance, j: int) -> None:
        if u.ready is None:
            u.ready = j
            if not eager:
                u.go_ahead = False  # the next look-ahead needs a fresh go-ahead
        else:
            u.held = j

    def consume(u: _Utterance, now: float) -> None:
        """The consumer takes the next segment when it waits and one is queued."""
        while u.waiting and u.ready is not None:
            u.current, u.ready = u.ready, None
            if u.held is not None:
                held, u.held = u.held, None
                put(u, held)
            u.go_ahead = False
            u.waiting = False
            first = u.first_audio is None or u.starving(now)
            u.windows = list(config.schedule.windows(u.segments[u.current], first=first))
            u.k = 0
            submit_window(u, now)
            produce(u, now)

    def start(listener: int, now: float) -> None:
        if admit is not None and not admit(scheduler.load(now)):
            res.refused += 1
            heapq.heappush(events, (now + config.retry_s, next(seq), listener))
            return
        res.admitted += 1
        n = res.utterances_by_stream.get(listener, 0)
        res.utterances_by_stream[listener] = n + 1
        u = _Utterance(listener, f"{listener}/{n}", now, segment_frames(listener))
        u.go_ahead = eager  # the streamer set it before its first wait (the race)
        produce(u, now)

    def finished(u: _Utterance, now: float) -> None:
        scheduler.cancel(u.sid)  # the utterance's work is done (the service cancels)
        assert u.first_audio is not None
        heard = u.first_audio + u.frames * FRAME_S
        heapq.heappush(events, (max(now, heard), next(seq), u.listener))

    def deliver(d: Delivery, now: float) -> None:
        u, stage, j, due = waiting.pop(d.rid)
        if stage == ACOUSTIC:
            u.requesting = False
            put(u, j)
            produce(u, now)  # eager: the go-ahead may still be set
            consume(u, now)
            return
        res.windows += 1
        if u.first_audio is None:
            u.first_audio = now
            res.first_audio_s.append(now - u.start)
        elif now > due:  # late, or submitted after the listener ran out (a segment's first)
            res.underruns += 1
            res.underruns_by_stream[u.listener] = res.underruns_by_stream.get(u.listener, 0) + 1
        emitted = u.windows[u.k].emitted
        u.audio_frames += emitted
        res.audio_frames += emitted
        u.k += 1
        if not u.starving(now):
            u.go_ahead = True
            produce(u, now)
        if u.k < len(u.windows):
            submit_window(u, now)
            return
        if u.current == len(u.segments) - 1:
            finished(u, now)
            return
        u.waiting, u.go_ahead = True, True  # waiting for the next segment: look ahead
        produce(u, now)
        consume(u, now)

    now = 0.0
    plan: Plan | None = None
    busy_until = math.inf
    wake = math.inf  # a held stage's release (EngineScheduler.wake_at)
    while True:
        next_event = events[0][0] if events else math.inf
        now = min(next_event, busy_until, wake)
        if now > config.seconds:
            break
        if plan is not None and busy_until <= now:
            for d in scheduler.complete(plan, now):
                if d.late:
                    res.late_by_stage[plan.stage] = res.late_by_stage.get(plan.stage, 0) + 1
                deliver(d, now)
            plan, busy_until = None, math.inf
        while events and events[0][0] <= now:
            _, _, listener = heapq.heappop(events)
            start(listener, now)
        if plan is None:
            plan = scheduler.schedule(now)
            wake = math.inf if scheduler.wake_at is None else scheduler.wake_at
            if plan is not None:
                took = device.run(plan)
                res.busy_s += took
                res.busy_by_stage[plan.stage] = res.busy_by_stage.get(plan.stage, 0.0) + took
                busy_until = now + took
                res.plans.append((plan.stage, len(plan.items), plan.batch, plan.length))
        if plan is None and not events and wake == math.inf:
            break
    return res


def h200_scheduler(*, linger_s: float = 0.0, **kwargs: float) -> EngineScheduler:
    """A scheduler with the GPU path's stages (``acoustic``, ``vocoder``) and H200 costs;
    ``linger_s``: the acoustic stage's (see
    :class:`~emostream.engine.scheduling.work.StageSpec`)."""
    from emostream.engine.costs import h200_table

    acoustic = replace(ACOUSTIC_STAGE, linger_s=linger_s)
    return EngineScheduler([acoustic, VOCODER_STAGE], h200_table(), **kwargs)
