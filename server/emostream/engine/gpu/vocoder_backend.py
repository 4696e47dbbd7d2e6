"""Vocoder backends: run one padded batch ``[B, n_mels, L]`` -> audio ``[B, L * hop]``.

A backend is called from one thread only (the engine's device thread).

* :class:`TorchVocoderBackend`: a torch vocoder on a device. On CUDA it captures one CUDA
  graph per bucket shape (batch size x frames) in a graph memory pool
  (:class:`~emostream.engine.gpu.graph_pool.GraphPool`: its own, or one shared with the other
  models of the process, largest graph first) and replays it (static input/output buffers,
  pinned host staging; each call copies its audio to the host and waits for it before
  returning, the pool's invariant); elsewhere, or with ``cuda_graphs=False``, it runs
  eagerly. With ``compile_mode`` it first compiles the model (``torch.compile``) for each shape
  (:mod:`emostream.engine.gpu.vocoder_compile`: during warm-up, then the usual warm-up runs and
  capture). fp16 is the GPU default; bf16 is refused for HiFi-GAN (far from fp32 where fp16
  is close: docs/measurements.md, "Figures behind the code").
* :class:`OnnxVocoderBackend`: ONNX Runtime (the CPU path, or onnxruntime-gpu).

:func:`backend_for` builds the cuda backend ``settings`` choose (the engine process's and
the in-process GPU path's).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.engine.gpu.graph_pool import CaptureReport, CudaGraphDevice, GraphJob, GraphPool
from emostream.engine.gpu.vocoder_compile import ShapeCompiler, compile_mode

log = logging.getLogger(__name__)

Mel = npt.NDArray[np.float32]
Audio = npt.NDArray[np.float32]


class VocoderBackend(Protocol):
    hop_length: int
    n_mels: int

    def run(self, mel: Mel) -> Audio:
        """``[B, n_mels, L]`` -> ``[B, L * hop_length]`` audio, float32 or float16 (blocking).
        The result must not be shared with later calls."""
        ...

    def warmup(self, shapes: Iterable[tuple[int, int]]) -> None:
        """Prepare ``(batch, frames)`` shapes ahead of traffic (graph capture, allocation)."""
        ...

    def memory_report(self) -> dict[str, Any]: ...


class OnnxVocoderBackend:
    """Wraps :class:`emostream.networks.hifigan_onnx.OnnxHifiGan` (or anything with
    ``decode_batch``) as a backend."""

    def __init__(self, session: Any, *, hop_length: int = 256, n_mels: int = 80) -> None:
        self.session = session
        self.hop_length = hop_length
        self.n_mels = n_mels

    def run(self, mel: Mel) -> Audio:
        out: Audio = self.session.decode_batch(mel)
        return out

    def warmup(self, shapes: Iterable[tuple[int, int]]) -> None:
        for batch, frames in shapes:
            self.run(np.zeros((batch, self.n_mels, frames), dtype=np.float32))

    def memory_report(self) -> dict[str, Any]:
        return {"backend": "onnxruntime", "providers": list(getattr(self.session, "providers", []))}


class _Graph:
    """One captured shape: static buffers and the graph that maps one to the other."""

    def __init__(self, static_in: Any, static_out: Any, graph: Any, host_in: Any, host_out: Any):
        self.static_in = static_in
        self.static_out = static_out
        self.graph = graph
        self.host_in = host_in  # pinned float32 [B, C, L]
        self.host_out = host_out  # pinned [B, L * hop], model dtype


class TorchVocoderBackend:
    """A torch vocoder module (``[B, C, L] -> [B, 1, L * hop]``) on ``device``."""

    def __init__(
        self,
        model: Any,
        *,
        device: str = "cuda",
        dtype: Any = None,
        cuda_graphs: bool = True,
        hop_length: int = 256,
        n_mels: int = 80,
        pool: GraphPool | None = None,
        compile_mode: str | None = None,
        compile_backend: str = "inductor",
    ) -> None:
        """``pool``: the graph pool to capture into (a process's shared one); default, on
        CUDA with graphs, a pool of this backend's own. ``compile_mode``: a torch.compile
        mode (:data:`emostream.engine.gpu.vocoder_compile.MODES`) applied to every shape warmed
        up or captured (``None``: eager, the default); ``compile_backend`` is torch.compile's
        (tests on CPU: ``"aot_eager"``)."""
        import torch

        self._torch = torch
        self.device = torch.device(device)
        is_cuda = self.device.type == "cuda"
        if dtype is None:
            dtype = torch.float16 if is_cuda else torch.float32
        if dtype == torch.bfloat16:
            raise ValueError("bf16 wrecks HiFi-GAN's output (13 dB SNR); use float16")
        self.dtype = dtype
        self.hop_length = hop_length
        self.n_mels = n_mels
        self.cuda_graphs = cuda_graphs and is_cuda
        self.model = model.to(device=self.device, dtype=dtype).eval()
        self.model.requires_grad_(False)
        self._graphs: dict[tuple[int, int], _Graph] = {}
        self._resident: dict[tuple[int, int], Any] = {}
        if pool is None and self.cuda_graphs:
            pool = GraphPool(CudaGraphDevice(self.device))
        self.pool = pool
        self.capture_report: CaptureReport | None = None  # of the last warmup()'s captures
        self._stream: Any = torch.cuda.Stream(self.device) if is_cuda else None  # type: ignore[no-untyped-call]
        self._compiler: ShapeCompiler | None = None
        if compile_mode is not None:
            self.compile(mode=compile_mode, backend=compile_backend)

    # -- eager ---------------------------------------------------------------------

    def _eager(self, mel: Mel) -> Audio:
        torch = self._torch
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(mel)).to(self.device, self.dtype)
            y = self._module(x.shape)(x)[:, 0]
            out: Audio = y.float().cpu().numpy()
        return out

    # -- CUDA graphs ---------------------------------------------------------------

    def graph_jobs(
        self, shapes: Iterable[tuple[int, int]], part: str = "vocoder"
    ) -> list[GraphJob]:
        """The captures of the ``(batch, frames)`` shapes not captured yet, for
        :meth:`GraphPool.capture_all` (a shared pool orders them with other models')."""
        torch = self._torch
        jobs = []
        for batch, frames in dict.fromkeys(shapes):
            if (batch, frames) in self._graphs:
                continue
            static_in = torch.full(
                (batch, self.n_mels, frames), -11.5, device=self.device, dtype=self.dtype
            )

            def keep(graph: Any, outputs: tuple[Any, ...], b: int = batch, f: int = frames,
                     x: Any = static_in) -> None:  # fmt: skip
                self._keep(b, f, x, graph, outputs[0])

            forward = self._forward
            if self._compiler is not None:  # compiled before any warm-up or capture
                self._compiler.compile_shape(static_in)
                forward = self._compiled_forward
            jobs.append(GraphJob(part, (batch, frames), forward, (static_in,), keep))
        return jobs

    def _forward(self, mel: Any) -> Any:
        return self.model(mel)[:, 0]

    def _compiled_forward(self, mel: Any) -> Any:
        return self._module(mel.shape)(mel)[:, 0]

    def _module(self, shape: tuple[int, ...]) -> Any:
        """What runs ``shape``: the compiled model for a shape compiled at warm-up, else the
        model (never a compile on a request)."""
        if self._compiler is None:
            return self.model
        return self._compiler.module_for(tuple(shape))

    def _keep(self, batch: int, frames: int, static_in: Any, graph: Any, static_out: Any) -> None:
        torch = self._torch
        host_in = torch.empty((batch, self.n_mels, frames), dtype=torch.float32)
        host_out = torch.empty((batch, frames * self.hop_length), dtype=self.dtype)
        if self.device.type == "cuda":  # (a CPU build has no pinned memory: tests' fake pools)
            host_in, host_out = host_in.pin_memory(), host_out.pin_memory()
        self._graphs[(batch, frames)] = _Graph(static_in, static_out, graph, host_in, host_out)
        log.debug("captured vocoder graph batch=%d frames=%d", batch, frames)

    def _capture(self, batch: int, frames: int) -> _Graph:
        assert self.pool is not None
        self.pool.capture_all(self.graph_jobs([(batch, frames)]))
        return self._graphs[(batch, frames)]

    def _replay(self, mel: Mel) -> Audio:
        torch = self._torch
        batch, _, frames = mel.shape
        g = self._graphs.get((batch, frames)) or self._capture(batch, frames)
        # The pool's invariant (emostream.engine.gpu.graph_pool): the audio is on the host and
        # the stream idle before this returns, so no other graph's replay can overlap it.
        with torch.cuda.stream(self._stream):
            g.host_in.numpy()[...] = mel
            g.static_in.copy_(g.host_in, non_blocking=True)
            g.graph.replay()
            g.host_out.copy_(g.static_out, non_blocking=True)
            self._stream.synchronize()
        # Model dtype (fp16 on GPUs): half the host copy; consumers convert their slice.
        out: Audio = g.host_out.numpy().copy()
        return out

    # -- backend API ---------------------------------------------------------------

    def run(self, mel: Mel) -> Audio:
        if mel.ndim != 3 or mel.shape[1] != self.n_mels:
            raise ValueError(f"expected [B, {self.n_mels}, L], got {mel.shape}")
        if self.cuda_graphs:
            return self._replay(mel)
        if self._stream is not None:
            with self._torch.cuda.stream(self._stream):
                return self._eager(mel)
        return self._eager(mel)

    def run_resident(self, batch: int, frames: int) -> None:
        """Run one ``(batch, frames)`` call on device-resident input, no host copies and no
        sync (for benchmarks: time it with CUDA events)."""
        torch = self._torch
        if self.cuda_graphs:
            g = self._graphs.get((batch, frames)) or self._capture(batch, frames)
            g.graph.replay()
            return
        key = (batch, frames)
        with torch.inference_mode():  # an inference tensor, as warmup's compile example
            x = self._resident.get(key)
            if x is None:
                x = torch.full(
                    (batch, self.n_mels, frames), -11.5, device=self.device, dtype=self.dtype
                )
                self._resident[key] = x
            self._module(x.shape)(x)

    def compile(
        self, *, mode: str = "max-autotune-no-cudagraphs", backend: str = "inductor"
    ) -> None:
        """``torch.compile`` the model (before any graph is captured); each shape is compiled
        when :meth:`warmup` or :meth:`graph_jobs` first meets it. A faster graph for about a
        minute of compiling per shape (docs/measurements.md, "Figures behind the code"): do
        it at start-up only."""
        if self._graphs:
            raise RuntimeError("compile before capturing graphs")
        self._compiler = ShapeCompiler(self.model, mode, backend=backend)

    @property
    def compile_report(self) -> dict[str, Any] | None:
        """The compile mode and seconds per shape (``None``: not compiled)."""
        return None if self._compiler is None else self._compiler.report()

    def warmup(self, shapes: Iterable[tuple[int, int]]) -> None:
        if self.cuda_graphs:
            assert self.pool is not None
            self.capture_report = self.pool.capture_all(self.graph_jobs(shapes))
            return
        for batch, frames in shapes:
            mel = np.full((batch, self.n_mels, frames), -11.5, dtype=np.float32)
            if self._compiler is not None:
                with self._torch.inference_mode():  # an inference tensor, as _eager's input
                    example = self._torch.from_numpy(mel).to(self.device, self.dtype)
                self._compiler.compile_shape(example)
            self.run(mel)

    def memory_report(self) -> dict[str, Any]:
        torch = self._torch
        report: dict[str, Any] = {
            "backend": "torch",
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "cuda_graphs": self.cuda_graphs,
            "graphs_captured": len(self._graphs),
            "graph_pool_bytes": self.pool.device.pool_bytes(self.pool.handle) if self.pool else 0,
            "parameters_bytes": sum(p.numel() * p.element_size() for p in self.model.parameters()),
        }
        if self._compiler is not None:
            report["compile"] = self._compiler.report()
        if self.device.type == "cuda":
            free, total = torch.cuda.mem_get_info(self.device)
            report.update(
                device_name=torch.cuda.get_device_name(self.device),
                allocated_bytes=torch.cuda.memory_allocated(self.device),
                reserved_bytes=torch.cuda.memory_reserved(self.device),
                max_allocated_bytes=torch.cuda.max_memory_allocated(self.device),
                device_free_bytes=free,
                device_total_bytes=total,
            )
        return report


def backend_for(settings: Settings, *, pool: Any = None) -> Any:
    """The cuda vocoder backend for ``settings.vocoder``: HiFi-GAN V1 in fp16, or the
    light vocoder in float32 (CUDA graphs per bucket shape, captured by ``warmup``, or
    through ``graph_jobs`` into ``pool``: a :class:`~emostream.engine.gpu.graph_pool.GraphPool`
    shared with the process's other models; default: its own). ``vocoder_compile``
    torch.compiles V1 shape by shape first (the light vocoder stays eager: a warning)."""
    import torch

    from emostream.voices.catalog import vocoder_choice

    if vocoder_choice(settings) == "lite":
        if settings.vocoder_compile != "off":
            log.warning("vocoder_compile=%s ignored: it applies to HiFi-GAN V1 only",
                        settings.vocoder_compile)  # fmt: skip
        return TorchVocoderBackend(_lite_module(settings), device="cuda", dtype=torch.float32,
                                   pool=pool)  # fmt: skip
    from emostream.networks.hifigan import HifiGan

    vocoder = HifiGan.load("universal", checkpoint=settings.vocoder_checkpoint or None)
    return TorchVocoderBackend(vocoder, device="cuda", pool=pool,
                               compile_mode=compile_mode(settings.vocoder_compile))  # fmt: skip


def _lite_module(settings: Settings) -> Any:
    """The light vocoder (weights from its shipped ONNX file) as the engine's module:
    ``[B, 80, L] -> [B, 1, L * hop]``: the network in bf16 autocast as it was trained, the
    iSTFT in float32 (what ``bench/vocoder_gpu_throughput.py`` measures)."""
    from torch import nn

    from emostream.networks.lite_vocoder import LiteVocoder
    from emostream.voices.acoustic import find_models_dir
    from emostream.voices.catalog import LITE_VOCODER

    models_dir = find_models_dir(settings.models_dir)
    if models_dir is None or not (models_dir / LITE_VOCODER).is_file():
        raise RuntimeError("EMOSTREAM_VOCODER=lite: the light vocoder is not under models/")

    class Lite(nn.Module):
        def __init__(self, inner: LiteVocoder) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, mel: Any) -> Any:
            return self.inner.mixed(mel, bf16=mel.is_cuda).clamp(-1.0, 1.0)[:, None]

    return Lite(LiteVocoder.load(models_dir / LITE_VOCODER))
