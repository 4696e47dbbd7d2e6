"""The ``danmaku`` pattern's asyncio layer: rooms, each one connection, receiving bursts of
``line`` messages; the bookkeeping is :mod:`loadtest.danmaku`'s.

Each room first speaks every repeated phrase once and one fresh line (unmeasured: the model
warms up and the phrases enter the server's phrase cache) and waits until a listener would have
heard them out, then sends a burst of ``burst_size``
lines every ``interval_s`` for ``duration_s`` (the rooms' bursts staggered evenly over one
interval), and finally waits until every line has an outcome, at most the TTL plus
``drain_s`` after its last burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from loadtest.client import ClientConfig, LevelResult, _loop_lag, connect
from loadtest.danmaku import REPEATED, LineRecord, RoomLedger, make_lines
from loadtest.report import UtteranceRecord
from loadtest.stats import Histogram

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DanmakuConfig:
    rooms: int = 1
    burst_size: int = 40
    interval_s: float = 5.0
    duration_s: float = 30.0
    spread_s: float = 0.0  # each line of a burst at a random offset within this
    ttl_ms: float = 8000.0
    repeat_fraction: float = 0.5
    priority_fraction: float = 0.1  # lines sent with priority 1 (gifts, members)
    drain_s: float = 30.0
    seed: int = 0


@dataclass
class DanmakuResult:
    level: LevelResult
    ledgers: list[RoomLedger]


def _now_ms() -> float:
    return time.perf_counter() * 1000.0


def _fields(cfg: ClientConfig) -> dict[str, Any]:
    fields: dict[str, Any] = {"format": {"codec": cfg.codec, "sample_rate": cfg.sample_rate}}
    if cfg.voice:
        fields["voice"] = cfg.voice
    return fields


async def _receive(ws: Any, ledger: RoomLedger) -> None:
    async for msg in ws:
        now = _now_ms()
        if isinstance(msg, bytes):
            ledger.packet(now)
        else:
            ledger.event(json.loads(msg), now)


async def _warm(ws: Any, cfg: ClientConfig, room: int) -> None:
    """Every repeated phrase once and one fresh line, each to its ``done``, then until a
    listener would have heard their audio out (unmeasured: the server paces lines against
    that listener, so the bursts start from an idle one)."""
    fields = _fields(cfg)
    texts = [*REPEATED, f"Room {room} is warming up, hello everyone."]
    for k, text in enumerate(texts):
        await ws.send(json.dumps({**fields, "type": "line", "id": f"w{room}-{k}", "text": text,
                                  "ttl_ms": 600_000}))  # fmt: skip
    left = {f"w{room}-{k}" for k in range(len(texts))}
    frame_s, heard_out = 0.020, 0.0
    async with asyncio.timeout(cfg.utterance_timeout_s * len(texts)):
        while left:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                heard_out = max(heard_out, time.perf_counter()) + frame_s
                continue
            ev = json.loads(msg)
            if ev.get("type") == "started":
                frame_s = float(ev.get("frame_ms", 20.0)) / 1000.0
            if ev.get("type") in ("done", "line_dropped", "error") and ev.get("id") in left:
                left.discard(ev["id"])
    await asyncio.sleep(max(0.0, heard_out - time.perf_counter()))


async def _room(
    room: int, ws: Any, cfg: ClientConfig, dm: DanmakuConfig, t0: float, ledger: RoomLedger
) -> None:
    rng = random.Random(dm.seed * 1000 + room)
    fields = _fields(cfg)
    receiver = asyncio.create_task(_receive(ws, ledger))
    offset = dm.interval_s * room / max(1, dm.rooms)
    sent = 0
    burst = 0
    try:
        while burst * dm.interval_s < dm.duration_s:
            base = t0 + offset + burst * dm.interval_s
            lines = make_lines(rng, dm.burst_size, first=sent, repeat_fraction=dm.repeat_fraction)
            at = sorted(base + (rng.uniform(0, dm.spread_s) if dm.spread_s else 0.0)
                        for _ in lines)  # fmt: skip
            for (text, repeated), when in zip(lines, at, strict=True):
                delay = when - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                priority = 1 if rng.random() < dm.priority_fraction else 0
                rec = LineRecord(id=f"r{room}-{sent}", room=room, text=text, repeated=repeated,
                                 priority=priority, ttl_ms=dm.ttl_ms,
                                 sent_ms=_now_ms())  # fmt: skip
                ledger.sent(rec)
                await ws.send(json.dumps({**fields, "type": "line", "id": rec.id, "text": text,
                                          "priority": priority, "ttl_ms": dm.ttl_ms}))  # fmt: skip
                sent += 1
            burst += 1
        deadline = time.perf_counter() + dm.ttl_ms / 1000.0 + dm.drain_s
        while not ledger.settled and time.perf_counter() < deadline and not receiver.done():
            await asyncio.sleep(0.05)
        if not ledger.settled:
            log.warning("room %d: %d lines without an outcome at the end",
                        room, sum(1 for r in ledger.lines.values()
                                  if r.outcome in ("unreported", "speaking")))  # fmt: skip
    finally:
        receiver.cancel()
        with contextlib.suppress(BaseException):
            await receiver


def _utterance(rec: LineRecord) -> UtteranceRecord:
    """A spoken or refused line as the common report's utterance record."""
    u = UtteranceRecord(stream=rec.room, text_chars=len(rec.text), error=rec.error)
    if rec.outcome == "cancelled":
        u.error = "cancelled"
    u.first_audio_ms = rec.first_audio_ms
    if rec.done_ms is not None and rec.started_ms is not None:
        u.request_to_done_ms = rec.done_ms - rec.started_ms
    if rec.last_packet_ms is not None and rec.started_ms is not None:
        u.delivery_ms = rec.last_packet_ms - rec.started_ms
    u.packets = rec.packets
    u.audio_ms = rec.packets * 20.0
    u.underruns, u.underrun_ms = rec.underruns, rec.underrun_ms
    u.server_first_audio_ms = rec.server_first_audio_ms
    u.server_audio_ms = rec.server_audio_ms
    u.gaps, u.jitter = rec.gaps, rec.jitter
    return u


async def run_danmaku(cfg: ClientConfig, dm: DanmakuConfig) -> DanmakuResult:
    """Run every room; the records of spoken (and refused) lines, and each room's ledger."""
    lag = Histogram()
    stop = asyncio.Event()
    lag_task = asyncio.create_task(_loop_lag(lag, stop))
    conns: list[Any] = []
    failures = 0
    try:
        for room in range(dm.rooms):
            try:
                ws = await connect(cfg)
            except Exception as exc:  # noqa: BLE001 (any connect failure)
                log.warning("room %d: connect failed: %s", room, exc)
                failures += 1
                continue
            conns.append(ws)
        await asyncio.gather(*(_warm(ws, cfg, i) for i, ws in enumerate(conns)))
        ledgers = [RoomLedger(i, jitter_buffer_ms=cfg.jitter_buffer_ms) for i in range(len(conns))]
        t0 = time.perf_counter() + 0.1
        await asyncio.gather(*(_room(i, ws, cfg, dm, t0, ledgers[i]) for i, ws in enumerate(conns)))
        wall = time.perf_counter() - t0
    finally:
        stop.set()
        await lag_task
        await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    records = [
        _utterance(r)
        for led in ledgers
        for r in led.lines.values()
        if r.outcome in ("spoken", "cancelled", "refused")
    ]
    level = LevelResult(records, wall, lag, connect_failures=failures, peak_inflight=len(conns))
    return DanmakuResult(level, ledgers)
