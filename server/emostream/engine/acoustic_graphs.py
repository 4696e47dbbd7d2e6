"""The acoustic model's batched inference as CUDA graphs (the GPU path).

Run eagerly, one call of the FS2 model is a few hundred small kernels, and on a GPU their
launches cost ~10 ms of host CPU per call whatever the batch (measured on an H200,
bench/results/2026-12-02-h200-loadtest.md). A CUDA graph replays them in one launch.

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
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from emostream.models.acoustic import AcousticModel
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
    ) -> None:
        self.model = model
        self.device = torch.device(device)
        self.cuda_graphs = cuda_graphs and self.device.type == "cuda"
        self.batches, self.units, self.frames = tuple(batches), tuple(units), tuple(frames)
        self.max_cells = max_cells
        self._pool: Any = torch.cuda.graph_pool_handle() if self.cuda_graphs else None
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
        one, two = self.shapes()
        for key in one:
            self._units_graph(*key)
        for key in two:
            self._decode_graph(*key)
        log.info("acoustic model: %d + %d bucket graphs ready", len(one), len(two))

    # -- graphs ------------------------------------------------------------------------

    def _build(self, fn: Any, inputs: tuple[torch.Tensor, ...]) -> _Graph:
        with torch.inference_mode():
            if not self.cuda_graphs:
                return _Graph(inputs, (), None)
            side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):  # warm-up (kernel selection) before capture
                    fn(*inputs)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                outputs = fn(*inputs)
        return _Graph(inputs, tuple(outputs) if isinstance(outputs, tuple) else (outputs,), graph)

    def _units_graph(self, batch: int, units: int) -> _Graph:
        g = self._stage1.get((batch, units))
        if g is None:
            d = self.model.config
            inputs = (
                torch.zeros(batch, units, dtype=torch.long, device=self.device),
                torch.zeros(batch, units, dtype=torch.long, device=self.device),
                torch.zeros(batch, units, dtype=torch.long, device=self.device),
                torch.zeros(batch, d.speaker_dim, device=self.device),
                torch.zeros(batch, dtype=torch.long, device=self.device),
                torch.ones(batch, device=self.device),
                torch.ones(batch, 5, device=self.device),
            )
            g = self._stage1[(batch, units)] = self._build(self.model.infer_units, inputs)
        return g

    def _decode_graph(self, batch: int, frames: int) -> _Graph:
        g = self._stage2.get((batch, frames))
        if g is None:
            inputs = (
                torch.zeros(batch, frames, self.model.config.d_model, device=self.device),
                torch.ones(batch, frames, dtype=torch.bool, device=self.device),
            )
            g = self._stage2[(batch, frames)] = self._build(self.model.decode, inputs)
        return g

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
            durs = dur.cpu().numpy().astype(np.int64)  # the one host sync before decoding
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
            mels = mel[: len(requests)].float().cpu().numpy()
        return split_latents(requests, mels, durs[: len(requests)])
