"""Graceful drain: on SIGTERM stop taking new work, let in-flight utterances finish within
``Settings.drain_timeout_s``, tell every WebSocket client ``error`` ``shutting_down`` (close
code 1001), then let uvicorn shut down.

While draining, ``/healthz`` answers 503 ``{"status": "draining"}`` (a load balancer stops
sending), a WebSocket ``start`` or a new upgrade gets ``shutting_down``, and ``POST
/v1/audio/speech`` answers 503 ``shutting_down``. Utterances already started keep streaming
until their ``done``; those still running at the deadline get ``shutting_down`` and then their
``done`` (``cancelled: true``).

uvicorn answers SIGTERM by closing every WebSocket at once (1012). :func:`hook_sigterm` runs the
drain first and hands the signal to uvicorn's own handler afterwards; a second SIGTERM goes to
uvicorn at once. The hook is only installed in the main thread over a Python-level handler
(uvicorn's), so servers in test threads are drained by calling :meth:`Drain.run`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

log = logging.getLogger(__name__)

SHUTTING_DOWN = "shutting_down"
GOING_AWAY = 1001  # WebSocket close code: the server is going away


class Drainable(Protocol):
    """A WebSocket connection as the drain sees it."""

    @property
    def busy(self) -> bool:
        """An utterance is in flight (started, no ``done`` yet)."""
        ...

    async def shut_down(self) -> None:
        """Send ``shutting_down`` (cancelling any utterance: its ``done`` follows) and close."""
        ...


class Drain:
    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self.draining = False
        self.connections: set[Drainable] = set()
        self.report: dict[str, float] = {}

    async def run(self, active: Callable[[], int], *, poll_s: float = 0.05) -> bool:
        """Drain: idle connections closed now, in-flight utterances (``active()``, WebSocket
        and HTTP) given until the deadline, then every remaining connection shut down. True
        when everything finished before the deadline."""
        self.draining = True
        started = time.monotonic()
        in_flight = active()
        log.info("draining: %d utterance(s) in flight, %.0f s to finish", in_flight,
                 self.timeout_s)  # fmt: skip
        await asyncio.gather(*(c.shut_down() for c in list(self.connections) if not c.busy))
        deadline = started + self.timeout_s
        while active() > 0 and time.monotonic() < deadline:
            await asyncio.sleep(poll_s)
        left = active()
        await asyncio.gather(*(c.shut_down() for c in list(self.connections)))
        self.report = {"in_flight": in_flight, "cut": left, "seconds": time.monotonic() - started}
        log.info("drained in %.1f s: %d finished, %d cut", self.report["seconds"],
                 in_flight - left, left)  # fmt: skip
        return left == 0


Handler = Callable[[int, FrameType | None], object]


def hook_sigterm(drain: Drain, active: Callable[[], int]) -> Callable[[], None]:
    """Run ``drain`` on SIGTERM before the handler already installed (uvicorn's). Returns a
    function that restores that handler. Does nothing outside the main thread or when the
    current handler is not a Python function."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    if not callable(previous):
        return lambda: None
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def drain_then_exit(sig: int, frame: FrameType | None) -> None:
        try:
            await drain.run(active)
        except Exception:  # never keep the process up because the drain failed
            log.exception("drain failed")
        previous(sig, frame)

    def handler(sig: int, frame: FrameType | None) -> None:
        if drain.draining:
            previous(sig, frame)  # a second SIGTERM: uvicorn's shutdown now
            return
        drain.draining = True

        def start() -> None:
            task = loop.create_task(drain_then_exit(sig, frame))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.call_soon_threadsafe(start)

    signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, previous)

    return restore
