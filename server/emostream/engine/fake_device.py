"""A fake device and simulated real-time streams, for scheduling tests and estimates.

:class:`FakeDevice` says how long a :class:`~emostream.engine.scheduler.Plan` takes from a
cost model (the H200's measured costs, :func:`emostream.engine.costs.h200_table`), so the
real :class:`~emostream.engine.scheduler.EngineScheduler` can be driven in simulated time:
no clock, no threads, the same result for the same seed.

:func:`simulate` plays N closed-loop listeners as the streamer serves them
(:func:`emostream.engine.streamer.stream_utterance`, one segment per utterance): an
utterance's acoustic call is due at once; then its windows (the streamer's
:class:`~emostream.engine.chunker.ChunkSchedule`; by default as the engine process's front
ends make them, filled to the vocoder's buckets) one after another, the first due at once,
each later one due when the listener would run out of the audio before it; a window
delivered after that is an underrun. The utterance's work ends with a cancel (as the
service does); the next utterance starts when the listener has heard this one. With
``admit``, every utterance asks first; a refused one tries again ``retry_s`` later.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from emostream.engine.batcher import ENGINE_BUCKETS
from emostream.engine.chunker import ChunkSchedule, ChunkWindow
from emostream.engine.scheduler import (
    CostModel,
    Delivery,
    EngineScheduler,
    LoadSnapshot,
    Plan,
    StageSpec,
)

ACOUSTIC = "acoustic"
VOCODER = "vocoder"
FRAME_S = 256 / 22050  # one mel frame of audio (hop 256 at 22.05 kHz)
# The shapes the engine process captures: ENGINE_BUCKETS, GraphedAcoustic's BATCHES.
VOCODER_STAGE = StageSpec(VOCODER, ENGINE_BUCKETS.batch_sizes, ENGINE_BUCKETS.frames)
ACOUSTIC_STAGE = StageSpec(ACOUSTIC, (1, 2, 4, 8, 16, 32))


@dataclass
class FakeDevice:
    """Runs nothing: a plan takes its cost model's time, times ``1 +- jitter``."""

    cost: CostModel
    jitter: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def run(self, plan: Plan) -> float:
        base = self.cost.cost(plan.stage, plan.batch, plan.length)
        return base * (1.0 + self.jitter * self.rng.uniform(-1.0, 1.0))


@dataclass(frozen=True)
class SimConfig:
    streams: int
    seconds: float = 8.0
    utterance_s: tuple[float, float] = (2.0, 6.0)
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

    def p95_first_audio(self) -> float:
        xs = sorted(self.first_audio_s)
        return xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)] if xs else 0.0


@dataclass
class _Utterance:
    listener: int
    sid: str
    start: float
    frames: int
    windows: list[ChunkWindow] = field(default_factory=list)
    k: int = 0
    first_audio: float | None = None
    audio_frames: int = 0


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
    waiting: dict[int, tuple[_Utterance, str]] = {}  # rid -> (utterance, stage)
    mean_s = sum(config.utterance_s) / 2

    for listener in range(config.streams):
        at = rng.uniform(0.0, config.join_s or mean_s)
        heapq.heappush(events, (at, next(seq), listener))

    def submit_window(u: _Utterance, now: float) -> None:
        w = u.windows[u.k]
        due = now if u.first_audio is None else u.first_audio + u.audio_frames * FRAME_S
        rid = next(rids)
        scheduler.submit(rid, u.sid, VOCODER, length=w.hi - w.lo, now=now, due=due)
        waiting[rid] = (u, VOCODER)

    def start(listener: int, now: float) -> None:
        if admit is not None and not admit(scheduler.load(now)):
            res.refused += 1
            heapq.heappush(events, (now + config.retry_s, next(seq), listener))
            return
        res.admitted += 1
        n = res.utterances_by_stream.get(listener, 0)
        res.utterances_by_stream[listener] = n + 1
        audio_s = rng.uniform(*config.utterance_s)
        u = _Utterance(listener, f"{listener}/{n}", now, max(1, round(audio_s / FRAME_S)))
        rid = next(rids)
        units = max(1, round(audio_s * config.units_per_s))
        scheduler.submit(rid, u.sid, ACOUSTIC, length=units, now=now, due=now)
        waiting[rid] = (u, ACOUSTIC)

    def deliver(d: Delivery, now: float) -> None:
        u, stage = waiting.pop(d.rid)
        if stage == ACOUSTIC:
            u.windows = list(config.schedule.windows(u.frames))
            submit_window(u, now)
            return
        res.windows += 1
        if u.first_audio is None:
            u.first_audio = now
            res.first_audio_s.append(now - u.start)
        elif d.late:
            res.underruns += 1
            res.underruns_by_stream[u.listener] = res.underruns_by_stream.get(u.listener, 0) + 1
        u.audio_frames += u.windows[u.k].emitted
        res.audio_frames += u.windows[u.k].emitted
        u.k += 1
        if u.k < len(u.windows):
            submit_window(u, now)
            return
        scheduler.cancel(u.sid)  # the utterance's work is done (the service cancels)
        heard = u.first_audio + u.frames * FRAME_S
        heapq.heappush(events, (max(now, heard), next(seq), u.listener))

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
    ``linger_s``: the acoustic stage's (see :class:`~emostream.engine.scheduler.StageSpec`)."""
    from emostream.engine.costs import h200_table

    acoustic = replace(ACOUSTIC_STAGE, linger_s=linger_s)
    return EngineScheduler([acoustic, VOCODER_STAGE], h200_table(), **kwargs)
