"""What ``torch.compile`` buys the engine's vocoder, per bucket shape, as JSON (issue 13).

    bash bench/vocoder_compile.sh [ARGS]       # the H200: checkpoint staged, JSON in $OUT
    python bench/vocoder_compile.py --device cpu --smoke --out /tmp/vc.json   # plumbing, CPU

Every figure comes through the engine's own backend
(:class:`emostream.engine.gpu.vocoder_backend.TorchVocoderBackend`, HiFi-GAN V1 in fp16), per
``(batch, frames)`` shape: the engine's buckets (``batcher.ENGINE_BUCKETS``) and 64 x 96:

* ``eager_ms``: fp16 eager, one call on device-resident input;
* ``graph_ms``: the fp16 CUDA graph of that shape (the engine today);
* ``compiled[mode]``: ``EMOSTREAM_VOCODER_COMPILE=mode``: the seconds compiling the shape
  took (``compile_s``: its first call; then 2 warm-up runs and the capture, as in the
  engine), the compiled graph's ``graph_ms``, its speed-up over the plain graph, and the SNR
  of its audio (through ``run``: host copies, as the engine gets it) against fp16 eager and
  fp32 eager on the same mel (``--mel FILE``, a ``[80, T]`` log-mel; default random).

Times are CUDA events over ``--time-s`` of calls, median of 3 (CPU: wall clock, no graphs).
Order: every shape plain first (fast), then each mode of ``--modes`` in turn over the shapes
in priority order (:data:`PRIORITY`: the engine's costliest batches first); a shape whose
compile would end past ``--budget-s`` (estimated from the slowest compile so far in that mode,
or ``--prior-s`` before any) is skipped and listed; each mode gets an equal share of the
budget left when it starts (what one leaves passes to the next: ``--modes default`` alone
gives it everything). The JSON is rewritten after every step
(``in_progress`` names the step under way), so a call cut at its limit still returns what
was done. Inductor's caches (``/tmp/torchinductor_$USER``) stay on the machine while it is
warm: a server started after this run compiles the same shapes from them.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

import torch

from emostream.engine.chunks import snr_db
from emostream.engine.gpu.batcher import ENGINE_BUCKETS
from emostream.engine.gpu.vocoder_backend import TorchVocoderBackend
from emostream.engine.gpu.vocoder_compile import MODES
from emostream.networks.hifigan import HifiGan, HifiGanConfig

Shape = tuple[int, int]
# Compiled first: the 96-frame batches the engine runs most (10-11 rows at 500 streams),
# its largest bucket, the first chunk's 1 x 32, and 64 x 96 (the early research figure).
PRIORITY: tuple[Shape, ...] = ((32, 96), (12, 96), (8, 96), (1, 32), (64, 96), (16, 96), (1, 96))
SMOKE_SHAPES: tuple[Shape, ...] = ((1, 8), (2, 8))
SMOKE_CONFIG = HifiGanConfig(upsample_rates=(4, 4), upsample_kernel_sizes=(8, 8),
                             upsample_initial_channel=16, resblock_kernel_sizes=(3,),
                             resblock_dilation_sizes=((1, 3),))  # fmt: skip
PRIOR_S = {"default": 40.0, "max-autotune-no-cudagraphs": 75.0}  # one shape, before any seen


def engine_shapes() -> list[Shape]:
    """The engine's bucket shapes and 64 x 96, in compile priority order."""
    rest = [s for s in [*ENGINE_BUCKETS.shapes(), (64, 96)] if s not in PRIORITY]
    return [*PRIORITY, *rest]


def parse_shapes(text: str) -> list[Shape]:
    """``"32x96,1x32"`` -> ``[(32, 96), (1, 32)]``."""
    out = []
    for item in text.split(","):
        b, f = item.lower().split("x")
        out.append((int(b), int(f)))
    return out


def key(shape: Shape) -> str:
    return f"{shape[0]}x{shape[1]}"


