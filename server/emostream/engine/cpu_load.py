"""What the CPU path measures of its own load, over a sliding window (sans-I/O).

:class:`~emostream.engine.runner.ThreadRunner` feeds a :class:`CpuLoadTracker` with every
model call it ran (when it was submitted, began and ended, when its listener needed it, how
much audio it made, when the event loop got the result) and with every utterance it admitted
and saw end; :meth:`CpuLoadTracker.snapshot` sums the window up as a :class:`CpuLoad`, which
:func:`emostream.engine.cpu_admission.decide` reads. Nothing here reads a clock: every time is
passed in (``time.monotonic`` seconds).

The figures, all over the last ``window_s``:

* **busy share**: the model worker threads' wall time inside calls over ``window_s x
  workers``. Wall time, not CPU time: a call that waits for a core (other threads of this
  process, the event loop, another program on the machine) takes longer, so contention from
  any source shows as load;
* **work per utterance**: worker seconds per audio second made in the window, times the audio
  of an utterance (a moving average over ended ones): what one more utterance costs;
* **first audio**: the p95 latency (submission to result) of calls due at once (an
  utterance's first acoustic call and its first window), acoustic plus decode; and their
  median run time, what one utterance's first audio costs the workers;
* **late**: calls finished after their ``need_by``, when their listener ran out of audio (a
  call already past it when submitted counts too);
* **loop lag**: how long the event loop took to take each result once the worker had it;
* **pending starts**: utterances admitted in the window and not yet ended, whose work may not
  show in the busy share yet (a burst of starts); and when each start in the window came.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from emostream.config import available_cores
from emostream.engine.scheduling.load import nearest_rank

CallKind = Literal["acoustic", "decode", "call"]
# A call whose need_by is within this of its submission is due at once (an utterance's first
# calls, whose deadline is "now"); later than that before submission, it is already late.
AT_ONCE_S = 0.005
# Per-stream audio is kept until the stream ends; at most this many streams (a stream whose
# end is never reported must not grow it forever).
MAX_STREAMS_TRACKED = 4096


@dataclass(frozen=True)
class CpuLoad:
    """The CPU path's load at ``now`` over the last ``window_s`` (module docs)."""

    now: float
    window_s: float
    workers: int  # model worker threads
    cores: int  # cores the process may run on
    busy_fraction: float  # workers' wall time in calls / (window x workers)
    work_per_utterance_s: float  # worker seconds one utterance costs (0: none measured yet)
    first_audio_p95_s: float  # p95 latency of at-once acoustic calls + of at-once decodes
    first_service_s: float  # median run time of at-once acoustic calls + of decodes (0: none)
    urgent_calls: int  # at-once calls behind first_audio_p95_s
    late_recent: int  # calls finished after their need_by
    last_late_at: float | None  # when the latest of them finished
    loop_lag_p95_s: float
    lag_samples: int
    pending_starts: int  # admitted in the window, not yet ended
    oldest_pending_at: float | None
    live_streams: int  # admitted and not yet ended (any age)
    start_times: tuple[float, ...] = ()  # every admission in the window, oldest first


