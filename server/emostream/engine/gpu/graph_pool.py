"""One CUDA graph memory pool for every graph a process captures, largest first.

Each captured CUDA graph keeps the memory its kernels used during capture, reserved for its
replays (PyTorch's graph-private pool). Captured in separate pools, ~20 vocoder graphs and
~50 acoustic-model graphs each keep their own intermediates; captured into **one** pool
(``torch.cuda.graph_pool_handle()``), a graph may reuse the memory another graph's
intermediates freed at the end of its capture, so the pool grows to about the largest
graph's working set rather than the sum. It grows least when the largest graph is captured
first (the smaller ones then fit in the blocks it freed), so :meth:`GraphPool.capture_all`
first warms every job up (kernel selection, lazy initialisation) measuring its peak memory,
then captures them in descending order of that peak, whichever model they belong to, and
finally returns the warm-ups' cached blocks to the driver (``empty_cache``: they are
outside the pool, and nvidia-smi counts them until then).

**The invariant that makes sharing safe**: graphs of one pool may use the same addresses
for their intermediates, so no two replays may overlap in time, and a graph's static
outputs are rewritten by its next replay. Whoever replays them must therefore replay from
one thread, one call at a time, and copy each call's results off the device (waiting for
it) before the call returns: :class:`~emostream.engine.gpu.vocoder_backend.TorchVocoderBackend`
copies into pinned host memory and synchronises, :class:`~emostream.engine.gpu.acoustic_graphs.
GraphedAcoustic` copies its mels to the host, and the engine process
(:class:`~emostream.engine.core.EngineCore`) runs stage calls one at a time on its
loop thread and writes each batch's results into the front ends' slots before the next
call. (A static output that stays referenced keeps its block allocated, so another graph's
capture is never handed it; the rule above is what keeps the intermediates safe.) A process
whose models replay on separate threads at once (the in-process ``GpuRunner``) must give
each model its own pool.

:class:`GraphDevice` is what this needs of the device (:class:`CudaGraphDevice`: torch);
tests give a fake.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


class GraphDevice(Protocol):
    def new_pool(self) -> Any:
        """A fresh graph memory pool handle."""
        ...

    def warm_up(self, fn: Callable[..., Any], inputs: tuple[Any, ...], runs: int) -> int:
        """Run ``fn(*inputs)`` ``runs`` times off the capture path; the peak bytes it
        allocated above what was allocated before."""
        ...

    def capture(
        self, fn: Callable[..., Any], inputs: tuple[Any, ...], pool: Any
    ) -> tuple[Any, Any]:
        """Capture ``fn(*inputs)`` into ``pool``: ``(graph, outputs)``."""
        ...

    def pool_bytes(self, pool: Any) -> int:
        """Bytes the allocator holds for ``pool`` (-1 when it cannot tell)."""
        ...

    def memory(self) -> dict[str, int]:
        """Allocator and device figures, bytes: allocated, peak, reserved, device_used."""
        ...

    def release_cache(self) -> None:
        """Hand the allocator's unused cached blocks back to the driver (graph pools stay)."""
        ...


@dataclass
class GraphJob:
    """One graph to capture: ``part`` (the model it belongs to, for the report), ``shape``
    (its bucket, for the log), ``fn`` over the static ``inputs``, and ``keep``, called with
    ``(graph, outputs)`` once it is captured (the owner stores them)."""

    part: str
    shape: tuple[int, ...]
    fn: Callable[..., Any]
    inputs: tuple[Any, ...]
    keep: Callable[[Any, tuple[Any, ...]], None]
    peak_bytes: int = 0  # measured by the warm-up


@dataclass
class PartMemory:
    """What one part's graphs cost: how many, their largest warm-up peak, and how much the
    shared pool grew while they were captured (graphs captured later reuse earlier blocks,
    so a part captured after a larger one may add little)."""

    graphs: int = 0
    warm_up_peak_max: int = 0
    pool_added: int = 0


@dataclass
class CaptureReport:
    parts: dict[str, PartMemory] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # "part BxL" in capture order
    pool_bytes: int = 0  # the pool after every capture
    memory: dict[str, int] = field(default_factory=dict)  # after release_cache

    def as_dict(self) -> dict[str, Any]:
        mib = 1 << 20
        parts = {
            k: {
                "graphs": p.graphs,
                "warm_up_peak_max_mib": round(p.warm_up_peak_max / mib, 1),
                "pool_added_mib": round(p.pool_added / mib, 1),
            }
            for k, p in self.parts.items()
        }
        return {
            "parts": parts,
            "pool_mib": round(self.pool_bytes / mib, 1) if self.pool_bytes >= 0 else None,
            "first_captured": self.order[:3],
            **{f"{k}_mib": round(v / mib, 1) for k, v in self.memory.items()},
        }


