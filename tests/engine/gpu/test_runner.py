"""The asyncio engine over the batcher, with a fake backend (CPU)."""

import asyncio
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from emostream.engine.gpu.batcher import BucketSpec
from emostream.engine.gpu.runner import GpuVocoderEngine

HOP = 4
MELS = 2


class FakeBackend:
    """Audio sample = the frame's first mel value, repeated ``HOP`` times."""

    hop_length = HOP
    n_mels = MELS

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []
        self.warmed: list[tuple[int, int]] = []
        self.gate: asyncio.Event | None = None

    def run(self, mel: np.ndarray) -> np.ndarray:
        self.shapes.append(mel.shape)
        return np.repeat(mel[:, 0, :], HOP, axis=1).astype(np.float32)

    def warmup(self, shapes: Iterable[tuple[int, int]]) -> None:
        self.warmed.extend(shapes)

    def memory_report(self) -> dict[str, Any]:
        return {"backend": "fake"}


def window(values: list[float]) -> np.ndarray:
    return np.stack([np.asarray(values, dtype=np.float32)] * MELS)


SPEC = BucketSpec(frames=(8, 16), batch_sizes=(1, 2, 4))


async def test_results_route_back_with_padding_and_trim() -> None:
    backend = FakeBackend()
    engine = GpuVocoderEngine(backend, buckets=SPEC, max_wait_s=0.0, pad_value=-9.0)
    await engine.start()
    assert backend.warmed == SPEC.shapes()
    right = engine.vocode("a", window([1, 2, 3]))
    left = engine.vocode("b", window([4, 5, 6, 7, 8, 9, 10, 11, 12]), pad_side="left")
    trimmed = engine.vocode("c", window([1, 2, 3, 4, 5]), trim=(1, 3))
    assert list(await right) == [1.0] * HOP + [2.0] * HOP + [3.0] * HOP
    assert (await left).tolist() == np.repeat(np.arange(4, 13, dtype=np.float32), HOP).tolist()
    assert (await trimmed).tolist() == [2.0] * HOP + [3.0] * HOP
    await engine.close()
    for shape in backend.shapes:
        assert shape[2] in SPEC.frames and shape[0] in SPEC.batch_sizes
    assert engine.memory_report()["backend"] == "fake"
    assert engine.stats()["items"] == 3


async def test_many_streams_each_in_order() -> None:
    backend = FakeBackend()
    engine = GpuVocoderEngine(backend, buckets=SPEC, max_wait_s=0.0)
    await engine.start(warmup=False)
    futures: dict[str, list[asyncio.Future[np.ndarray]]] = {}
    for k in range(6):
        for s in ("a", "b", "c", "d", "e"):
            n = 3 if k == 0 else 12
            futures.setdefault(s, []).append(engine.vocode(s, window([100 * k + 1.0] * n)))
    done_order: list[tuple[str, int]] = []
    for s, futs in futures.items():
        for k, f in enumerate(futs):
            f.add_done_callback(lambda _f, s=s, k=k: done_order.append((s, k)))
    for s, futs in futures.items():
        for k, f in enumerate(futs):
            audio = await f
            assert audio[0] == 100 * k + 1.0
    await engine.close()
    for s in futures:
        ks = [k for (t, k) in done_order if t == s]
        assert ks == sorted(ks) and len(ks) == 6
    assert engine.batches_run >= 8  # batch size 4 holds at most 4 of 30 windows


async def test_cancel_cancels_pending_futures() -> None:
    backend = FakeBackend()
    engine = GpuVocoderEngine(backend, buckets=SPEC, max_wait_s=60.0)  # nothing leaves early
    await engine.start(warmup=False)
    a = [engine.vocode("a", window([1.0] * 5)) for _ in range(2)]
    b = engine.vocode("b", window([2.0] * 5))
    assert engine.cancel("a") == 2
    assert all(f.cancelled() for f in a)
    await engine.close()  # close flushes what is left
    assert (await b)[0] == 2.0
    assert all(shape[0] == 1 for shape in backend.shapes)  # only b ran


async def test_backend_error_reaches_every_waiter() -> None:
    class Broken(FakeBackend):
        def run(self, mel: np.ndarray) -> np.ndarray:
            raise RuntimeError("device lost")

    engine = GpuVocoderEngine(Broken(), buckets=SPEC, max_wait_s=0.0)
    await engine.start(warmup=False)
    f1 = engine.vocode("a", window([1.0] * 4))
    f2 = engine.vocode("b", window([1.0] * 4))
    for f in (f1, f2):
        with pytest.raises(RuntimeError, match="device lost"):
            await f
    await engine.close()
    with pytest.raises(RuntimeError):
        engine.vocode("a", window([1.0]))


async def test_rejects_wrong_shapes() -> None:
    engine = GpuVocoderEngine(FakeBackend(), buckets=SPEC)
    with pytest.raises(RuntimeError, match="not started"):
        engine.vocode("a", window([1.0]))
    await engine.start(warmup=False)
    with pytest.raises(ValueError):
        engine.vocode("a", np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(ValueError):
        engine.vocode("a", np.zeros((MELS, 17), dtype=np.float32))  # longer than any bucket
    await engine.close()


def test_torch_backend_eager_on_cpu_matches_module() -> None:
    torch = pytest.importorskip("torch")
    from emostream.engine.gpu.vocoder_backend import TorchVocoderBackend
    from emostream.networks.hifigan import HifiGan, HifiGanConfig

    torch.manual_seed(0)
    model = HifiGan(HifiGanConfig(upsample_initial_channel=16)).eval()
    backend = TorchVocoderBackend(model, device="cpu")
    assert not backend.cuda_graphs and backend.dtype == torch.float32
    mel = np.random.default_rng(0).normal(-5, 2, (2, 80, 10)).astype(np.float32)
    with torch.no_grad():
        ref = model(torch.from_numpy(mel))[:, 0].numpy()
    out = backend.run(mel)
    assert out.shape == (2, 2560) and np.allclose(out, ref, atol=1e-6)
    backend.warmup([(1, 8)])
    assert backend.memory_report()["device"] == "cpu"
    with pytest.raises(ValueError):
        TorchVocoderBackend(model, device="cpu", dtype=torch.bfloat16)


async def test_gpu_runner_routes_mel_voices_to_the_engine() -> None:
    from emostream.engine.gpu.runner import GpuRunner

    class Voice:
        hop_length = HOP
        info = SimpleNamespace(sample_rate=22050)  # the CPU runner's load figures read it

        def __init__(self) -> None:
            self.decoded = 0

        def acoustic(self, text: str, controls: object) -> str:
            return text.upper()

        def decode(self, frames: np.ndarray) -> np.ndarray:
            self.decoded += 1
            return np.zeros(frames.shape[1] * HOP, dtype=np.float32)

    backend = FakeBackend()
    engine = GpuVocoderEngine(backend, buckets=SPEC, max_wait_s=0.0)
    await engine.start(warmup=False)
    runner = GpuRunner(engine, workers=1)
    voice = Voice()
    assert await runner.acoustic(voice, "hi", None) == "HI"
    mel = await runner.decode(voice, window([3.0, 4.0]), stream_id="s")
    assert mel.tolist() == [3.0] * HOP + [4.0] * HOP and voice.decoded == 0
    latent = np.zeros((5, 3), dtype=np.float32)  # not a mel: the voice's own decoder
    assert (await runner.decode(voice, latent, stream_id="s")).shape == (3 * HOP,)
    assert voice.decoded == 1 and len(backend.shapes) == 1
    runner.cancel("s")
    runner.close()
    await engine.close()
