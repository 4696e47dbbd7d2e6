"""Continuous batching of acoustic-model calls (a small random model on CPU)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import numpy as np

from emostream.engine.gpu.acoustic_batcher import AcousticBatcher, Pending, take_batch
from emostream.voices.acoustic import AcousticRequest, AcousticVoice, infer_batch
from emostream.voices.base import Controls

TEXTS = ["Hi.", "A longer sentence, with a pause.", "Good morning.", "Yes!", "One, two, three."]


def run(voice: AcousticVoice) -> Any:
    return functools.partial(infer_batch, voice.model, device="cpu")


def pending(deadline: float, key: Any, loop: asyncio.AbstractEventLoop) -> Pending:
    return Pending(deadline, int(deadline * 10), key, list, None, loop.create_future())  # type: ignore[arg-type]


async def test_take_batch_most_urgent_first_same_model_only() -> None:
    loop = asyncio.get_running_loop()
    a, b = object(), object()
    queue = [pending(3.0, a, loop), pending(1.0, b, loop), pending(2.0, b, loop),
             pending(0.5, b, loop), pending(4.0, b, loop)]  # fmt: skip
    queue[3].future.cancel()  # its stream went away: dropped, never run
    batch = take_batch(queue, 2)
    assert [p.deadline for p in batch] == [1.0, 2.0]
    assert sorted(p.deadline for p in queue) == [3.0, 4.0]
    assert [p.deadline for p in take_batch(queue, 8)] == [3.0]  # model a alone
    assert [p.deadline for p in take_batch(queue, 8)] == [4.0]
    assert take_batch(queue, 8) == []


async def test_concurrent_requests_share_one_call(voice: AcousticVoice) -> None:
    batcher = AcousticBatcher(max_batch=4)
    requests = [voice.prepare(t, Controls()) for t in TEXTS]
    latents = await asyncio.gather(
        *(batcher.infer(voice.model, run(voice), r, deadline=float(i)) for i, r in
          enumerate(requests))
    )  # fmt: skip
    assert (batcher.batches, batcher.requests) == (2, 5)  # 4 most urgent, then the last
    for request, latent in zip(requests, latents, strict=True):
        alone = infer_batch(voice.model, [request])[0]
        np.testing.assert_array_equal(latent.unit_frames, alone.unit_frames)
        np.testing.assert_allclose(latent.frames, alone.frames, atol=1e-4)
    batcher.shutdown()


async def test_a_bad_request_fails_alone(voice: AcousticVoice) -> None:
    batcher = AcousticBatcher()
    good = [voice.prepare(t, Controls()) for t in TEXTS[:3]]
    r = good[0]
    bad = AcousticRequest(r.seq, r.speaker, emotion=999, intensity=1.0, prosody=r.prosody)
    results = await asyncio.gather(
        *(batcher.infer(voice.model, run(voice), q) for q in [good[0], bad, *good[1:]]),
        return_exceptions=True,
    )
    assert isinstance(results[1], IndexError)
    assert all(not isinstance(x, BaseException) for i, x in enumerate(results) if i != 1)
    assert batcher.batches == 1 + 4  # the failed batch, then each request alone
    batcher.shutdown()


async def test_gpu_runner_batches_acoustic_voices(voice: AcousticVoice) -> None:
    from emostream.engine.gpu.runner import GpuRunner, GpuVocoderEngine
    from tests.engine.gpu.test_runner import SPEC, FakeBackend

    engine = GpuVocoderEngine(FakeBackend(), buckets=SPEC, max_wait_s=0.0)
    await engine.start(warmup=False)
    runner = GpuRunner(engine, workers=2)
    latents = await asyncio.gather(*(runner.acoustic(voice, t, Controls()) for t in TEXTS))
    assert [lat.units for lat in latents] == [voice.g2p(t).symbols for t in TEXTS]
    assert runner.acoustic_batcher.requests == len(TEXTS)
    assert runner.acoustic_batcher.batches < len(TEXTS)  # G2P ran on 2 threads meanwhile
    graphed = runner.prepare_acoustic(voice.model, device="cpu")  # from now on: buckets
    again = await runner.acoustic(voice, TEXTS[1], Controls())
    assert graphed.calls == 1
    np.testing.assert_allclose(again.frames, latents[1].frames, atol=1e-4)
    runner.close()
    await engine.close()
