"""What a batch costs on the device: cost models for the engine scheduler
(:mod:`emostream.engine.scheduling.scheduler`).

* :class:`LinearCost` / :class:`CostTable`: ``fixed + rows x (per_row + length x per_cell)``
  per stage.
* :data:`H200` and :func:`h200_table`: one H200 (the fake device of the scheduling tests and
  of ``bench/engine_sim.py``): HiFi-GAN V1 fp16 and the acoustic model as CUDA graphs (or
  eager), each a least-squares fit of what the engine measured per shape (2026-12-02/03).
* :data:`H200_HOST_PER_PLAN_S` / :data:`H200_HOST_PER_ITEM_S`: the engine loop's host work
  outside the stages' calls (intake, schedule, padding, delivery, publishing the load; one
  thread, so the device idles meanwhile), fit on the H200 run of 2026-12-04.
* :data:`H100_LITE` and :func:`h100_lite_table`: one H100 with the light vocoder (the run
  of 2026-12-06), with :data:`H100_HOST_PER_ITEM_S`.
* :class:`MeasuredCost`: the engine's own timings per ``(stage, rows, length)`` shape
  (a moving average), the prior for shapes not yet run.

The tables' figures, their fits and their files: docs/measurements.md, "Figures behind the
code".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from emostream.engine.scheduling.work import CostModel


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
    "vocoder-v1-fp16-graphs": LinearCost(1.31e-3, per_cell_s=5.98e-6),
    "acoustic-graphs": LinearCost(2.67e-3, per_row_s=0.245e-3),
    "acoustic-eager": LinearCost(10.2e-3, per_row_s=0.16e-3),
}

H200_HOST_PER_PLAN_S = 0.19e-3
H200_HOST_PER_ITEM_S = 0.11e-3

# One H100 with the light vocoder (2026-12-06): the engine's own cost per shape, fit; the
# loop's host work there scaled with calls, not batches (how: docs/measurements.md,
# "Figures behind the code").
H100_LITE: dict[str, LinearCost] = {
    "vocoder-lite-graphs": LinearCost(0.70e-3, per_cell_s=0.53e-6),
    "acoustic-graphs": LinearCost(3.40e-3, per_row_s=0.259e-3),
}
H100_HOST_PER_PLAN_S = 0.0
H100_HOST_PER_ITEM_S = 0.20e-3


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


def h100_lite_table(*, acoustic: str = "acoustic", vocoder: str = "vocoder") -> CostTable:
    """The H100 costs with the light vocoder under the stage keys ``acoustic`` and
    ``vocoder``."""
    return CostTable(
        {acoustic: H100_LITE["acoustic-graphs"], vocoder: H100_LITE["vocoder-lite-graphs"]}
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
