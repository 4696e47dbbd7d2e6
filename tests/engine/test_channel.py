"""The engine channel: framing, shared-memory slots, the status block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

from emostream.engine.channel import HEADER, FrameDecoder, SlotArena, StatusBlock, encode
from emostream.engine.messages import (
    Call,
    Cancel,
    Done,
    Dropped,
    Error,
    Hello,
    ToClient,
    ToEngine,
    Welcome,
    pickled,
    unpickled,
)
from emostream.engine.scheduling.load import LoadSnapshot


def test_frames_split_anywhere() -> None:
    call = Call(1, "v", "s", 0.5, 30, 3, None, pickled({"x": 1}), "left", 0.75)
    data = encode(call) + encode(Cancel("s"))
    dec = FrameDecoder(ToEngine)
    got = []
    for i in range(0, len(data), 7):
        got += dec.feed(data[i : i + 7])
    assert got == [call, Cancel("s")]
    assert unpickled(got[0].inline) == {"x": 1}


def test_every_message_round_trips_as_its_type() -> None:
    spec = ((80, 30), "<f4")
    call = Call(7, "voc", "s1", 1.25, 30, 4, spec, None, "right", 1.5)
    to_engine = [Hello("psm_1", 1 << 18, 256), Cancel("s1"), call,
                 Call(8, "ac", "", 2.0, 40, -1, None, pickled([1, 2]), None)]  # fmt: skip
    to_client = [Welcome("psm_2", {"voc": (32, 64)}), Welcome("psm_3"),
                 Done(7, ((7680,), "<f2"), None), Done(8, None, pickled("latent")),
                 Error(9, "KeyError: 'x'"), Dropped(10)]  # fmt: skip
    for kinds, msgs in ((ToEngine, to_engine), (ToClient, to_client)):
        got = FrameDecoder(kinds).feed(b"".join(encode(m) for m in msgs))
        assert got == msgs and [type(m) for m in got] == [type(m) for m in msgs]
    (got,) = FrameDecoder(ToEngine).feed(encode(call))
    assert isinstance(got, Call) and got.spec == spec  # tuples stay tuples


def test_a_call_without_need_by_is_taken() -> None:
    """The 10-field call (before need_by) is still a call: need_by defaults to None."""
    body = msgspec.msgpack.encode(["call", 1, "v", "s", 0.5, 30, 3, None, None, "left"])
    (got,) = FrameDecoder(ToEngine).feed(HEADER.pack(len(body)) + body)
    assert got == Call(1, "v", "s", 0.5, 30, 3, None, None, "left", need_by=None)


def test_a_wrong_message_is_refused() -> None:
    with pytest.raises(ValueError):  # an engine->client message sent to the engine
        FrameDecoder(ToEngine).feed(encode(Done(1, None, None)))
    body = msgspec.msgpack.encode(["call", 1, "v", "s", "soon", 30, 3, None, None, "left"])
    with pytest.raises(ValueError, match="float"):
        FrameDecoder(ToEngine).feed(HEADER.pack(len(body)) + body)


def test_numpy_scalars_go_as_python_values() -> None:
    three, half, thirty = np.int64(3), np.float64(0.5), np.int32(30)
    call = Call(three, "v", "s", half, thirty, 1, None, None, None)  # type: ignore[arg-type]
    (got,) = FrameDecoder(ToEngine).feed(encode(call))
    assert got == Call(3, "v", "s", 0.5, 30, 1, None, None, None)
    assert type(got.rid) is int and type(got.due) is float


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
    msgs = [Done(k, None, pickled(list(range(k)))) for k in range(50)]
    data = b"".join(encode(m) for m in msgs)
    dec = FrameDecoder(ToClient)
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