class Clock:
    """Seconds since the run began, and what is left of the budget."""

    def __init__(self, budget_s: float) -> None:
        self.start = time.monotonic()
        self.budget_s = budget_s

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def fits(self, seconds: float, deadline: float | None = None) -> bool:
        return self.elapsed() + seconds <= min(self.budget_s, deadline or self.budget_s)

    def share(self, parts: int) -> float:
        """The deadline (elapsed seconds) of the next of ``parts`` equal shares of what is left."""
        return self.elapsed() + max(0.0, self.budget_s - self.elapsed()) / max(1, parts)


def time_call(fn: Callable[[], Any], device: torch.device, seconds: float) -> dict[str, Any]:
    """Median and min ms per call of ``fn`` over 3 blocks of about ``seconds`` each."""
    cuda = device.type == "cuda"

    def block(n: int) -> float:
        if cuda:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / n
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return 1000 * (time.perf_counter() - t0) / n

    block(3)  # warm
    n = max(5, min(2000, int(seconds * 1000 / max(block(3), 1e-3))))
    blocks = [block(n) for _ in range(3)]
    return {"ms": round(statistics.median(blocks), 4), "ms_min": round(min(blocks), 4),
            "calls": n}  # fmt: skip


def window_mels(source: npt.NDArray[np.float32], shape: Shape) -> npt.NDArray[np.float32]:
    """``[batch, 80, frames]`` windows cut from a ``[80, T]`` log-mel, a different start each."""
    batch, frames = shape
    reps = -(-(frames * (batch + 1)) // source.shape[1])
    long = np.tile(source, (1, reps))
    step = max(1, (long.shape[1] - frames) // max(1, batch))
    return np.stack([long[:, i * step : i * step + frames] for i in range(batch)]).astype(
        np.float32
    )


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.clock = Clock(args.budget_s)
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        self.out = Path(args.out) if args.out else None
        self.shapes = SMOKE_SHAPES if args.smoke else (
            parse_shapes(args.shapes) if args.shapes else engine_shapes())  # fmt: skip
        self.model = self._model()
        self.hop = self.model.hop_length
        rng = np.random.default_rng(0)
        self.source: npt.NDArray[np.float32] = (
            np.load(args.mel).astype(np.float32) if args.mel
            else rng.normal(-6.0, 2.0, (80, 430)).astype(np.float32)
        )  # fmt: skip
        self.reference: dict[Shape, tuple[npt.NDArray[np.float32], ...]] = {}
        self.rows: dict[str, dict[str, Any]] = {key(s): {} for s in self.shapes}
        self.skipped: list[str] = []
        self.result: dict[str, Any] = {
            "what": "HiFi-GAN V1 per-call ms: fp16 eager, fp16 CUDA graph, compiled + graph",
            "environment": self._environment(),
            "args": vars(args),
            "mel": f"file {Path(args.mel).name}" if args.mel else "random normal(-6, 2)",
            "shapes": self.rows,
            "skipped": self.skipped,
        }

    def _model(self) -> HifiGan:
        a = self.args
        if a.smoke or a.random_weights:
            torch.manual_seed(0)
            return HifiGan(SMOKE_CONFIG if a.smoke else HifiGanConfig()).eval()
        return HifiGan.load("universal", checkpoint=a.checkpoint)

    def _environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                               "device": self.args.device}  # fmt: skip
        if self.cuda:
            env.update(gpu=torch.cuda.get_device_name(self.device), cuda=torch.version.cuda,
                       cudnn_benchmark=bool(torch.backends.cudnn.benchmark))  # fmt: skip
        return env

    def save(self, doing: str | None = None) -> None:
        if doing:
            print(f"[{self.clock.elapsed():6.1f} s] {doing}", flush=True)
        self.result["in_progress"] = doing
        self.result["elapsed_s"] = round(self.clock.elapsed(), 1)
        if self.out is not None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.out.write_text(json.dumps(self.result, indent=1))

    def backend(self, dtype: torch.dtype, graphs: bool, mode: str | None = None
                ) -> TorchVocoderBackend:  # fmt: skip
        return TorchVocoderBackend(copy.deepcopy(self.model), device=str(self.device),
                                   dtype=dtype, cuda_graphs=graphs, hop_length=self.hop,
                                   compile_mode=mode, compile_backend=self.args.backend)  # fmt: skip

    def timed(self, backend: TorchVocoderBackend, shape: Shape) -> dict[str, Any]:
        return time_call(lambda: backend.run_resident(*shape), self.device, self.args.time_s)

    # -- plain: eager and graph, the references for SNR --------------------------------

    def plain(self) -> None:
        half = torch.float16 if self.cuda else torch.float32
        eager = self.backend(half, graphs=False)
        fp32 = self.backend(torch.float32, graphs=False)
        graph = self.backend(half, graphs=True) if self.cuda else None
        for shape in self.shapes:
            self.save(f"plain {key(shape)}")
            row = self.rows[key(shape)]
            mel = window_mels(self.source, shape)
            ref16, ref32 = eager.run(mel).astype(np.float32), fp32.run(mel).astype(np.float32)
            self.reference[shape] = (ref16, ref32)
            row["eager_ms"] = self.timed(eager, shape)
            row["snr_db_eager_fp16_vs_fp32"] = _round_db(snr_db(ref32, ref16))
            if graph is not None:
                graph.warmup([shape])
                row["graph_ms"] = self.timed(graph, shape)
                out = graph.run(mel).astype(np.float32)
                row["snr_db_graph_vs_eager_fp16"] = _round_db(snr_db(ref16, out))
            base = row.get("graph_ms", row["eager_ms"])["ms"]
            if shape[1] == 96:
                row["graph_ms_per_row"] = round(base / shape[0], 4)
        self.save()
        del eager, fp32, graph

    # -- compiled: one mode at a time, shapes in priority order ------------------------

    def compiled(self, mode: str, deadline: float) -> None:
        """Compile, capture and measure the shapes in order while each fits before
        ``deadline`` (elapsed seconds)."""
        half = torch.float16 if self.cuda else torch.float32
        backend = self.backend(half, graphs=self.cuda, mode=mode)
        slowest = self.args.prior_s.get(mode, 60.0)
        seen = False
        for shape in self.shapes:
            estimate = 1.25 * slowest + 3 * self.args.time_s + 2.0
            if not self.clock.fits(estimate, deadline):
                self.skipped.append(f"{mode} {key(shape)}: ~{estimate:.0f} s would pass this "
                                    f"mode's share, {deadline:.0f} s, at "
                                    f"{self.clock.elapsed():.0f} s")  # fmt: skip
                continue
            self.save(f"compile {mode} {key(shape)}")
            t0 = time.monotonic()
            try:
                backend.warmup([shape])  # compile, 2 warm-ups, capture (CPU: compile, 1 run)
            except Exception as exc:  # noqa: BLE001 - recorded, the other modes still run
                self.rows[key(shape)].setdefault("compiled", {})[mode] = {"error": repr(exc)}
                break
            report = backend.compile_report or {}
            name = f"{shape[0]}x{backend.n_mels}x{shape[1]}"
            compile_s = float(report.get("shapes_s", {}).get(name, 0.0))
            slowest = compile_s if not seen else max(slowest, compile_s)
            seen = True
            rest_s = max(0.0, time.monotonic() - t0 - compile_s)
            entry: dict[str, Any] = {"compile_s": round(compile_s, 2),
                                     "warm_up_and_capture_s": round(rest_s, 2)}  # fmt: skip
            timing = self.timed(backend, shape)
            entry["graph_ms" if self.cuda else "eager_ms"] = timing
            row = self.rows[key(shape)]
            base = row.get("graph_ms", row["eager_ms"])["ms"]
            entry["speedup"] = round(base / timing["ms"], 3)
            if shape[1] == 96:
                entry["ms_per_row"] = round(timing["ms"] / shape[0], 4)
            out = backend.run(window_mels(self.source, shape)).astype(np.float32)
            ref16, ref32 = self.reference[shape]
            entry["snr_db_vs_eager_fp16"] = _round_db(snr_db(ref16, out))
            entry["snr_db_vs_fp32"] = _round_db(snr_db(ref32, out))
            row.setdefault("compiled", {})[mode] = entry
            self.save()
        self.result.setdefault("summary", {})[mode] = self.summary(mode)
        self.save()

    def summary(self, mode: str) -> dict[str, Any]:
        done = {k: r["compiled"][mode] for k, r in self.rows.items()
                if "compile_s" in r.get("compiled", {}).get(mode, {})}  # fmt: skip
        engine = {key(s) for s in ENGINE_BUCKETS.shapes()}
        compile_s = [e["compile_s"] for e in done.values()]
        speedups = [e["speedup"] for k, e in done.items() if k.endswith("x96")]
        out: dict[str, Any] = {
            "shapes_compiled": len(done),
            "engine_shapes_compiled": f"{len(engine & done.keys())} of {len(engine)}",
            "compile_s_total": round(sum(compile_s), 1),
            "compile_s_max": round(max(compile_s), 1) if compile_s else None,
            "speedup_96_frames_median": round(statistics.median(speedups), 3) if speedups else None,
            "min_snr_db_vs_eager_fp16": _round_db(
                min((float(e["snr_db_vs_eager_fp16"]) for e in done.values()), default=float("nan"))
            ),
        }
        if compile_s:  # the engine process compiles all its shapes at start-up (cold caches)
            out["engine_start_compile_s_estimate"] = round(
                statistics.mean(compile_s) * len(engine), 0
            )
        return out

    def run(self) -> None:
        self.save("load")
        self.plain()
        modes = self.args.modes  # each gets an equal share of what is left (unused passes on)
        for i, mode in enumerate(modes):
            self.compiled(mode, self.clock.share(len(modes) - i))
        self.save()


def _round_db(value: float) -> float | str | None:
    """dB for JSON: ``"inf"`` (outputs equal), ``None`` (nothing measured), else 2 decimals."""
    if math.isnan(value):
        return None
    return "inf" if value == float("inf") else round(value, 2)


def _prior(text: str) -> dict[str, float]:
    out = dict(PRIOR_S)
    for item in filter(None, text.split(",")):
        mode, seconds = item.split("=")
        out[mode] = float(seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--device", default="cuda")
    p.add_argument("--checkpoint", default=None, help="HiFi-GAN V1 generator (default: packaged)")
    p.add_argument("--random-weights", action="store_true", help="V1-sized, random (no file)")
    p.add_argument("--mel", default=None, help="a [80, T] log-mel .npy (default: random)")
    p.add_argument("--modes", default=",".join(MODES),
                   type=lambda s: [m for m in s.split(",") if m],
                   help=f"compile modes in order (of {', '.join(MODES)})")  # fmt: skip
    p.add_argument("--shapes", default="", help="BxF,... (default: the engine's, priority order)")
    p.add_argument("--backend", default="inductor", help="torch.compile backend (CPU: aot_eager)")
    p.add_argument("--budget-s", type=float, default=540.0, help="skip what would end past this")
    p.add_argument(
        "--prior-s",
        type=_prior,
        default=dict(PRIOR_S),
        help="compile seconds per shape assumed before one is seen: mode=s,...",
    )
    p.add_argument("--time-s", type=float, default=0.25, help="seconds per timed block")
    p.add_argument("--cudnn-benchmark", action="store_true", help="(the engine leaves it off)")
    p.add_argument("--smoke", action="store_true", help="tiny model and shapes (CPU check)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    for mode in args.modes:
        if mode not in MODES:
            p.error(f"unknown mode {mode!r}")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("no CUDA device (use --device cpu --smoke for the plumbing)")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("emostream").setLevel(logging.INFO)  # each shape's compile time
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    bench = Bench(args)
    bench.run()
    print(json.dumps({"summary": bench.result.get("summary"), "skipped": bench.skipped,
                      "elapsed_s": bench.result["elapsed_s"]}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
