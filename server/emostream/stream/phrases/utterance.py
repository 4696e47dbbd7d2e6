"""One utterance through the phrase cache: replay a cached reply, or speak it live and keep it.

A whole-utterance key needs every segment, and a client's ``end`` usually comes right after
its text (a canned reply, a chat line), but the live path must not wait for it. So on the
first segment the cache is asked whether any phrase *starts* that way (the prefix index, no
model work). If none does, the utterance goes live at once: a miss costs nothing. If one does,
the segment is held while the input keeps matching a cached prefix, for at most ``hold_s``
from the first segment, until the input ends; then the whole key is looked up and a hit is
replayed (:mod:`emostream.stream.phrases.replay`). Anything else goes live with the held
segments first. A live utterance is recorded and stored only when it ran to its end (not
cancelled, not failed, within the entry bound).

:func:`hold_decision` is the rule, without I/O; :func:`cached_utterance` the asyncio layer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal

from emostream.stream.phrases.cache import PhraseCache
from emostream.stream.phrases.key import KeyChain
from emostream.stream.phrases.record import PhraseRecorder
from emostream.stream.phrases.replay import replay
from emostream.stream.streamer import Event, Packet, UtteranceStats

Decision = Literal["live", "lookup", "wait"]
Live = Callable[[AsyncIterator[str]], AsyncIterator[Packet | Event]]


def hold_decision(*, ended: bool, prefix_cached: bool, hold_left_s: float) -> Decision:
    """What to do with the segments held so far: ``lookup`` the whole key (the input ended),
    ``wait`` for more input (a cached phrase starts this way and there is hold time left), or
    go ``live``."""
    if ended:
        return "lookup"
    if prefix_cached and hold_left_s > 0:
        return "wait"
    return "live"


async def _next(it: AsyncIterator[str]) -> tuple[str] | None:
    try:
        return (await anext(it),)
    except StopAsyncIteration:
        return None


async def cached_utterance(
    segments: AsyncIterator[str],
    *,
    live: Live,
    cache: PhraseCache,
    params: bytes,
    stats: UtteranceStats,
    sample_rate: int,
    hold_s: float = 0.02,
    lead_s: float | None = 1.0,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    voice_of: Callable[[str], str] | None = None,
) -> AsyncIterator[Packet | Event]:
    """The utterance's items: a cached phrase replayed, or ``live(segments)`` recorded.

    ``params``: :func:`~emostream.stream.phrases.key.phrase_params` of the request;
    ``voice_of``: with a voice per language, a segment's voice identity (folded into the key
    with it: :meth:`~emostream.stream.phrases.key.KeyChain.add`);
    ``hold_s``: the longest a segment waits for the input's end when a cached phrase starts
    like it; ``lead_s``: replay pacing (:func:`~emostream.stream.phrases.replay.replay`)."""
    it = aiter(segments)
    first = await _next(it)
    if first is None:
        return
    stats.started_at = clock()
    chain = KeyChain(params)

    def link(segment: str) -> None:
        chain.add(segment, voice_of(segment) if voice_of is not None else "")

    link(first[0])
    held = [first[0]]
    ended = False
    pending: asyncio.Task[tuple[str] | None] | None = None
    completed = False
    try:
        while True:
            left = stats.started_at + hold_s - clock()
            prefix_cached = not ended and await cache.has_prefix(chain.prefix)
            decision = hold_decision(ended=ended, prefix_cached=prefix_cached, hold_left_s=left)
            if decision == "lookup":
                phrase = await cache.get(chain.key())
                if phrase is not None:
                    async for item in replay(
                        phrase, sample_rate=sample_rate, stats=stats, lead_s=lead_s,
                        clock=clock, sleep=sleep,
                    ):  # fmt: skip
                        yield item
                    completed = True
                    return
                break
            if decision == "live":
                break
            if pending is None:
                pending = asyncio.ensure_future(_next(it))
            done, _ = await asyncio.wait({pending}, timeout=left)
            if not done:
                break  # the hold ran out: go live with what is held, the pending one next
            got, pending = pending.result(), None
            if got is None:
                ended = True
            else:
                link(got[0])
                held.append(got[0])

        async def feed() -> AsyncIterator[str]:
            nonlocal pending
            for text in held:
                yield text
            if ended:
                return
            if pending is not None:
                got, pending = await pending, None
                if got is None:
                    return
                link(got[0])
                yield got[0]
            async for text in it:
                link(text)
                yield text

        recorder = PhraseRecorder(max_bytes=cache.max_entry_bytes)
        stream = live(feed())
        try:
            async for item in stream:
                recorder.add(item)
                yield item
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        completed = True
        phrase = None if stats.truncated else recorder.finish()  # (cut at the audio cap)
        if phrase is not None:
            cache.put(chain.key(), phrase, chain.prefixes)
        elif recorder.overflowed or stats.truncated:
            cache.not_stored("too_large")
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
        if not completed:
            cache.not_stored("incomplete")
