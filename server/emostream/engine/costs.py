"""What a batch costs on the device: cost models for the engine scheduler
(:mod:`emostream.engine.scheduling.scheduler`).

* :class:`LinearCost` / :class:`CostTable`: ``fixed + rows x (per_row + length x per_cell)``
  per stage.
* :data:`H200` and :func:`h200_table`: the figures measured on one H200 (the fake device of
  the scheduling tests and of ``bench/engine_sim.py``):

  - HiFi-GAN V1, fp16, a CUDA graph per shape, as the engine process's execute step costs
    (padding, host->device, replay, device->host, slicing): ~1.31 ms per call + ~5.98 us per
    padded frame-row, the least-squares fit of the 29 shapes the engine measured in the
    400-stream probe (``bench/results/2026-12-03-h200-engine-probe-engine-stats.jsonl``,
    ``cost_ms``: 1 x 32 1.80 ms, 16 x 96 9.93, 32 x 32 6.98, 32 x 96 19.99; the fit is
    within 10 % from 8 rows up and under by up to 0.5 ms at 1-4 rows). The backend alone
    measured ~1.3 ms + ~5.7 us (``bench/results/2026-12-02-h200-vocoder.md``, run1);
  - the acoustic model (FS2 v0.4) as CUDA graphs, the same probe: 2.86 / 3.81 / 4.64 / 6.41
    / 10.58 ms at batch 1 / 4 / 8 / 16 / 32 (a mean over lengths), i.e. ~2.67 ms + ~0.245 ms
    per request (the backend alone: 2.14 ms at 1, 10.94 at 32; ``bench/acoustic_graphs.py``);
    eager: 10.38 ms at batch 1, 15.45 ms at 32, i.e. ~10.2 ms + ~0.16 ms per request
    (``bench/results/2026-12-02-h200-loadtest.md``).

* :data:`H200_HOST_PER_PLAN_S` / :data:`H200_HOST_PER_ITEM_S`: the engine loop's host work
  outside the stages' calls (intake, schedule, padding, delivery, publishing the load; one
  thread, so the device idles meanwhile), the least-squares fit of the loaded 5-s intervals
  of the H200 run of 2026-12-04 (``bench/results/2026-12-04-h200-engine-run1*-logs.tar.gz``,
  ``engine stats``: busy x interval - run against batches and items; within ~20 % at 500
  streams, 0.61-0.71 s of every 5 s): ~0.19 ms a batch + ~0.11 ms a call. The same run's
  ``cost_ms`` agree with :data:`H200` within a few % (acoustic 2.72 ms + 0.257 ms a
  request; vocoder 32 x 96 20.2 ms, 16 x 96 10.1, 1 x 96 2.1).
* :data:`H100_LITE` and :func:`h100_lite_table`: one H100 with the light vocoder (the run
  of 2026-12-06; the figures at the table), with :data:`H100_HOST_PER_ITEM_S`.
* :class:`MeasuredCost`: the engine's own timings per ``(stage, rows, length)`` shape
  (a moving average), the prior for shapes not yet run.
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

# One H100 with the light vocoder (2026-12-06 run3, `bench/gpu_engine.sh` with
# EMOSTREAM_VOCODER=lite; the engine's `cost_ms` after the sweep,
# bench/results/2026-12-06-h100-engine-run3-lite-*): the light vocoder's CUDA graphs
# ~0.70 ms a call + ~0.53 us a padded frame-row (1 x 128 0.85 ms, 32 x 128 2.82 ms; the fit
# within 12 %), the acoustic graphs ~3.40 ms + ~0.259 ms a request (1: 3.69, 32: 11.84; 5 %).
# The loop's host work there scaled with calls, not batches: ~0.20 ms a call (intake,
# delivery, padding; the loaded 5-s intervals' busy x interval - run, least squares).
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