class CpuLoadTracker:
    """Feeds: :meth:`call` (each model call, on the event loop once delivered),
    :meth:`admitted` and :meth:`ended` (each utterance); read: :meth:`snapshot`.
    Not thread-safe: the event loop owns it."""

    def __init__(
        self,
        *,
        workers: int,
        window_s: float = 2.0,
        cores: int | None = None,
        average_weight: float = 0.1,
    ) -> None:
        """``average_weight``: how much each ended utterance moves the work-per-utterance
        average (exponential moving average)."""
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0: {window_s}")
        self.workers = max(1, workers)
        self.window_s = window_s
        self.cores = cores if cores is not None else available_cores()
        self.average_weight = average_weight
        self.work_per_utterance_s = 0.0
        self.live = 0
        self._calls: deque[tuple[float, float, float]] = deque()  # (began, ended, audio_s)
        # (ended, kind, latency, run time)
        self._urgent: deque[tuple[float, CallKind, float, float]] = deque()
        self._late: deque[float] = deque()  # ended
        self._lags: deque[tuple[float, float]] = deque()  # (delivered, lag)
        self._starts: deque[float] = deque()  # admitted, not ended
        self._admits: deque[float] = deque()  # every admission
        self._stream_audio: dict[str, float] = {}

    # -- feeds ------------------------------------------------------------------------
    def call(
        self,
        *,
        kind: CallKind,
        submitted: float,
        began: float,
        ended: float,
        need_by: float,
        delivered: float,
        audio_s: float = 0.0,
        stream_id: str = "",
    ) -> None:
        """One model call that ran: submitted, began and ended on a worker, its result taken
        by the event loop at ``delivered``; ``need_by``: when its listener runs out without
        it; ``audio_s``: the audio it made (decode calls) for ``stream_id``."""
        self._calls.append((began, ended, audio_s))
        if abs(need_by - submitted) <= AT_ONCE_S:
            self._urgent.append((ended, kind, ended - submitted, ended - began))
        elif ended > need_by:
            self._late.append(ended)
        self._lags.append((delivered, max(0.0, delivered - ended)))
        if audio_s > 0 and stream_id:
            self._stream_audio[stream_id] = self._stream_audio.get(stream_id, 0.0) + audio_s
            if len(self._stream_audio) > MAX_STREAMS_TRACKED:
                del self._stream_audio[next(iter(self._stream_audio))]

    def admitted(self, now: float) -> None:
        """An utterance was admitted."""
        self._starts.append(now)
        self._admits.append(now)
        self.live += 1

    def ended(self, stream_id: str, now: float) -> None:
        """An utterance ended (done, cancelled or failed): it no longer counts as a pending
        start (the oldest one goes: utterances are not matched to their starts), and the
        audio it made updates the work per utterance."""
        self._prune(now)
        if self._starts:
            self._starts.popleft()
        self.live = max(0, self.live - 1)
        audio = self._stream_audio.pop(stream_id, 0.0)
        per_audio = self._work_per_audio_s()
        if audio > 0 and per_audio > 0:
            work = per_audio * audio
            old = self.work_per_utterance_s
            self.work_per_utterance_s = (
                work if old == 0.0 else old + self.average_weight * (work - old)
            )

    # -- reading --------------------------------------------------------------------------
    def snapshot(self, now: float) -> CpuLoad:
        self._prune(now)
        since = now - self.window_s
        busy = sum(max(0.0, min(e, now) - max(b, since)) for b, e, _ in self._calls)
        acoustic = sorted(lat for _, kind, lat, _ in self._urgent if kind != "decode")
        decode = sorted(lat for _, kind, lat, _ in self._urgent if kind == "decode")
        runs_a = sorted(run for _, kind, _, run in self._urgent if kind != "decode")
        runs_d = sorted(run for _, kind, _, run in self._urgent if kind == "decode")
        lags = sorted(lag for _, lag in self._lags)
        return CpuLoad(
            now=now,
            window_s=self.window_s,
            workers=self.workers,
            cores=self.cores,
            busy_fraction=busy / (self.window_s * self.workers),
            work_per_utterance_s=self.work_per_utterance_s,
            first_audio_p95_s=nearest_rank(acoustic, 0.95) + nearest_rank(decode, 0.95),
            first_service_s=nearest_rank(runs_a, 0.5) + nearest_rank(runs_d, 0.5),
            urgent_calls=len(self._urgent),
            late_recent=len(self._late),
            last_late_at=self._late[-1] if self._late else None,
            loop_lag_p95_s=nearest_rank(lags, 0.95),
            lag_samples=len(lags),
            pending_starts=len(self._starts),
            oldest_pending_at=self._starts[0] if self._starts else None,
            live_streams=self.live,
            start_times=tuple(self._admits),
        )

    def _work_per_audio_s(self) -> float:
        """Worker seconds per audio second over the window's calls (0: no audio made)."""
        audio = sum(a for _, _, a in self._calls)
        if audio <= 0:
            return 0.0
        return sum(e - b for b, e, _ in self._calls) / audio

    def _prune(self, now: float) -> None:
        since = now - self.window_s
        while self._calls and self._calls[0][1] < since:
            self._calls.popleft()
        while self._urgent and self._urgent[0][0] < since:
            self._urgent.popleft()
        while self._late and self._late[0] < since:
            self._late.popleft()
        while self._lags and self._lags[0][0] < since:
            self._lags.popleft()
        while self._starts and self._starts[0] < since:
            self._starts.popleft()
        while self._admits and self._admits[0] < since:
            self._admits.popleft()
