"""The asyncio layer: WebSocket streams that behave like listeners.

Everything measured here is on the client clock (``time.perf_counter``). The sans-I/O
pieces do the accounting: :class:`~loadtest.playback.PlaybackClock` per utterance,
:mod:`loadtest.schedule` for arrivals and token timing. Every loop is bounded: by a
deadline, a count, and a per-utterance timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from loadtest.playback import PlaybackClock
from loadtest.report import UtteranceRecord
from loadtest.schedule import Arrival, token_times
from loadtest.stats import Histogram
from loadtest.texts import REPLIES, SHORT_REPLIES, pick, tokenize

log = logging.getLogger(__name__)

Feed = Literal["whole", "tokens"]
Pace = Literal["playback", "done"]
MAX_PACKETS = 50 * 600  # 10 minutes of 20 ms packets per utterance, at most
# Errors a server older than 2026-12-07 sent for the text and end that followed a refused
# start (busy); one that arrives before the next start's answer belongs to that refused one.
_LEFTOVERS = frozenset({"not_started", "unknown_context"})


@dataclass(frozen=True)
class ClientConfig:
    """How each simulated listener talks to the server.

    feed: ``whole`` (one ``text`` message) or ``tokens`` (one message per token at
        ``tokens_per_s``, default 30, about an LLM's streaming speed).
    pace: ``playback`` (closed loop: a stream's next utterance starts when the previous
        one has finished *playing*, plus ``think_ms``) or ``done`` (as soon as ``done``).
    phrase_cache: the replies repeat, so every ``start`` asks for ``cache: false`` (live
        synthesis, what a load test is for) unless this is on.
    error_backoff_ms: closed loop: after an utterance that failed (e.g. ``busy``, refused
        by admission), wait this long before the next one (0: at once, which makes a
        refused stream retry in a tight loop).
    retry_after: closed loop: after a refusal that says ``retry_after_ms`` (``busy`` from a
        server of 2026-12-07 or later), wait at least that long before the next utterance.
    """

    url: str
    voice: str | None = None
    codec: str = "opus"
    sample_rate: int = 48000
    feed: Feed = "whole"
    tokens_per_s: float = 30.0
    jitter_buffer_ms: float = 60.0
    pace: Pace = "playback"
    think_ms: float = 0.0
    utterance_timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    phrase_cache: bool = False
    error_backoff_ms: float = 0.0
    retry_after: bool = True


def _now_ms() -> float:
    return time.perf_counter() * 1000.0


def first_segment_token(tokens: list[str]) -> int:
    """Index of the token after which the server's segmenter releases the first segment
    (``len(tokens)``: only at ``end``). Uses EmoStream's own :class:`Segmenter` when it
    can be imported, else assumes the whole text is needed."""
    try:
        from emostream.text.splitter import Segmenter
    except ImportError:  # pragma: no cover (the loadtest runs beside the server package)
        return len(tokens)
    seg = Segmenter()
    for i, tok in enumerate(tokens):
        if seg.feed(tok):
            return i
    return len(tokens)


async def connect(cfg: ClientConfig) -> Any:
    from websockets.asyncio.client import connect as ws_connect

    return await asyncio.wait_for(
        ws_connect(cfg.url, compression=None, max_size=None, open_timeout=cfg.connect_timeout_s),
        cfg.connect_timeout_s,
    )


async def run_utterance(ws: Any, text: str, *, stream: int, cfg: ClientConfig) -> UtteranceRecord:
    """Speak ``text`` on an open connection, acting as a listener; never raises for
    server or connection trouble (the record's ``error`` says what went wrong)."""
    from websockets.exceptions import ConnectionClosed

    rec = UtteranceRecord(stream=stream, text_chars=len(text))
    clock = PlaybackClock(jitter_buffer_ms=cfg.jitter_buffer_ms)
    tokens = [text] if cfg.feed == "whole" else tokenize(text)
    first_at = 0 if cfg.feed == "whole" else first_segment_token(tokens)
    ref: list[float] = []  # when the first segment was complete (client clock, ms)
    start: dict[str, Any] = {
        "type": "start",
        "format": {"codec": cfg.codec, "sample_rate": cfg.sample_rate},
    }
    if cfg.voice:
        start["voice"] = cfg.voice
    if not cfg.phrase_cache:
        start["cache"] = False

    async def send_text() -> None:
        t0 = time.perf_counter()
        for i, (tok, at) in enumerate(
            zip(tokens, token_times(tokens, tokens_per_s=cfg.tokens_per_s))
        ):
            delay = t0 + at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if i == first_at and cfg.feed == "tokens":
                ref.append(_now_ms())
            await ws.send(json.dumps({"type": "text", "text": tok}))
        if first_at >= len(tokens):
            ref.append(_now_ms())
        await ws.send(json.dumps({"type": "end"}))

    t_request = _now_ms()
    if cfg.feed == "whole":
        ref.append(t_request)
    sender: asyncio.Task[None] | None = None
    started = False
    try:
        async with asyncio.timeout(cfg.utterance_timeout_s):
            await ws.send(json.dumps(start))
            sender = asyncio.create_task(send_text())
            while clock.packets < MAX_PACKETS:
                msg = await ws.recv()
                now = _now_ms()
                if isinstance(msg, bytes):
                    clock.on_packet(now)
                    if rec.first_audio_ms is None and ref:
                        rec.first_audio_ms = now - ref[0]
                    continue
                event = json.loads(msg)
                kind = event.get("type")
                if kind == "started":
                    started = rec.started = True
                    clock.frame_ms = float(event.get("frame_ms", clock.frame_ms))
                elif kind == "error" and not started and event.get("code") in _LEFTOVERS:
                    continue  # a refused start's text and end, answered by an older server
                elif kind == "error":
                    rec.error = rec.error or str(event.get("code", "unknown"))
                    if not started:  # refused before it began (e.g. busy): no done follows
                        rec.refused_ms = now - t_request
                        wait = event.get("retry_after_ms")
                        if isinstance(wait, int | float) and not isinstance(wait, bool):
                            rec.retry_after_ms = float(wait)
                        break
                elif kind == "done":
                    rec.request_to_done_ms = now - t_request
                    rec.server_first_audio_ms = event.get("first_audio_ms")
                    rec.server_rtf = event.get("rtf")
                    rec.server_audio_ms = event.get("audio_ms")
                    rec.cached = bool(event.get("cached"))
                    break
            else:
                rec.error = rec.error or "too_much_audio"
        if sender is not None and not sender.done():
            sender.cancel()
        elif sender is not None:
            sender.result()
    except TimeoutError:
        rec.error = "timeout"
    except ConnectionClosed:
        rec.error = "connection_closed"
    except OSError:
        rec.error = "connection_error"
    finally:
        if sender is not None and not sender.done():
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
    if clock.packets == 0 and rec.error is None:
        rec.error = "no_audio"
    rec.packets = clock.packets
    rec.audio_ms = clock.audio_ms
    rec.underruns = clock.underruns
    rec.underrun_ms = clock.underrun_ms
    rec.rfc3550_jitter_ms = clock.rfc3550_jitter_ms
    rec.first_underrun_audio_ms = clock.first_underrun_audio_ms
    rec.gaps, rec.jitter = clock.gaps, clock.jitter
    if clock.last_arrival_ms is not None:
        rec.delivery_ms = clock.last_arrival_ms - t_request
    rec.playback_end_ms = clock.playback_end_ms
    return rec


async def _pace(rec: UtteranceRecord, cfg: ClientConfig, deadline: float) -> None:
    """Closed-loop pacing: wait until the listener has heard it all (+ think time); after a
    refusal, the error backoff and (``cfg.retry_after``) the server's ``retry_after_ms``."""
    until = time.perf_counter() + cfg.think_ms / 1000.0
    if rec.error and cfg.error_backoff_ms > 0:
        until = max(until, time.perf_counter() + cfg.error_backoff_ms / 1000.0)
    if rec.error and cfg.retry_after and rec.retry_after_ms:
        until = max(until, time.perf_counter() + rec.retry_after_ms / 1000.0)
    if cfg.pace == "playback" and rec.playback_end_ms is not None:
        until = max(until, rec.playback_end_ms / 1000.0 + cfg.think_ms / 1000.0)
    delay = min(until, deadline) - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


# -- closed loop: N streams -------------------------------------------------------------
@dataclass
class LevelResult:
    records: list[UtteranceRecord]
    wall_s: float
    loop_lag: Histogram  # this process's event-loop lag, ms
    connect_failures: int = 0
    peak_inflight: int = 0


async def _loop_lag(hist: Histogram, stop: asyncio.Event, period_s: float = 0.05) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(period_s)
        hist.add(max(0.0, (time.perf_counter() - t - period_s) * 1000.0))


async def run_steady(
    cfg: ClientConfig,
    *,
    streams: int,
    duration_s: float,
    first_stream: int = 0,
    warmup: int = 1,
    ramp_s: float = 3.0,
    max_utterances_per_stream: int = 10_000,
    start_at_wall: float | None = None,
    seed: int = 0,
    texts: tuple[str, ...] = REPLIES,
) -> LevelResult:
    """``streams`` connections, each speaking utterance after utterance for ``duration_s``
    (after ``warmup`` unmeasured utterances each, and a start staggered over ``ramp_s``)."""
    rng = random.Random(seed + first_stream)
    conns: dict[int, Any] = {}
    failures = 0

    async def open_and_warm(sid: int) -> None:
        nonlocal failures
        try:
            ws = await connect(cfg)
        except Exception as exc:  # noqa: BLE001 (any connect failure)
            log.warning("stream %d: connect failed: %s", sid, exc)
            failures += 1
            return
        conns[sid] = ws
        for w in range(warmup):
            await run_utterance(ws, pick(texts, sid + w), stream=sid, cfg=cfg)

    ids = list(range(first_stream, first_stream + streams))
    lag = Histogram()
    stop = asyncio.Event()
    lag_task = asyncio.create_task(_loop_lag(lag, stop))
    try:
        await asyncio.gather(*(open_and_warm(i) for i in ids))
        if start_at_wall is not None:
            await asyncio.sleep(max(0.0, start_at_wall - time.time()))
        t0 = time.perf_counter()
        deadline = t0 + duration_s
        offsets = {i: rng.uniform(0.0, ramp_s) for i in ids}

        async def loop(sid: int) -> list[UtteranceRecord]:
            ws = conns.get(sid)
            out: list[UtteranceRecord] = []
            if ws is None:
                return out
            await asyncio.sleep(offsets[sid])
            k = sid * 7
            while time.perf_counter() < deadline and len(out) < max_utterances_per_stream:
                started = time.perf_counter() - t0
                rec = await run_utterance(ws, pick(texts, k), stream=sid, cfg=cfg)
                rec.started_s = started
                out.append(rec)
                k += 1
                if rec.error in ("connection_closed", "connection_error"):
                    break
                await _pace(rec, cfg, deadline)
            return out

        results = await asyncio.gather(*(loop(i) for i in ids))
        wall = time.perf_counter() - t0
    finally:
        stop.set()
        await lag_task
        await asyncio.gather(*(ws.close() for ws in conns.values()), return_exceptions=True)
    records = [r for rs in results for r in rs]
    return LevelResult(records, wall, lag, connect_failures=failures, peak_inflight=len(conns))


# -- open loop: arrivals -------------------------------------------------------------------
async def run_open(
    cfg: ClientConfig,
    *,
    arrivals: list[Arrival],
    max_connections: int = 1024,
    texts: tuple[str, ...] = SHORT_REPLIES,
    warmup: int = 1,
) -> LevelResult:
    """Start one utterance at each arrival (open loop) on a pooled connection; an arrival
    finding ``max_connections`` busy is recorded as ``client_overflow``."""
    idle: list[Any] = []
    all_conns: list[Any] = []
    records: list[UtteranceRecord] = []
    inflight = 0
    opened = 0
    peak = 0
    failures = 0
    lag = Histogram()
    stop = asyncio.Event()
    lag_task = asyncio.create_task(_loop_lag(lag, stop))

    async def one(a: Arrival) -> None:
        nonlocal inflight, peak, failures, opened
        rec: UtteranceRecord
        if idle:
            ws = idle.pop()
        elif opened < max_connections:
            opened += 1  # reserve the slot before awaiting the handshake
            try:
                ws = await connect(cfg)
            except Exception as exc:  # noqa: BLE001 (any connect failure)
                log.warning("connect failed: %s", exc)
                opened -= 1
                failures += 1
                records.append(UtteranceRecord(stream=a.index, error="connect_failed"))
                return
            all_conns.append(ws)
        else:
            records.append(UtteranceRecord(stream=a.index, error="client_overflow"))
            return
        inflight += 1
        peak = max(peak, inflight)
        try:
            rec = await run_utterance(ws, pick(texts, a.index), stream=a.index, cfg=cfg)
        finally:
            inflight -= 1
        records.append(rec)
        if rec.error not in ("connection_closed", "connection_error", "timeout"):
            idle.append(ws)

    try:
        for w in range(warmup):
            ws = await connect(cfg)
            opened += 1
            all_conns.append(ws)
            await run_utterance(ws, pick(texts, w), stream=-1, cfg=cfg)
            idle.append(ws)
        t0 = time.perf_counter()
        tasks: list[asyncio.Task[None]] = []
        for a in arrivals:
            delay = t0 + a.at_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(a)))
        last = arrivals[-1].at_s if arrivals else 0.0
        bound = max(0.0, t0 + last - time.perf_counter()) + cfg.utterance_timeout_s + 5.0
        _done, pending = await asyncio.wait(tasks, timeout=bound) if tasks else (set(), set())
        for t in pending:
            t.cancel()
        wall = time.perf_counter() - t0
    finally:
        stop.set()
        await lag_task
        await asyncio.gather(*(ws.close() for ws in all_conns), return_exceptions=True)
    return LevelResult(records, wall, lag, connect_failures=failures, peak_inflight=peak)


def steady_worker(kwargs: dict[str, Any]) -> LevelResult:
    """Entry point for a load-generator process (``--procs`` > 1): one event loop each."""
    cfg = kwargs.pop("cfg")
    try:
        import uvloop

        runner: Callable[..., Any] = uvloop.run
    except ImportError:  # pragma: no cover
        runner = asyncio.run
    result: LevelResult = runner(run_steady(cfg, **kwargs))
    return result
