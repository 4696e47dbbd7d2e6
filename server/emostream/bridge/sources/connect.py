"""A live platform's chat as a stream of events, kept connected (the asyncio layer's shared
part): what a source is, and the loop that runs its sessions one after another with backoff.

A source's :meth:`~ChatSource.session` is one connection: it calls ``connected()`` once the
platform has accepted it (auth reply, channel joined), hands every chat event to ``on_event``
and everything else worth a line in the log to ``emit``, and returns (the platform closed or
asked for a reconnect) or raises. :func:`run_source` connects again after a delay that
doubles up to a limit (reset once a session was accepted), at once after a ``RECONNECT``,
and stops for good on :class:`FatalSource` (e.g. no such room).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from emostream.bridge.chat.events import ChatEvent
from emostream.bridge.lines import Backoff

Emit = Callable[[dict[str, Any]], None]
OnEvent = Callable[[ChatEvent], None]


class FatalSource(Exception):
    """The source cannot work however often it is tried (the message says why)."""


class SourceError(Exception):
    """This session failed (bad auth reply, no heartbeat reply): connect again."""


class ChatSource(Protocol):
    platform: str
    stats: Counter[str]

    async def session(self, on_event: OnEvent, emit: Emit, connected: Callable[[], None]) -> str:
        """One connection, until it ends; returns why (``"reconnect"``: at once)."""
        ...


async def run_source(
    source: ChatSource,
    *,
    on_event: OnEvent,
    emit: Emit,
    backoff: Backoff | None = None,
    stop: asyncio.Event | None = None,
) -> str | None:
    """Sessions until ``stop`` is set (returns None) or the source is fatal (returns why)."""
    backoff = backoff or Backoff(initial_s=1.0, max_s=60.0)
    stop = stop or asyncio.Event()
    name = source.platform

    def connected() -> None:
        backoff.reset()
        source.stats["connections"] += 1
        emit({"type": "source", "event": "connected", "platform": name})

    while not stop.is_set():
        delay: float | None = None
        try:
            reason = await _until_stopped(source.session(on_event, emit, connected), stop)
            if reason is None:
                return None
            if reason == "reconnect":
                delay = 0.0
        except FatalSource as exc:
            emit({"type": "source", "event": "failed", "platform": name, "reason": str(exc)})
            return str(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a session's end, whatever it was: retried
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if delay is None:
            delay = backoff.next_delay()
        source.stats["disconnects"] += 1
        emit({"type": "source", "event": "disconnected", "platform": name, "reason": reason,
              "retry_in_s": round(delay, 2)})  # fmt: skip
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await stop.wait()
    return None


async def _until_stopped(session: Any, stop: asyncio.Event) -> str | None:
    """``session``'s result, or None once ``stop`` is set (the session is cancelled)."""
    task = asyncio.ensure_future(session)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None
    return str(task.result())


def closed_reason(exc: Exception) -> str:
    """Why a WebSocket closed, from websockets' ``ConnectionClosed``."""
    rcvd, sent = getattr(exc, "rcvd", None), getattr(exc, "sent", None)
    if rcvd is None and sent is not None:  # e.g. 1009: the platform sent a message too big
        return f"closed by the bridge (code {sent.code}{': ' + sent.reason if sent.reason else ''})"
    if rcvd is None:
        return "the connection dropped (no close frame)"
    return f"closed by the server (code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''})"
