"""Replaying a cached phrase: its packets and events, paced like a good live stream.

The live path sends audio as soon as it is made, which on any machine that keeps real time
is ahead of the listener; a replay has all of it at once. :func:`replay` sends the first
``lead_s`` seconds of audio at once (the first packet with no wait, so first audio is the
cache lookup plus one send) and then keeps the listener ``lead_s`` ahead of real time: packet
``i`` starting ``t_i`` seconds into the audio leaves no earlier than ``t_i - lead_s`` after the
first. A client therefore never starves, events such as ``segment`` and ``words`` arrive about
as far ahead of their audio as live, and a ``cancel`` stops a replay that has not sent the
whole reply yet. ``lead_s=None`` sends everything as fast as the consumer takes it (HTTP).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from emostream.stream.phrases.record import Phrase
from emostream.stream.streamer import Event, Packet, UtteranceStats


def send_delay(
    audio_before_s: float, *, first_sent_at: float | None, now: float, lead_s: float | None
) -> float:
    """Seconds to wait before sending a packet that starts ``audio_before_s`` into the audio
    (0: now). The first packet and unpaced replays never wait."""
    if lead_s is None or first_sent_at is None:
        return 0.0
    return max(0.0, first_sent_at + audio_before_s - lead_s - now)


async def replay(
    phrase: Phrase,
    *,
    sample_rate: int,
    stats: UtteranceStats,
    lead_s: float | None,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncIterator[Packet | Event]:
    """Yield ``phrase``'s items in order, filling ``stats`` as the live path would (no model
    compute: ``compute_s`` stays 0) and marking it ``cached``."""
    stats.cached = True
    stats.segments = phrase.segments
    before = 0  # samples in the packets already sent
    for item in phrase.items():
        if isinstance(item, Packet):
            wait = send_delay(
                before / sample_rate, first_sent_at=stats.first_audio_at, now=clock(),
                lead_s=lead_s,
            )  # fmt: skip
            if wait > 0:
                await sleep(wait)
            if stats.first_audio_at is None:
                stats.first_audio_at = clock()
            before += item.samples
            stats.audio_samples = before
        yield item
