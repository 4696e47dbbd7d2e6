"""The acoustic model's batched inference as CUDA graphs (the GPU path).

Run eagerly, one call of the FS2 model is a few hundred small kernels, and on a GPU their
launches cost milliseconds of host CPU per call whatever the batch (docs/measurements.md,
"Figures behind the code"). A CUDA graph replays them in one launch.

Inference has one data-dependent step: how many frames each unit gets. So it runs as two
graphs with a host step between:

1. ``infer_units`` for a ``(batch, units)`` bucket: encoder, variance predictors, durations;
2. the durations come to the host; length regulation runs eagerly (a handful of kernels) into
   the smallest ``frames`` bucket that holds the longest request;
3. ``decode`` for a ``(batch, frames)`` bucket.

Requests are padded to the bucket (unit id 0 and empty rows are padding; the model masks
both, so results equal an unpadded run up to float rounding). A batch that fits no bucket
(very long segments) runs eagerly; ``eager_batches`` counts those. With
``cuda_graphs=False`` the same bucketed steps run eagerly (the CPU tests use that).

The graphs go into a :class:`~emostream.engine.gpu.graph_pool.GraphPool` (one of their own, or
the process's shared one), captured largest first. The pool's invariant holds here: a call
replays its graphs on one stream and copies the durations and the mels to the host (a
device sync) before it returns; between the two graphs only eager kernels on the same
stream read the first graph's outputs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from emostream.engine.gpu.graph_pool import CaptureReport, CudaGraphDevice, GraphJob, GraphPool
from emostream.networks.acoustic import AcousticModel
from emostream.voices.acoustic import AcousticRequest, collate, infer_batch, split_latents
from emostream.voices.base import Latent

log = logging.getLogger(__name__)

BATCHES = (1, 2, 4, 8, 16, 32)
UNITS = (32, 64, 128, 256)
FRAMES = (128, 256, 512, 1024, 2048)
MAX_CELLS = 16 * 1024  # largest batch x frames decoded in a graph (bounds graph memory)


def bucket(n: int, sizes: Sequence[int]) -> int | None:
    """The smallest of ``sizes`` (ascending) that holds ``n``; None when none does."""
    return next((s for s in sizes if s >= n), None)


@dataclass
class _Graph:
    inputs: tuple[torch.Tensor, ...]
    outputs: tuple[torch.Tensor, ...]
    graph: Any  # torch.cuda.CUDAGraph, or None when running eagerly


class GraphedAcoustic:
    """Batched acoustic inference over bucketed shapes; call it with a list of requests."""

    def __init__(
        self,
        model: AcousticModel,
        *,
        device: str = "cuda",
        cuda_graphs: bool = True,
        batches: Sequence[int] = BATCHES,
        units: Sequence[int] = UNITS,
        frames: Sequence[int] = FRAMES,
        max_cells: int = MAX_CELLS,
        pool: GraphPool | None = None,
    ) -> None:
        """``pool``: the graph pool to capture into (a process's shared one); default, on
        CUDA with graphs, a pool of its own. A pool given with ``cuda_graphs`` is used on
        any device (the CPU tests give one over a fake device)."""
        self.model = model
        self.device = torch.device(device)
        self.cuda_graphs = cuda_graphs and (self.device.type == "cuda" or pool is not None)
        self.batches, self.units, self.frames = tuple(batches), tuple(units), tuple(frames)
        self.max_cells = max_cells
        if pool is None and self.cuda_graphs:
            pool = GraphPool(CudaGraphDevice(self.device))
        self.pool = pool if self.cuda_graphs else None
        self.capture_report: CaptureReport | None = None  # of capture_all()'s captures
        self._stage1: dict[tuple[int, int], _Graph] = {}
        self._stage2: dict[tuple[int, int], _Graph] = {}
        self.calls = 0  # batches served
        self.eager_batches = 0  # of which ran eagerly (no bucket held them)

    # -- shapes ------------------------------------------------------------------------

    def shapes(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Every ``(batch, units)`` and ``(batch, frames)`` bucket."""
        one = [(b, n) for b in self.batches for n in self.units]
        two = [(b, t) for b in self.batches for t in self.frames if b * t <= self.max_cells]
        return one, two

    def capture_all(self) -> None:
        """Capture every bucket now (start-up), not on a stream's first request."""
        if self.pool is not None:
            self.capture_report = self.pool.capture_all(self.graph_jobs())
        else:
            self._eager_all()
        one, two = self.shapes()
        log.info("acoustic model: %d + %d bucket graphs ready", len(one), len(two))

    def graph_jobs(self, part: str = "acoustic") -> list[GraphJob]:
        """The captures of every bucket not captured yet, for :meth:`GraphPool.capture_all`
        (a shared pool orders them with other models')."""
        one, two = self.shapes()
        jobs = [self._job(part, "units", k) for k in one if k not in self._stage1]
        return jobs + [self._job(part, "decode", k) for k in two if k not in self._stage2]

    # -- graphs ------------------------------------------------------------------------

    def _job(self, part: str, step: str, key: tuple[int, int]) -> GraphJob:
        fn: Any
        if step == "units":
            inputs, fn, table = self._units_inputs(*key), self.model.infer_units, self._stage1
        else:
            inputs, fn, table = self._decode_inputs(*key), self.model.decode, self._stage2

        def keep(graph: Any, outputs: tuple[Any, ...]) -> None:
            table[key] = _Graph(inputs, outputs, graph)

        return GraphJob(f"{part} {step}", key, fn, inputs, keep)

    def _eager_all(self) -> None:
        one, two = self.shapes()
        for key in one:
            self._stage1.setdefault(key, _Graph(self._units_inputs(*key), (), None))
        for key in two:
            self._stage2.setdefault(key, _Graph(self._decode_inputs(*key), (), None))

    def _units_inputs(self, batch: int, units: int) -> tuple[torch.Tensor, ...]:
        d = self.model.config
        return (
            torch.zeros(batch, units, dtype=torch.long, device=self.device),
            torch.zeros(batch, units, dtype=torch.long, device=self.device),
            torch.zeros(batch, units, dtype=torch.long, device=self.device),
            torch.zeros(batch, d.speaker_dim, device=self.device),
            torch.zeros(batch, dtype=torch.long, device=self.device),
            torch.ones(batch, device=self.device),
            torch.ones(batch, 5, device=self.device),
        )

    def _decode_inputs(self, batch: int, frames: int) -> tuple[torch.Tensor, ...]:
        return (
            torch.zeros(batch, frames, self.model.config.d_model, device=self.device),
            torch.ones(batch, frames, dtype=torch.bool, device=self.device),
        )

    def _graph(self, step: str, key: tuple[int, int]) -> _Graph:
        table = self._stage1 if step == "units" else self._stage2
        g = table.get(key)
        if g is None:
            if self.pool is not None:
                self.pool.capture_all([self._job("acoustic", step, key)])
            else:
                inputs = self._units_inputs(*key) if step == "units" else self._decode_inputs(*key)
                table[key] = _Graph(inputs, (), None)
            g = table[key]
        return g

    def _units_graph(self, batch: int, units: int) -> _Graph:
        return self._graph("units", (batch, units))

    def _decode_graph(self, batch: int, frames: int) -> _Graph:
        return self._graph("decode", (batch, frames))

    @staticmethod
    def _run(g: _Graph, fn: Any, values: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        for static, value in zip(g.inputs, values, strict=True):
            static.copy_(value, non_blocking=True)
        if g.graph is None:
            out = fn(*g.inputs)
            return tuple(out) if isinstance(out, tuple) else (out,)
        g.graph.replay()
        return g.outputs

    # -- inference ---------------------------------------------------------------------

    def __call__(self, requests: Sequence[AcousticRequest]) -> list[Latent]:
        if not requests:
            return []
        self.calls += 1
        rows = bucket(len(requests), self.batches)
        width = bucket(max(len(r.seq.units) for r in requests), self.units)
        if rows is None or width is None:
            self.eager_batches += 1
            return infer_batch(self.model, requests, device=str(self.device))
        with torch.inference_mode():
            host = collate(requests, width=width, rows=rows)
            h, dur = self._run(self._units_graph(rows, width), self.model.infer_units, host)
            # Host copies (a sync) whatever the device: the graphs' static outputs are
            # rewritten by their next replay (the pool's invariant, emostream.engine.gpu.graph_pool).
            durs = dur.to("cpu", copy=True).numpy().astype(np.int64)  # the one sync before decode
            longest = max(int(durs.sum(axis=1).max()), 1)
            frames = bucket(longest, self.frames)
            if frames is not None and rows * frames > self.max_cells:
                frames = None  # no graph for this shape
            x, pad = self.model.regulate(h, dur, max_frames=frames or longest)
            if frames is None:
                self.eager_batches += 1
                mel = self.model.decode(x, pad)
            else:
                (mel,) = self._run(self._decode_graph(rows, frames), self.model.decode, (x, pad))
            mels = mel[: len(requests)].to("cpu", torch.float32, copy=True).numpy()
        return split_latents(requests, mels, durs[: len(requests)])
