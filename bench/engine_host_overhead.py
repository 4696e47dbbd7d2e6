"""Host cost of the engine loop per batch and per item, with stages that cost nothing.

The engine process (emostream.engine.core.EngineCore) runs one thread: what it
spends around the device call (taking calls off the sockets, scheduling, padding, slicing,
slot writes, answers) is time the device waits, since the loop runs one synchronous batch
at a time. This measures that host work on this machine, in one process, with no device:

* ``intake``: decoding and queueing one ``Call`` message (a decode window in a slot);
* ``step``: one scheduled batch of B decode windows (76 frames, the 96-frame bucket of a
  48-frame chunk with 14 frames of context each side; the fake backend copies the mel into
  a staging buffer and returns a fresh fp16 ``[B, 96 * 256]``, as the CUDA-graph backend's
  host side does), then slicing, slot writes and ``done`` answers over real Unix sockets;
  with N streams queued (the schedule's sort grows with N);
* ``acoustic``: one batch of B acoustic calls (a pickled request in, an ``[80, 300]`` mel
  out through the slot, units inline);
* ``cancel``: one stream's cancel with N streams live; ``publish``: one load snapshot.

    PYTHONPATH=server .venv/bin/python bench/engine_host_overhead.py -o /tmp/host.json

Figures are microseconds (median of repeats). The machine's other load shows in them:
run it on an idle host for final figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import sys
import time
from typing import Any

import numpy as np

from emostream.engine.channel import SlotArena, encode
from emostream.engine.core import EngineCore, _Client
from emostream.engine.messages import Call, Hello, pickled
from emostream.voices.base import BatchedStage, Latent

HOP = 256
MELS = 80


class FakeVocoder:
    """The host side of the CUDA-graph backend, no device: mel -> staging, fresh fp16 out."""

    def __init__(self) -> None:
        self.staging: dict[tuple[int, ...], np.ndarray] = {}
        self.out: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, mel: np.ndarray) -> np.ndarray:
        b, _, frames = mel.shape
        host_in = self.staging.get(mel.shape)
        if host_in is None:
            host_in = self.staging[mel.shape] = np.empty(mel.shape, np.float32)
            self.out[(b, frames)] = np.zeros((b, frames * HOP), np.float16)
        host_in[...] = mel
        return self.out[(b, frames)].copy()


def fake_acoustic(requests: list[Any]) -> list[Latent]:
    return [
        Latent(np.zeros((MELS, 300), np.float32), np.full(30, 10, np.int64), ["a"] * 30)
        for _ in requests
    ]


DECODE = BatchedStage("vocoder", "decode", FakeVocoder(), (1, 2, 4, 8, 12, 16, 20, 24, 28, 32),
                      (32, 64, 96), -11.5)  # fmt: skip
ACOUSTIC = BatchedStage("acoustic", "acoustic", fake_acoustic, (1, 2, 4, 8, 16, 32),
                        size=lambda r: 40)  # fmt: skip


class Harness:
    def __init__(self, clients: int = 8, slots: int = 128) -> None:
        self.core = EngineCore({DECODE.key: DECODE, ACOUSTIC.key: ACOUSTIC}, stats_interval_s=0)
        self.pairs: list[tuple[socket.socket, _Client, SlotArena]] = []
        for cid in range(clients):
            mine, theirs = socket.socketpair()
            theirs.setblocking(True)
            mine.setblocking(False)
            arena = SlotArena(slots, 128 << 10)
            client = _Client(theirs, cid + 1)
            self.core.clients[cid + 1] = client
            self.core.handle(client, Hello(arena.name, 128 << 10, slots))
            # Touch every slot on both sides: the front ends reuse their slots, so the pages
            # are mapped after a warm-up (a first touch costs ~50 us per 76 KiB).
            zeros = np.zeros(MELS * 96 * HOP // MELS, np.float32)
            for slot in range(slots):
                arena.write(slot, zeros)
                assert client.arena is not None
                client.arena.write(slot, zeros)
            self.pairs.append((mine, client, arena))
        self.drain()
        self.rid = 0
        self.window = np.random.default_rng(0).standard_normal((MELS, 76)).astype(np.float32)

    def drain(self) -> None:
        for mine, _, _ in self.pairs:
            try:
                while mine.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass

    def decode_msgs(self, n: int, stream: str) -> list[tuple[_Client, bytes]]:
        """``n`` encoded decode calls, one per stream ``{stream}{i}``, spread over clients."""
        out = []
        for i in range(n):
            _, client, arena = self.pairs[i % len(self.pairs)]
            self.rid += 1
            slot = self.rid % arena.slots
            spec = arena.write(slot, self.window)
            msg = Call(self.rid, DECODE.key, f"{stream}{i}", time.monotonic() + 0.3, 76, slot,
                       spec, None, "right")  # fmt: skip
            out.append((client, encode(msg)))
        return out

    def acoustic_msgs(self, n: int) -> list[tuple[_Client, bytes]]:
        request = {"units": list(range(40)), "speaker": np.zeros(256, np.float32),
                   "emotion": 0, "intensity": 1.0, "prosody": (1.0, 1.0, 1.0)}  # fmt: skip
        out = []
        for i in range(n):
            _, client, arena = self.pairs[i % len(self.pairs)]
            self.rid += 1
            msg = Call(self.rid, ACOUSTIC.key, "", time.monotonic(), 40, self.rid % arena.slots,
                       None, pickled(request), None)  # fmt: skip
            out.append((client, encode(msg)))
        return out

    def intake(self, msgs: list[tuple[_Client, bytes]]) -> float:
        t0 = time.perf_counter()
        for client, data in msgs:
            for msg in client.decoder.feed(data):
                self.core.handle(client, msg)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.core.close()
        for mine, _, arena in self.pairs:
            mine.close()
            arena.close()

    def reset(self) -> None:
        """Forget every stream (cancel, untimed)."""
        sc = self.core.scheduler
        for stream in list(sc._last_seen) + list(sc.streams()):
            for item in sc.cancel(stream):
                self.core._calls.pop(item.rid, None)

    def steps(self) -> list[tuple[int, float]]:
        """Run every queued batch: (items, seconds) per step (answers drained untimed)."""
        out = []
        core = self.core
        while core.scheduler.queued:
            before = core.stats.total_items
            t0 = time.perf_counter()
            core.step()
            took = time.perf_counter() - t0
            out.append((core.stats.total_items - before, took))
            self.drain()
        return out


def median_us(xs: list[float]) -> float:
    return round(1e6 * statistics.median(xs), 1)


def measure(repeats: int) -> dict[str, Any]:
    h = Harness()
    res: dict[str, Any] = {}
    # warm-up: every shape once
    for _ in range(3):
        h.intake(h.decode_msgs(64, "w"))
        h.steps()
        h.intake(h.acoustic_msgs(40))
        h.steps()
    h.reset()

    # Intake per call message.
    per = []
    for r in range(repeats):
        msgs = h.decode_msgs(256, f"i{r}-")
        per.append(h.intake(msgs) / len(msgs))
        h.steps()
        h.reset()
    res["intake_decode_call_us"] = median_us(per)
    per = []
    for r in range(repeats):
        msgs = h.acoustic_msgs(64)
        per.append(h.intake(msgs) / len(msgs))
        h.steps()
    res["intake_acoustic_call_us"] = median_us(per)

    # Steps: B decode windows queued (B streams), one step; then N queued, every full step
    # (32 rows) while they drain.
    steps: dict[str, Any] = {}
    for batch in (1, 2, 4, 8, 16, 32):
        xs = []
        for r in range(repeats):
            h.intake(h.decode_msgs(batch, f"b{batch}r{r}-"))
            xs += [took for items, took in h.steps() if items == batch]
            h.reset()
        steps[f"b{batch}"] = {"us": median_us(xs), "us_per_item": round(median_us(xs) / batch, 1)}
    for queued in (250, 1000):
        xs = []
        for r in range(max(1, repeats // 4)):
            h.intake(h.decode_msgs(queued, f"n{queued}r{r}-"))
            xs += [took for items, took in h.steps() if items == 32]
            h.reset()
        steps[f"b32_queue{queued}"] = {
            "us": median_us(xs),
            "us_per_item": round(median_us(xs) / 32, 1),
        }
    res["decode_step"] = steps
    ac = []
    for _ in range(repeats):
        h.intake(h.acoustic_msgs(32))
        ac += [took for items, took in h.steps() if items == 32]
    res["acoustic_step_b32_us"] = median_us(ac) if ac else None

    # Schedule alone with N streams queued (sorting every stream queue of the stage).
    sched = {}
    for queued in (32, 250, 1000):
        h.intake(h.decode_msgs(queued, f"s{queued}-"))
        xs = []
        sc = h.core.scheduler
        for _ in range(repeats):
            t0 = time.perf_counter()
            plan = sc.schedule(time.monotonic())
            xs.append(time.perf_counter() - t0)
            assert plan is not None
            # put the items back (complete them) so the queue stays at N
            sc.complete(plan, time.monotonic())
            for item in plan.items:
                call = h.core._calls.pop(item.rid)
                h.core.handle(call.client, Call(item.rid + 10_000_000, DECODE.key,
                                                f"again{item.rid}", time.monotonic() + 0.3, 76,
                                                call.slot, call.spec, None, "right"))  # fmt: skip
        sched[f"queue{queued}"] = median_us(xs)
        h.steps()
        h.reset()
    res["schedule_us"] = sched

    # Cancel and publish with N live streams.
    for live in (250, 1000):
        h.intake(h.decode_msgs(live, f"live{live}-"))
        h.steps()  # delivered; the streams stay live until cancelled
        sc = h.core.scheduler
        streams = [s for s in sc._last_seen if str(s[1]).startswith(f"live{live}-")]  # type: ignore[index]
        t0 = time.perf_counter()
        for s in streams:
            sc.cancel(s)
        res[f"cancel_us_live{live}"] = round(1e6 * (time.perf_counter() - t0) / len(streams), 1)
        h.reset()
    for live in (250, 1000):
        h.intake(h.decode_msgs(live, f"pub{live}-"))
        h.steps()
        xs = []
        for _ in range(repeats * 10):
            t0 = time.perf_counter()
            h.core.status.publish(h.core.scheduler.load(time.monotonic()))
            xs.append(time.perf_counter() - t0)
        res[f"publish_us_live{live}"] = median_us(xs)
        h.reset()
    h.close()
    return res


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("-o", "--out", default="")
    args = p.parse_args()
    figures = measure(args.repeats)
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "python": sys.version.split()[0],
            "load_avg": os.getloadavg(),
        },
        "command": " ".join(sys.argv),
        "what": __doc__.split("\n\n")[0] if __doc__ else "",
        "figures": figures,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
