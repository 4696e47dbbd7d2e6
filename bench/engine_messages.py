"""Cost of one engine channel message on the front end's and the engine's CPU: build it,
encode it (:func:`emostream.engine.channel.encode`: MessagePack, length-prefixed), decode it
(:class:`~emostream.engine.channel.FrameDecoder`) and unpickle its ``inline`` value where it
has one (an acoustic request; an acoustic answer's units). No socket: the per-message codec
work that 1,000 streams' calls put on the engine loop and the front ends.

    PYTHONPATH=server .venv/bin/python bench/engine_messages.py --rounds 20

Figures: microseconds of this thread's CPU time per message (``time.thread_time``: time the
thread was descheduled by other load does not count), the best and the median of
``--rounds`` rounds of 20,000 round trips (2,000 for the acoustic ones), and the encoded size
in bytes. 2026-12-07, a loaded 2-core host: decode call 1.21 us (tuple + pickle before: 1.83),
its done 0.96 (1.33), cancel 0.78 (1.21); acoustic call 18.8 (18.3), done 11.0 (11.3).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from emostream.engine.channel import FrameDecoder, encode
from emostream.engine.messages import (
    Call,
    Cancel,
    Done,
    Message,
    ToClient,
    ToEngine,
    pickled,
    unpickled,
)


@dataclass
class Request:  # shaped like voices.acoustic.AcousticRequest: units, a 256-d speaker, controls
    units: list[str]
    speaker: np.ndarray
    emotion: int
    intensity: float
    prosody: tuple[float, float, float]


REQUEST = Request([f"u{i}" for i in range(40)], np.zeros(256, np.float32), 0, 1.0, (1.0,) * 3)
UNITS = (np.full(30, 10, np.int64), ["a"] * 30)  # what an acoustic answer's slot leaves out
VOCODER, ACOUSTIC, STREAM = "emostream-lite-vocoder-v0.2", "emostream-fs2-v0.4", "stream-0001"

MESSAGES: dict[str, tuple[Any, Callable[[], Message]]] = {
    # a vocoder window in slot 17, its audio back in the slot (the hot path)
    "decode_call": (ToEngine, lambda: Call(123456, VOCODER, STREAM, 12345.678, 76, 17,
                                           ((80, 76), "<f4"), None, "right", 12345.9)),
    "decode_done": (ToClient, lambda: Done(123456, ((19456,), "<f2"), None)),
    # an acoustic request inline (pickled), its mel back in the slot, units inline
    "acoustic_call": (ToEngine, lambda: Call(123457, ACOUSTIC, "", 12345.678, 40, 18, None,
                                             pickled(REQUEST), None, 12346.0)),
    "acoustic_done": (ToClient, lambda: Done(123457, ((80, 300), "<f4"), pickled(UNITS))),
    "cancel": (ToEngine, lambda: Cancel(STREAM)),
}  # fmt: skip


def round_trip(kinds: Any, make: Callable[[], Message]) -> Callable[[], Any]:
    decoder = FrameDecoder(kinds)

    def once() -> Any:
        (msg,) = decoder.feed(encode(make()))
        inline = getattr(msg, "inline", None)
        return unpickled(inline) if inline is not None else msg

    return once


def cpu_us(once: Callable[[], Any], number: int) -> float:
    t0 = time.thread_time_ns()
    for _ in range(number):
        once()
    return (time.thread_time_ns() - t0) / number / 1e3


def measure(rounds: int) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {name: [] for name in MESSAGES}
    for _ in range(rounds):
        for name, (kinds, make) in MESSAGES.items():
            number = 2_000 if name.startswith("acoustic") else 20_000
            times[name].append(cpu_us(round_trip(kinds, make), number))
    return {name: {"us_min": round(min(xs), 3), "us_median": round(statistics.median(xs), 3),
                   "bytes": len(encode(MESSAGES[name][1]()))}
            for name, xs in times.items()}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    print(json.dumps(measure(args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
