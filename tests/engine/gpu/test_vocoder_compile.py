"""EMOSTREAM_VOCODER_COMPILE: the setting, and the vocoder backend compiled shape by shape
(CPU: Dynamo + AOTAutograd through ``aot_eager``, fast; inductor's C++ path marked slow)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from emostream.config import Settings
from emostream.engine.gpu.graph_pool import GraphPool
from emostream.engine.gpu.vocoder_backend import TorchVocoderBackend
from emostream.engine.gpu.vocoder_compile import ShapeCompiler, compile_mode
from emostream.networks.hifigan import HifiGan, HifiGanConfig
from tests.engine.gpu.test_graph_pool import FakeDevice, FakeGraph

# A small V1-shaped generator: 2 upsamplings (hop 16), one resblock kernel per stage.
SMALL = HifiGanConfig(upsample_rates=(4, 4), upsample_kernel_sizes=(8, 8),
                      upsample_initial_channel=16, resblock_kernel_sizes=(3,),
                      resblock_dilation_sizes=((1, 3),))  # fmt: skip
HOP = 16


def _model() -> HifiGan:
    torch.manual_seed(0)
    return HifiGan(SMALL).eval()


def _mel(batch: int, frames: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(-5, 2, (batch, 80, frames)).astype(np.float32)


def _reference(model: HifiGan, mel: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        out: np.ndarray = model(torch.from_numpy(mel))[:, 0].numpy()
    return out


def test_setting_parses_and_rejects_bad_values() -> None:
    assert Settings().vocoder_compile == "off"
    for value in ("off", "default", "max-autotune-no-cudagraphs"):
        assert Settings.from_env({"EMOSTREAM_VOCODER_COMPILE": value}).vocoder_compile == value
    for bad in ("on", "1", "reduce-overhead", "max-autotune", ""):
        with pytest.raises(ValueError, match="vocoder_compile"):
            Settings.from_env({"EMOSTREAM_VOCODER_COMPILE": bad})
    with pytest.raises(ValueError):
        Settings.from_env({}, vocoder_compile="fast")  # a CLI override is checked too
    assert compile_mode("off") is None
    assert compile_mode("default") == "default"
    with pytest.raises(ValueError):
        compile_mode("reduce-overhead")  # its own CUDA graphs would clash with the pool


def test_compile_off_leaves_the_backend_as_it_was() -> None:
    model = _model()
    backend = TorchVocoderBackend(model, device="cpu", hop_length=HOP)
    assert backend.compile_report is None and backend.model is model
    assert "compile" not in backend.memory_report()
    mel = _mel(2, 10)
    assert np.array_equal(backend.run(mel), _reference(model, mel))
    pool = GraphPool(FakeDevice())
    graphed = TorchVocoderBackend(model, device="cpu", hop_length=HOP, pool=pool)
    (job,) = graphed.graph_jobs([(2, 8)])
    assert job.fn == graphed._forward  # the eager module's forward, as before


def test_compiled_eager_calls_match_eager_and_never_compile_on_a_call() -> None:
    torch._dynamo.reset()
    model = _model()
    backend = TorchVocoderBackend(model, device="cpu", hop_length=HOP,
                                  compile_mode="default", compile_backend="aot_eager")  # fmt: skip
    backend.warmup([(1, 8), (2, 8)])
    report = backend.compile_report
    assert report is not None and set(report["shapes_s"]) == {"1x80x8", "2x80x8"}
    assert backend.memory_report()["compile"]["mode"] == "default"
    for batch in (1, 2):
        mel = _mel(batch, 8, seed=batch)
        np.testing.assert_allclose(backend.run(mel), _reference(model, mel), atol=1e-5)
    # A shape not compiled at warm-up runs the eager module: no compile on a request.
    mel = _mel(3, 8)
    assert np.array_equal(backend.run(mel), _reference(model, mel))
    assert set(backend.compile_report["shapes_s"]) == {"1x80x8", "2x80x8"}  # type: ignore[index]


def test_a_compiled_shape_refuses_to_recompile() -> None:
    torch._dynamo.reset()
    model = torch.nn.Conv1d(4, 4, 3).eval()
    compiler = ShapeCompiler(model, "default", backend="aot_eager")
    example = torch.zeros(2, 4, 16)  # a plain tensor (the graphs' static inputs are)
    assert compiler.compile_shape(example) >= 0.0 and compiler.compile_shape(example) == 0.0
    run = compiler.module_for((2, 4, 16))
    with torch.inference_mode():
        assert torch.equal(run(example), model(example))
        with pytest.raises(RuntimeError, match="recompile"):
            run(torch.zeros(2, 4, 16))  # an inference tensor: another Dynamo entry
    assert compiler.module_for((3, 4, 16)) is model


class InferenceFakeDevice(FakeDevice):
    """The fake device, warming up and capturing in ``inference_mode`` as CudaGraphDevice does
    (Dynamo guards on grad mode: the compiled shapes refuse calls outside it)."""

    def warm_up(self, fn: Callable[..., Any], inputs: tuple[Any, ...], runs: int) -> int:
        with torch.inference_mode():
            return super().warm_up(fn, inputs, runs)

    def capture(
        self, fn: Callable[..., Any], inputs: tuple[Any, ...], pool: Any
    ) -> tuple[Any, Any]:
        with torch.inference_mode():
            return super().capture(fn, inputs, pool)


def test_compiled_shapes_compile_before_warm_up_and_capture_into_the_pool() -> None:
    torch._dynamo.reset()
    model = _model()
    device = InferenceFakeDevice()
    backend = TorchVocoderBackend(model, device="cpu", hop_length=HOP, pool=GraphPool(device),
                                  compile_mode="default", compile_backend="aot_eager")  # fmt: skip
    assert backend._compiler is not None
    compile_shape = backend._compiler.compile_shape

    def logged(example: Any) -> float:
        device.events.append("compile")
        return compile_shape(example)

    backend._compiler.compile_shape = logged  # type: ignore[method-assign]
    shapes = [(1, 8), (4, 8)]
    assert backend.pool is not None
    backend.pool.capture_all(backend.graph_jobs(shapes))
    assert device.events == ["compile"] * 2 + ["warm"] * 2 + ["capture"] * 2 + ["release"]
    for batch, frames in shapes:
        g = backend._graphs[(batch, frames)]
        mel = _mel(batch, frames, seed=batch)
        g.static_in.copy_(torch.from_numpy(mel))
        assert isinstance(g.graph, FakeGraph)
        with torch.inference_mode():
            g.graph.replay()
        np.testing.assert_allclose(g.static_out.numpy(), _reference(model, mel), atol=1e-5)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")  # inductor's own imports
def test_inductor_on_cpu_matches_eager() -> None:
    """Inductor's own code (C++ on CPU; Triton on the GPU): ~30-60 s on the 2-core machine."""
    torch._dynamo.reset()
    model = _model()
    backend = TorchVocoderBackend(model, device="cpu", hop_length=HOP, compile_mode="default")
    backend.warmup([(2, 8)])
    mel = _mel(2, 8)
    np.testing.assert_allclose(backend.run(mel), _reference(model, mel), atol=1e-4)


def test_the_setting_reaches_the_engine_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vocoder_backend.backend_for`` (the engine process's and the in-process GPU path's)
    hands the mode to the backend; ``off`` hands none."""
    import emostream.engine.gpu.vocoder_backend as vb

    seen: list[Any] = []

    class Recorder:
        def __init__(self, model: Any, **kwargs: Any) -> None:
            seen.append(kwargs.get("compile_mode"))

    monkeypatch.setattr(vb, "TorchVocoderBackend", Recorder)
    monkeypatch.setattr(HifiGan, "load", classmethod(lambda cls, *a, **k: _model()))
    for value, mode in (
        ("off", None),
        ("max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs"),
    ):
        vb.backend_for(Settings(device="cuda", vocoder="v1", vocoder_compile=value))
        assert seen[-1] == mode
