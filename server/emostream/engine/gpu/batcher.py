"""Cross-stream batching of model work (sans-I/O: no clocks, threads or asyncio inside).

Every live stream submits work items (a vocoder window, an acoustic segment) tagged with
its stream id and length in frames. The :class:`Batcher` decides *when* to run a batch
and *what* goes in it:

* **when**: as soon as the oldest pending item has waited ``max_wait`` seconds, or as soon
  as a full batch (the largest batch size) is pending -- whichever comes first. The caller
  passes ``now``; :meth:`Batcher.deadline` says when to look again.
* **what**: items are padded to a few bucket shapes (:class:`BucketSpec`: frame lengths
  x batch sizes) so that one captured CUDA graph serves each shape. A batch's frame length
  is a bucket at least as long as the next item of the first stream in round-robin order;
  among those, the one with the most real frames per unit of cost (a fixed cost per call
  plus padded rows x frames): mixing short windows into a long batch when that beats
  another call, keeping them apart when padding would cost more.
* **fair and urgent first**: each pass over the streams takes at most one item per stream;
  only when every eligible stream has had one does a stream get a second (a backlog, e.g.
  all windows of one segment, then fills spare rows). Within a pass, streams go by the due
  time of their next item (earliest deadline first: a first chunk, needed within ~100 ms,
  before a later chunk with a second of audio still buffered); equal due times go
  round-robin: streams served move to the back, and a stream skipped because its next
  item is longer than this batch's bucket keeps its place.
* **in order**: a stream's items leave in submission order (FIFO per stream; a stream
  stops contributing to a batch at its first item that does not fit). Batches must be run
  and their results delivered in the order :meth:`Batcher.next_batch` returns them.
* **cancel**: :meth:`Batcher.cancel` drops a stream's pending items and returns them (so
  the I/O layer can cancel whatever waits on them).
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

P = TypeVar("P")


@dataclass(frozen=True)
class BucketSpec:
    """Padded shapes: frame lengths and batch sizes (ascending).

    Defaults suit HiFi-GAN windows of a ``ChunkSchedule(first=16, size=64, context=14)``:
    30-, 60- and 92-frame windows (a folded tail: at most 93). Batches stop at 32 rows: a
    fp16 HiFi-GAN V1 graph costs about the same per row from 8 rows up, so bigger batches
    buy little throughput but make every batch -- and the wait of an urgent first chunk
    behind it -- longer (measured: docs/measurements.md, "Engine scheduler and loop")."""

    frames: tuple[int, ...] = (32, 64, 96)
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 20, 24, 28, 32)

    def __post_init__(self) -> None:
        for name, values in (("frames", self.frames), ("batch_sizes", self.batch_sizes)):
            if not values or list(values) != sorted(set(values)) or values[0] < 1:
                raise ValueError(f"BucketSpec.{name} must be ascending positive ints: {values}")

    @property
    def max_batch(self) -> int:
        return self.batch_sizes[-1]

    @property
    def max_frames(self) -> int:
        return self.frames[-1]

    def frames_bucket(self, frames: int) -> int:
        """The smallest frame bucket holding ``frames``."""
        i = bisect.bisect_left(self.frames, frames)
        if i == len(self.frames):
            raise ValueError(f"{frames} frames exceed the largest bucket ({self.max_frames})")
        return self.frames[i]

    def batch_bucket(self, size: int) -> int:
        """The smallest batch size holding ``size`` items."""
        i = bisect.bisect_left(self.batch_sizes, size)
        if i == len(self.batch_sizes):
            raise ValueError(f"batch of {size} exceeds the largest ({self.max_batch})")
        return self.batch_sizes[i]

    def shapes(self) -> list[tuple[int, int]]:
        """Every ``(batch size, frames)`` shape, smallest first."""
        return [(b, f) for f in self.frames for b in self.batch_sizes]


# The engine process's vocoder shapes (emostream.engine.gpu.stages). Its front ends fill
# each window to its bucket (ChunkSchedule.buckets, told in the engine's welcome): a first
# chunk of 18 frames fills 32 (14 of right context), later ones 68 fill 96 (14 each side).
# A 64-frame bucket would only hold the second and third chunks (36 frames each: 56 % of the
# row audio); without it the second chunk fills a 96 (68 frames) and an utterance takes one
# call fewer: more streams in real time in the simulation (measured: docs/measurements.md,
# "Engine scheduler and loop").
ENGINE_BUCKETS = BucketSpec(frames=(32, 96))
# The light vocoder needs 29 frames each side: in a 96-frame row only 38 frames are new audio.
# Its rows are 128 frames (a first chunk of 99 frames, 1.15 s; 70 new in a later row) and
# 256 (198 new, 77 %) for the wide chunks of later segments (chunker.bucketed_schedule).
# A call and its host work cost more than its rows: fewer, wider windows. A 48-frame row
# (until the H100 engine runs of 2026-12-06) made first chunks of 19 frames, and bursts of
# replies stalled on their second window (measured: docs/measurements.md, "Engine scheduler and
# loop").
LITE_ENGINE_BUCKETS = BucketSpec(frames=(128, 256))


def engine_buckets(vocoder: str, frames: tuple[int, ...] = ()) -> BucketSpec:
    """The GPU engine's vocoder shapes for ``vocoder`` (``v1`` or ``lite``, as
    :func:`emostream.voices.catalog.vocoder_choice` names them); ``frames``, when given,
    replace its row lengths (``Settings.vocoder_frames()``: A/B runs)."""
    if vocoder == "lite":
        spec = LITE_ENGINE_BUCKETS
    elif vocoder == "v1":
        spec = ENGINE_BUCKETS
    else:
        raise ValueError(f"unknown vocoder {vocoder!r}: v1 or lite")
    return BucketSpec(frames=frames, batch_sizes=spec.batch_sizes) if frames else spec


@dataclass(frozen=True)
class WorkItem(Generic[P]):
    stream: Hashable
    seq: int  # per stream, from 0, in submission order
    frames: int  # length before padding
    payload: P
    submitted: float  # the caller's clock
    uid: int = field(compare=False)
    due: float = 0.0  # when the result is needed (caller's clock); orders urgency


@dataclass(frozen=True)
class Batch(Generic[P]):
    frames: int  # padded frame length (a bucket)
    size: int  # padded batch size (a bucket) >= len(items)
    items: tuple[WorkItem[P], ...]  # per stream in seq order

    @property
    def fill(self) -> float:
        """Useful share of the padded batch (frames of real items / padded volume)."""
        return sum(i.frames for i in self.items) / (self.size * self.frames)


@dataclass
class BatcherStats:
    submitted: int = 0
    batches: int = 0
    items: int = 0
    cancelled: int = 0
    real_frames: int = 0
    padded_frames: int = 0  # frames computed (padding included)


class Batcher(Generic[P]):
    """Round-robin, deadline-driven batch former. Not thread-safe: one owner calls it."""

    def __init__(
        self,
        *,
        buckets: BucketSpec | None = None,
        max_wait: float = 0.002,
        fixed_cost_frames: float = 256.0,
        default_slack: float = 0.5,
    ) -> None:
        """``max_wait``: seconds the oldest item may wait for company. ``fixed_cost_frames``:
        a call's fixed cost in padded frame-rows (cost of a batch = this + batch x frames;
        HiFi-GAN V1's fp16 CUDA graph measured: docs/measurements.md, "Engine scheduler
        and loop"). ``default_slack``: an item submitted without a ``due`` time is due this long after
        submission."""
        if max_wait < 0:
            raise ValueError("max_wait must be >= 0")
        self.fixed_cost_frames = fixed_cost_frames
        self.default_slack = default_slack
        self._last_due: dict[Hashable, float] = {}
        self.buckets = buckets or BucketSpec()
        self.max_wait = max_wait
        self.stats = BatcherStats()
        # Insertion order of this dict is the round-robin order.
        self._queues: dict[Hashable, deque[WorkItem[P]]] = {}
        self._next_seq: dict[Hashable, int] = {}
        self._fifo: deque[WorkItem[P]] = deque()  # all items by age; dead ones skipped lazily
        self._live: set[int] = set()
        self._uids = itertools.count()

    # -- submissions ---------------------------------------------------------------

    def submit(
        self,
        stream: Hashable,
        payload: P,
        *,
        frames: int,
        now: float,
        due: float | None = None,
    ) -> WorkItem[P]:
        """Queue one item of ``frames`` frames for ``stream``; returns it (with its seq).
        ``due``: when its result is needed (e.g. when the listener's buffer runs dry);
        default ``now + default_slack``. A stream's due times never go backwards."""
        if frames < 1:
            raise ValueError("frames must be >= 1")
        self.buckets.frames_bucket(frames)  # raises if it fits no bucket
        seq = self._next_seq.get(stream, 0)
        self._next_seq[stream] = seq + 1
        when = now + self.default_slack if due is None else due
        when = max(when, self._last_due.get(stream, when))
        self._last_due[stream] = when
        item = WorkItem(stream, seq, frames, payload, now, next(self._uids), when)
        queue = self._queues.get(stream)
        if queue is None:
            queue = self._queues[stream] = deque()
        queue.append(item)
        self._fifo.append(item)
        self._live.add(item.uid)
        self.stats.submitted += 1
        return item

    def cancel(self, stream: Hashable) -> list[WorkItem[P]]:
        """Drop ``stream``'s pending items (returned, oldest first) and forget the stream."""
        self._next_seq.pop(stream, None)
        self._last_due.pop(stream, None)
        queue = self._queues.pop(stream, None)
        if not queue:
            return []
        for item in queue:
            self._live.discard(item.uid)
        self.stats.cancelled += len(queue)
        return list(queue)

    def release(self, stream: Hashable) -> None:
        """Forget a finished stream's sequence counter (its pending items, if any, stay)."""
        if stream not in self._queues:
            self._next_seq.pop(stream, None)
            self._last_due.pop(stream, None)

    # -- scheduling ----------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._live)

    def pending_for(self, stream: Hashable) -> int:
        return len(self._queues.get(stream, ()))

    def _oldest(self) -> WorkItem[P] | None:
        fifo = self._fifo
        while fifo and fifo[0].uid not in self._live:
            fifo.popleft()
        return fifo[0] if fifo else None

    def deadline(self) -> float | None:
        """When the oldest pending item's wait runs out (None when nothing is pending)."""
        oldest = self._oldest()
        return None if oldest is None else oldest.submitted + self.max_wait

    def ready(self, now: float) -> bool:
        """Whether a batch should run now: a full batch is pending or a wait ran out."""
        if not self._live:
            return False
        if len(self._live) >= self.buckets.max_batch:
            return True
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def _select(
        self, order: list[Hashable], length: int
    ) -> tuple[list[WorkItem[P]], dict[Hashable, int]]:
        """Round-robin passes over ``order`` taking items of at most ``length`` frames."""
        limit = self.buckets.max_batch
        taken_per: dict[Hashable, int] = dict.fromkeys(order, 0)
        blocked: set[Hashable] = set()
        items: list[WorkItem[P]] = []
        while len(items) < limit:
            progressed = False
            for stream in order:
                if stream in blocked:
                    continue
                queue = self._queues[stream]
                k = taken_per[stream]
                if k >= len(queue) or queue[k].frames > length:
                    blocked.add(stream)
                    continue
                items.append(queue[k])
                taken_per[stream] = k + 1
                progressed = True
                if len(items) >= limit:
                    break
            if not progressed:
                break
        return items, taken_per

    def next_batch(self, now: float, *, force: bool = False) -> Batch[P] | None:
        """The next batch to run, or None if none is due (``force``: any pending work)."""
        if not self._live or not (force or self.ready(now)):
            return None
        # Most urgent head first; equal due times keep the round-robin order (stable sort).
        order = sorted(self._queues, key=lambda s: self._queues[s][0].due)
        first_len = self.buckets.frames_bucket(self._queues[order[0]][0].frames)
        # Choose the frame bucket (>= the first stream's) with the most useful frames per
        # unit of cost: a longer bucket takes more streams but pads the short items.
        best: tuple[float, int, list[WorkItem[P]], dict[Hashable, int]] | None = None
        for length in self.buckets.frames:
            if length < first_len:
                continue
            items, taken_per = self._select(order, length)
            useful = sum(i.frames for i in items)
            cost = self.fixed_cost_frames + self.buckets.batch_bucket(len(items)) * length
            score = useful / cost
            if best is None or score > best[0] * (1.0 + 1e-9):
                best = (score, length, items, taken_per)
            if len(items) == len(self._live) or len(items) >= self.buckets.max_batch:
                break  # a longer bucket could only add padding
        assert best is not None
        _, length, items, taken_per = best
        # Remove what was taken; served streams go to the back, in the order served.
        for stream in order:
            k = taken_per[stream]
            if k == 0:
                continue
            queue = self._queues.pop(stream)
            for _ in range(k):
                self._live.discard(queue.popleft().uid)
            if queue:
                self._queues[stream] = queue
        # Items are in pass order, so each stream's items are in seq order.
        batch = Batch(frames=length, size=self.buckets.batch_bucket(len(items)), items=tuple(items))
        self.stats.batches += 1
        self.stats.items += len(items)
        self.stats.real_frames += sum(i.frames for i in items)
        self.stats.padded_frames += batch.size * batch.frames
        return batch
