"""The engine channel: framing, shared-memory slots, the status block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from emostream.engine.channel import FrameDecoder, SlotArena, StatusBlock, encode
from emostream.engine.scheduler import LoadSnapshot


def test_frames_split_anywhere() -> None:
    data = encode(("call", 1, "v", "s", 0.5, 30, 3, None, {"x": 1}, "left")) + encode(
        ("cancel", "s")
    )
    dec = FrameDecoder()
    got = []
    for i in range(0, len(data), 7):
        got += dec.feed(data[i : i + 7])
    assert got == [("call", 1, "v", "s", 0.5, 30, 3, None, {"x": 1}, "left"), ("cancel", "s")]


def test_slots_seen_by_another_attachment() -> None:
    arena = SlotArena(4, 1 << 16)
    other = SlotArena(4, 1 << 16, name=arena.name)
    try:
        slot = arena.take()
        assert slot is not None and arena.available == 3
        mel = np.random.default_rng(0).standard_normal((80, 32)).astype(np.float32)
        spec = arena.write(slot, mel)
        assert np.array_equal(other.read(slot, spec), mel)
        audio = np.arange(8192, dtype=np.float32)
        other.write(slot, audio)
        assert np.array_equal(arena.read(slot, ((8192,), "<f4")), audio)
        assert not arena.fits(1 << 17)
        arena.free(slot)
        assert arena.available == 4
    finally:
        other.close()
        arena.close()


def test_status_block_round_trip() -> None:
    block = StatusBlock()
    reader = StatusBlock(name=block.name)
    try:
        assert reader.read() is None
        snap = LoadSnapshot(1.5, 3, 4, 0.5, 0.25, 0.01, 2, 7, 0.004, 2.0)
        block.publish(snap)
        assert reader.read() == snap
    finally:
        reader.close()
        block.close()


def test_many_frames_in_one_read_and_a_partial_tail() -> None:
    msgs = [("done", k, None, list(range(k))) for k in range(50)]
    data = b"".join(encode(m) for m in msgs)
    dec = FrameDecoder()
    cut = len(data) - 3  # the last message arrives in two reads
    assert dec.feed(data[:cut]) == msgs[:-1]
    assert dec.feed(data[cut:]) == msgs[-1:]
    assert dec.feed(b"") == []


def test_slot_write_of_strided_views() -> None:
    arena = SlotArena(2, 1 << 16)
    try:
        audio = np.arange(4 * 96, dtype=np.float16).reshape(4, 96)
        for value in (audio[1, 10:60], audio[:, ::3], audio.T[5:9]):  # slices, strides
            spec = arena.write(1, value)
            assert spec == (value.shape, "<f2")
            assert np.array_equal(arena.read(1, spec), value)
    finally:
        arena.close()


_ATTACH_SCRIPT = """
import multiprocessing as mp
from emostream.engine.channel import SlotArena

def attach(name):
    SlotArena(4, 64, name=name).close()

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    arena = SlotArena(4, 64)
    for _ in range(2):  # several front ends attach the same block, one tracker for all
        procs = [ctx.Process(target=attach, args=(arena.name,)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0, p.exitcode
    arena.close()
    print("ok")
"""


def test_attaching_processes_leave_the_resource_tracker_quiet(tmp_path: Path) -> None:
    """Several processes attaching one block must not make the shared resource tracker
    raise (Python < 3.13: a KeyError traceback per repeated unregister) nor warn of a
    leak; the owner's unlink is the only one."""
    script = tmp_path / "attach.py"
    script.write_text(_ATTACH_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert "Traceback" not in out.stderr and "leaked" not in out.stderr, out.stderr
