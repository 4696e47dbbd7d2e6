"""What a batch costs on the device: cost models for :mod:`emostream.engine.scheduler`.

* :class:`LinearCost` / :class:`CostTable`: ``fixed + rows x (per_row + length x per_cell)``
  per stage.
* :data:`H200` and :func:`h200_table`: the figures measured on one H200 (the fake device of
  the scheduling tests and the prior of the engine's :class:`MeasuredCost`):

  - HiFi-GAN V1, fp16, a CUDA graph per shape: ~1.3 ms per call + ~5.7 us per padded
    frame-row (batch 1 x 30 frames 1.39 ms, 32 x 96 about 19 ms;
    ``bench/results/2026-12-02-h200-vocoder.md``, run1, and the ``BucketSpec`` notes);
  - the acoustic model (FS2) as CUDA graphs: 2.14 / 2.96 / 6.39 / 10.94 ms per call at
    batch 1 / 4 / 16 / 32, i.e. ~1.86 ms + ~0.284 ms per request;
    eager: 10.38 ms at batch 1, 15.45 ms at 32, i.e. ~10.2 ms + ~0.16 ms per request
    (``bench/results/2026-12-02-h200-loadtest.md``, ``bench/acoustic_graphs.py``).

* :class:`MeasuredCost`: the engine's own timings per ``(stage, rows, length)`` shape
  (a moving average), the prior for shapes not yet run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from emostream.engine.scheduler import CostModel


@dataclass(frozen=True)
class LinearCost:
    """``fixed_s + batch * per_row_s + batch * length * per_cell_s``."""

    fixed_s: float
    per_row_s: float = 0.0
    per_cell_s: float = 0.0

    def __call__(self, batch: int, length: int) -> float:
        return self.fixed_s + batch * (self.per_row_s + length * self.per_cell_s)


@dataclass(frozen=True)
class CostTable:
    """A :class:`CostModel` from one :class:`LinearCost` per stage key (``default`` else)."""

    stages: Mapping[str, LinearCost]
    default: LinearCost = LinearCost(0.001)

    def cost(self, stage: str, batch: int, length: int) -> float:
        return self.stages.get(stage, self.default)(batch, length)


H200: dict[str, LinearCost] = {
    "vocoder-v1-fp16-graphs": LinearCost(1.3e-3, per_cell_s=5.7e-6),
    "acoustic-graphs": LinearCost(1.86e-3, per_row_s=0.284e-3),
    "acoustic-eager": LinearCost(10.2e-3, per_row_s=0.16e-3),
}


def h200_table(
    *, acoustic: str = "acoustic", vocoder: str = "vocoder", graphs: bool = True
) -> CostTable:
    """The H200 costs under the stage keys ``acoustic`` and ``vocoder``."""
    return CostTable(
        {
            acoustic: H200["acoustic-graphs" if graphs else "acoustic-eager"],
            vocoder: H200["vocoder-v1-fp16-graphs"],
        }
    )


@dataclass
class MeasuredCost:
    """Measured seconds per ``(stage, rows, length)`` shape (exponential moving average,
    weight ``alpha`` for the newest), ``prior`` for shapes not yet measured."""

    prior: CostModel
    alpha: float = 0.2
    _seen: dict[tuple[str, int, int], float] = field(default_factory=dict)

    def cost(self, stage: str, batch: int, length: int) -> float:
        seen = self._seen.get((stage, batch, length))
        return self.prior.cost(stage, batch, length) if seen is None else seen

    def observe(self, stage: str, batch: int, length: int, seconds: float) -> None:
        key = (stage, batch, length)
        old = self._seen.get(key)
        self._seen[key] = seconds if old is None else old + self.alpha * (seconds - old)

    def shapes(self) -> int:
        return len(self._seen)

    def table(self) -> dict[tuple[str, int, int], float]:
        """The measured seconds by ``(stage, rows, length)`` shape (a copy)."""
        return dict(self._seen)
