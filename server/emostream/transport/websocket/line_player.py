"""A connection's line player: the lines it was sent (``line``: danmaku, chat), spoken in turn.

Lines wait in the connection's :class:`~emostream.transport.websocket.line_queue.LineQueue`
(sans-I/O: priority, TTL, speed-up, pacing); the player is the thin asyncio part around it. One
task per connection (made at the first ``line``) reports expiries as they happen and starts the
next line whenever the socket is idle and (``line_pace_lead_ms`` > 0) the audio already sent is
at most that lead ahead of a listener playing it in real time (:attr:`LinePlayer.playout`, fed
by the connection with every binary frame sent), so lines wait, expire and speed up against
what is heard. Waiting lines are dropped (``cleared``) on shutdown.

The connection says when a line may start (``may_start``), sends what the player reports
(``send``) and starts a line as an utterance (``start``, with the queue's speed factor).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from emostream.config import Settings
from emostream.transport.websocket.contexts import tagged
from emostream.transport.websocket.line_queue import Dropped, Line, LineQueue, Playout
from emostream.transport.websocket.protocol import EnqueueLine

log = logging.getLogger(__name__)


class LinePlayer:
    """One connection's queued lines and the task that plays them (module docs)."""

    def __init__(
        self,
        settings: Settings,
        *,
        may_start: Callable[[], bool],
        send: Callable[[dict[str, Any]], Awaitable[None]],
        start: Callable[[Line, float], Awaitable[None]],
    ) -> None:
        self._settings = settings
        self._may_start = may_start
        self._send = send
        self._start = start
        self.playout = Playout()  # the listener's clock: every binary frame sent
        self._queue: LineQueue | None = None  # made at the first line
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def queue(self) -> LineQueue:
        """This connection's line queue, made at its first ``line`` or ``clear``."""
        if self._queue is None:
            settings = self._settings
            self._queue = LineQueue(
                max_lines=max(1, settings.line_queue_max),
                max_speed=max(1.0, settings.line_queue_max_speed),
                lead_s=max(0.0, settings.line_pace_lead_ms) / 1000.0,
                hear_delay_s=max(0.0, settings.line_hear_delay_ms) / 1000.0,
                playout=self.playout,
            )
        return self._queue

    def wake(self) -> None:
        """Something changed (an utterance ended, a line or clear came): look again."""
        self._wake.set()

    async def enqueue(self, action: EnqueueLine, context: str | None = None) -> None:
        queue = self.queue()
        now = time.monotonic()
        line = Line(action.id, action.text, action.priority, action.ttl_s, fields=action.fields)
        if context is not None:  # a v1.1 line: spoken as that context
            line = Line(line.id, line.text, line.priority, line.ttl_s,
                        fields={**line.fields, "context_id": context})  # fmt: skip
        await self.report(queue.push(line, now))
        if self._task is None:
            self._task = asyncio.create_task(self._run(queue))
        self._wake.set()

    async def clear(self) -> None:
        """``clear``: every waiting line dropped and reported."""
        await self.report(self.queue().clear(time.monotonic()))
        self._wake.set()

    async def drop_waiting(self) -> None:
        """On shutdown: the waiting lines, if any, dropped and reported."""
        if self._queue is not None and len(self._queue):
            await self.report(self._queue.clear(time.monotonic()))

    async def report(self, dropped: list[Dropped]) -> None:
        """``line_dropped`` for each line dropped, then the ``queue`` status."""
        for gone in dropped:
            context = gone.line.fields.get("context_id")
            await self._send(tagged(gone.event, context if isinstance(context, str) else None))
        if self._queue is not None:
            await self._send(self._queue.status(time.monotonic()))

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self, queue: LineQueue) -> None:
        """Report expiries when they fall due; start the next line whenever idle and paced
        (woken when an utterance ends, a line or clear arrives, an expiry falls due, or the
        listener's clock comes within the lead)."""
        while True:
            self._wake.clear()
            try:
                await self._step(queue)
            except Exception:  # a bug must not stop the queue (nor take the connection down)
                log.exception("line queue step failed")
            # (Ready time included even when already past: it may pass between the pop that
            # found the listener too far ahead and now; the next step then starts the line.)
            due = queue.wake_at(may_start=self._may_start())
            timeout = None if due is None else max(0.001, due - time.monotonic())
            try:
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _step(self, queue: LineQueue) -> None:
        now = time.monotonic()
        expired = queue.expire(now)
        if expired:
            await self.report(expired)
        if not self._may_start() or not len(queue):
            return
        line, dropped = queue.pop(time.monotonic())
        if line is None:  # none left, or the listener is more than the lead ahead
            if dropped:
                await self.report(dropped)
            return
        await self._start(line, queue.speed())
        await self.report(dropped)