def largest_first(jobs: Sequence[GraphJob]) -> list[GraphJob]:
    """``jobs`` in capture order: largest measured warm-up peak first; equal peaks keep
    their given order (stable)."""
    return sorted(jobs, key=lambda j: -j.peak_bytes)


class GraphPool:
    """One graph memory pool on ``device`` (module docs). ``capture_all`` may be called
    more than once (another model's graphs, a shape captured late); each call orders only
    its own jobs."""

    def __init__(self, device: GraphDevice, *, warm_up_runs: int = 2) -> None:
        self.device = device
        self.handle = device.new_pool()
        self.warm_up_runs = warm_up_runs
        self.captured = 0

    def capture_all(self, jobs: Sequence[GraphJob]) -> CaptureReport:
        """Warm every job up (measuring its peak), capture them largest first into this
        pool, hand each ``(graph, outputs)`` to its ``keep``, then release the warm-ups'
        cached blocks. Returns what each part cost."""
        report = CaptureReport()
        for job in jobs:  # every warm-up before any capture: the peaks order the captures
            job.peak_bytes = self.device.warm_up(job.fn, job.inputs, self.warm_up_runs)
            part = report.parts.setdefault(job.part, PartMemory())
            part.warm_up_peak_max = max(part.warm_up_peak_max, job.peak_bytes)
        before = self.device.pool_bytes(self.handle)
        for job in largest_first(jobs):
            graph, outputs = self.device.capture(job.fn, job.inputs, self.handle)
            outputs = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
            job.keep(graph, outputs)
            self.captured += 1
            after = self.device.pool_bytes(self.handle)
            part = report.parts[job.part]
            part.graphs += 1
            if before >= 0 and after >= 0:
                part.pool_added += after - before
            before = after
            report.order.append(f"{job.part} {'x'.join(map(str, job.shape))}")
        self.device.release_cache()
        report.pool_bytes = self.device.pool_bytes(self.handle)
        report.memory = self.device.memory()
        return report


class CudaGraphDevice:
    """:class:`GraphDevice` on a CUDA device through torch: warm-ups and captures on one
    side stream (the allocator caches blocks per stream: one stream, one set)."""

    def __init__(self, device: Any = "cuda") -> None:
        import torch

        self._torch = torch
        self.device = torch.device(device)
        self._side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]

    def new_pool(self) -> Any:
        return self._torch.cuda.graph_pool_handle()

    def warm_up(self, fn: Callable[..., Any], inputs: tuple[Any, ...], runs: int) -> int:
        torch = self._torch
        torch.cuda.synchronize(self.device)
        base = torch.cuda.memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        with torch.inference_mode():
            self._side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self._side):
                for _ in range(runs):
                    fn(*inputs)
            torch.cuda.current_stream(self.device).wait_stream(self._side)
        torch.cuda.synchronize(self.device)
        return max(0, int(torch.cuda.max_memory_allocated(self.device)) - int(base))

    def capture(
        self, fn: Callable[..., Any], inputs: tuple[Any, ...], pool: Any
    ) -> tuple[Any, Any]:
        torch = self._torch
        graph = torch.cuda.CUDAGraph()
        with torch.inference_mode():
            self._side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.graph(graph, pool=pool, stream=self._side):
                outputs = fn(*inputs)
            torch.cuda.current_stream(self.device).wait_stream(self._side)
        return graph, outputs

    def pool_bytes(self, pool: Any) -> int:
        try:
            want = tuple(pool)
            segments: list[dict[str, Any]] = self._torch.cuda.memory_snapshot()  # type: ignore[no-untyped-call]
            return sum(int(s["total_size"]) for s in segments
                       if tuple(s.get("segment_pool_id", ())) == want)  # fmt: skip
        except Exception:  # noqa: BLE001 - a report, never a failure
            return -1

    def memory(self) -> dict[str, int]:
        torch = self._torch
        free, total = torch.cuda.mem_get_info(self.device)
        return {
            "allocated": int(torch.cuda.memory_allocated(self.device)),
            "peak": int(torch.cuda.max_memory_allocated(self.device)),
            "reserved": int(torch.cuda.memory_reserved(self.device)),
            "device_used": int(total - free),
        }

    def release_cache(self) -> None:
        self._torch.cuda.empty_cache()
