"""One graph pool for the engine's graphs: capture order, the report, and the invariant that
a call's results are off the graphs' static outputs before another replay (a fake device)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from emostream.engine.gpu.acoustic_graphs import GraphedAcoustic
from emostream.engine.gpu.graph_pool import GraphJob, GraphPool, largest_first
from emostream.networks.acoustic import AcousticModel
from emostream.voices.acoustic import AcousticVoice, infer_batch
from emostream.voices.base import Controls


class FakeGraph:
    """Replays ``fn`` eagerly into the static outputs it was captured with (what a CUDA
    graph does: same buffers every replay)."""

    def __init__(self, device: FakeDevice, fn: Callable[..., Any], inputs: tuple[Any, ...],
                 outputs: tuple[torch.Tensor, ...]) -> None:  # fmt: skip
        self.device, self.fn, self.inputs, self.outputs = device, fn, inputs, outputs

    def replay(self) -> None:
        self.device.events.append("replay")
        fresh = self.fn(*self.inputs)
        fresh = fresh if isinstance(fresh, tuple) else (fresh,)
        for static, value in zip(self.outputs, fresh, strict=True):
            static.copy_(value)


class FakeDevice:
    """A GraphDevice that records what it is asked; ``peaks`` by job shape; the pool grows by
    ``grow`` bytes per capture."""

    def __init__(self, peaks: dict[tuple[int, ...], int] | None = None, grow: int = 100) -> None:
        self.peaks = peaks or {}
        self.grow = grow
        self.events: list[str] = []
        self.pools = 0
        self.held = 0

    def new_pool(self) -> Any:
        self.pools += 1
        return (0, self.pools)

    def warm_up(self, fn: Callable[..., Any], inputs: tuple[Any, ...], runs: int) -> int:
        self.events.append("warm")
        for _ in range(runs):
            fn(*inputs)
        shape = (
            tuple(int(x) for x in inputs[0].shape[:2])
            if inputs and hasattr(inputs[0], "shape")
            else ()
        )
        return self.peaks.get(shape, 0)

    def capture(
        self, fn: Callable[..., Any], inputs: tuple[Any, ...], pool: Any
    ) -> tuple[Any, Any]:
        self.events.append("capture")
        self.held += self.grow
        out = fn(*inputs)
        outputs = tuple(t.clone() for t in (out if isinstance(out, tuple) else (out,)))
        return FakeGraph(self, fn, inputs, outputs), outputs

    def pool_bytes(self, pool: Any) -> int:
        return self.held

    def memory(self) -> dict[str, int]:
        return {"allocated": 1, "peak": 2, "reserved": 3, "device_used": 4}

    def release_cache(self) -> None:
        self.events.append("release")


def _job(part: str, shape: tuple[int, ...], log: list[str]) -> GraphJob:
    def keep(graph: Any, outputs: tuple[Any, ...]) -> None:
        log.append(f"{part}{shape}")

    return GraphJob(part, shape, lambda x: x * 2, (torch.zeros(shape),), keep)


def test_largest_first_is_stable() -> None:
    jobs = [_job("a", (1, 1), []), _job("b", (2, 2), []), _job("c", (3, 3), [])]
    jobs[0].peak_bytes, jobs[1].peak_bytes, jobs[2].peak_bytes = 5, 9, 5
    assert [j.part for j in largest_first(jobs)] == ["b", "a", "c"]


def test_capture_all_warms_everything_then_captures_largest_first_across_parts() -> None:
    # The acoustic decode graph's peak can exceed the vocoder's (attention is frames^2): the
    # order follows the measured peaks, not the model.
    device = FakeDevice(peaks={(32, 96): 300, (1, 32): 10, (8, 2048): 800, (1, 128): 20})
    pool = GraphPool(device)
    kept: list[str] = []
    jobs = [_job("vocoder", (1, 32), kept), _job("vocoder", (32, 96), kept),
            _job("acoustic decode", (1, 128), kept), _job("acoustic decode", (8, 2048), kept)]  # fmt: skip
    report = pool.capture_all(jobs)
    assert device.events == ["warm"] * 4 + ["capture"] * 4 + ["release"]
    assert kept == ["acoustic decode(8, 2048)", "vocoder(32, 96)", "acoustic decode(1, 128)",
                    "vocoder(1, 32)"]  # fmt: skip
    assert report.order[0] == "acoustic decode 8x2048"
    assert pool.captured == 4 and device.pools == 1  # one pool for every part
    assert report.parts["vocoder"].graphs == 2 and report.parts["vocoder"].warm_up_peak_max == 300
    assert report.parts["acoustic decode"].pool_added == 200
    assert report.pool_bytes == 400
    d = report.as_dict()
    assert d["parts"]["vocoder"]["graphs"] == 2 and d["reserved_mib"] == 0.0


def test_acoustic_results_survive_the_next_replay(voice: AcousticVoice) -> None:
    """Through a pool (fake device: graphs replay into fixed static outputs), results equal the
    eager batch, and a call's results are not changed by the next call's replays (they were
    copied off the static outputs before the call returned)."""
    device = FakeDevice()
    assert isinstance(voice.model, AcousticModel)
    g = GraphedAcoustic(voice.model, device="cpu", pool=GraphPool(device), batches=(1, 2),
                        units=(32, 64), frames=(128, 256, 512))  # fmt: skip
    g.capture_all()
    captures = device.events.count("capture")
    assert captures == len(g.shapes()[0]) + len(g.shapes()[1])
    first = voice.prepare("A longer sentence, with a pause in it.", Controls())
    other = voice.prepare("Good morning, everyone, how are you?", Controls(speed=0.8))
    (a,) = g([first])
    kept = a.frames.copy(), a.unit_frames.copy()
    (b,) = g([other])  # same buckets: the same graphs replay into the same outputs
    assert device.events.count("capture") == captures  # nothing captured late
    assert device.events.count("replay") == 4
    np.testing.assert_array_equal(a.frames, kept[0])
    np.testing.assert_array_equal(a.unit_frames, kept[1])
    for got, req in ((a, first), (b, other)):
        (want,) = infer_batch(voice.model, [req])
        np.testing.assert_array_equal(got.unit_frames, want.unit_frames)
        np.testing.assert_allclose(got.frames, want.frames, atol=1e-4)


def test_engine_delivers_each_batch_before_the_next_stage_call() -> None:
    """The engine side of the invariant: every stage returns views of ONE buffer that its
    next call rewrites (as graphs sharing a pool may), yet each call gets its own result:
    EngineCore writes a batch's results into the slots before it runs the next batch."""
    import socket

    from emostream.engine.channel import FrameDecoder, SlotArena
    from emostream.engine.core import EngineCore, _Client
    from emostream.engine.messages import Call, Done, Hello, ToClient, pickled, unpickled
    from emostream.voices.base import BatchedStage

    shared = np.zeros((2, 96 * 4), np.float16)  # the "static output" both stages write

    def decode(mel: np.ndarray) -> np.ndarray:
        shared[: mel.shape[0]] = mel[:, 0, :1]  # each row: its window's first value
        return shared[: mel.shape[0], : mel.shape[2] * 4]

    def acoustic(requests: list[Any]) -> list[Any]:
        shared[:] = -1.0  # another stage's call rewrites the same memory
        return [float(r) for r in requests]

    stages = {"dec": BatchedStage("dec", "decode", decode, (1, 2), (32, 96)),
              "ac": BatchedStage("ac", "acoustic", acoustic, (1, 2), size=lambda r: 1)}  # fmt: skip
    core = EngineCore(stages)
    mine, theirs = socket.socketpair()
    arena = SlotArena(4, 16384)
    client = _Client(theirs, 1)
    core.clients[1] = client
    try:
        core.handle(client, Hello(arena.name, 16384, 4))
        specs = {}
        for rid, value in ((1, 3.0), (2, 5.0)):
            spec = arena.write(rid, np.full((80, 32), value, np.float32))
            core.handle(client, Call(rid, "dec", f"s{rid}", 0.0, 32, rid, spec, None, "right"))
            assert core.step()
            core.handle(client, Call(10 + rid, "ac", "", 0.0, 1, -1, None, pickled(7.0), None))
            assert core.step()
        core.flush()
        mine.settimeout(5)
        decoder = FrameDecoder(ToClient)
        done: dict[int, Done] = {}
        while len(done) < 4:  # 2 decode + 2 acoustic answers (after the welcome)
            for msg in decoder.feed(mine.recv(1 << 16)):
                if isinstance(msg, Done):
                    done[msg.rid] = msg
        for rid, value in ((1, 3.0), (2, 5.0)):
            out_spec = done[rid].spec
            assert out_spec is not None
            specs[rid] = out_spec
            np.testing.assert_array_equal(arena.read(rid, out_spec), np.full(32 * 4, value))
        assert [unpickled(done[rid].inline) for rid in (11, 12)] == [7.0, 7.0]
    finally:
        core.close()
        arena.close()
        mine.close()
