"""The engine's scheduler on a simulated H200: how many real-time streams, at what latency.

CPU only, no model and no clock: :func:`emostream.engine.sim.simulate` drives the
engine's real :class:`~emostream.engine.scheduling.scheduler.EngineScheduler` with N closed-loop
listeners on a device that takes the H200 cost table's time per batch
(:func:`emostream.engine.costs.h200_table`: the engine's own measurements in the 2026-12-03
probe, confirmed within a few % by the 2026-12-04 run). Two workloads (``--workload``):

* ``loadgen`` (default since 2026-12-04): what the load generator makes the server do,
  recalibrated on the H200 run of 2026-12-04 at 500 streams: its replies as the server
  segments them (``LOADGEN_SEGMENTS_S``: 2-3 segments, 3.78 s a reply), the streamer's
  look-ahead as it ran (``eager``: a reply's second acoustic call went at once, due at
  once, when the first came back: 94 % of acoustic calls urgent, as the engine logged), and
  the engine loop's host work (``H200_HOST_PER_PLAN_S`` + ``H200_HOST_PER_ITEM_S`` a call:
  ~14 % of the loop at 500 streams). At 500 streams it gives 280 acoustic calls/s (run
  282), 1.56 windows per audio second (1.56), the device 99.8 % busy (loop 96-99 %) and no
  late chunk, and late chunks at 750 (as the run); its batches differ (vocoder ~17 rows
  against the run's 11, acoustic ~3 against 3.6-4.2).
* ``single``: the workload before 2026-12-04 (utterances of 2-6 s, one segment each, no
  host work): it put the knee at 850-1,000 where the run found ~500-650.

Either way: each segment's acoustic call, then its windows one after another, the first due
at once and each later one when the listener would run out of audio; a window delivered
after that is a late chunk, an underrun. Simulated time, so the figures leave out the
front ends (their CPU, G2P, Opus: on the run the client's p95 first audio was 214 ms at 500
streams where the engine's part was ~70 ms), the codec and the network.

Plans (``--plans``, default all):

* ``before``: windows as planned (``ChunkSchedule(context=14)``: 14, 21, 31, 46, 48, ...
  frames, 14 frames of context each side) in buckets 32/64/96, batches up to 32 rows (the
  engine process before 2026-12-03: a 48-frame chunk used 48 of a 96-frame row);
* ``filled-32-64-96``: the same buckets, windows filled to them (``ChunkSchedule.buckets``);
* ``after``: windows filled to buckets 32/96 (``ENGINE_BUCKETS``: the engine process now);
* ``after-b64``: ``after`` with batches up to 64 rows;
* ``after-linger``: ``after`` with the acoustic stage's linger (``StageSpec.linger_s``
  40 ms, the engine's default ``EMOSTREAM_ENGINE_ACOUSTIC_LINGER_MS``): under load (the
  device busy >= 70 % of the last 0.2 s) an acoustic batch of few requests is held (the
  vocoder runs meanwhile) so more join it;
* ``after-linger-192``: ``after-linger`` with a 192-frame vocoder bucket and chunks
  growing to 130 planned frames (164 emitted in a 192 window);
* ``after-linger-b64``: ``after-linger`` with batches up to 64 rows in both stages.

Per plan: the vocoder's device ms per second of audio were every batch full (the padding
and context its windows carry); ``knee``, the most streams (step 25) with no late chunk,
per seed; and per level
(``--levels``): late chunks, first audio p50/p95/p99 (the engine's part: the acoustic call's
submission to the first window's delivery), device busy share, device ms per second of
audio by stage, mean rows per vocoder batch, audio seconds per wall second; then the same
level with admission on (``AdmissionPolicy()``, as served): refused starts, late chunks,
first audio p95, audio per wall second; with either, the scheduler's own late count by
stage (``engine_late_by_stage``: calls delivered after their ``need_by``, which admission
refuses on). Writes JSON::

    PYTHONPATH=server .venv/bin/python bench/engine_sim.py \\
        -o bench/results/2026-12-03-simulated-h200-engine-buckets.json
    PYTHONPATH=server .venv/bin/python bench/engine_sim.py --plans after,after-linger \
        --levels 1,250,500,750,850,1000,1250 \
        -o bench/results/2026-12-03-simulated-h200-engine-acoustic-linger.json
    PYTHONPATH=server:. .venv/bin/python bench/engine_sim.py \
        --plans after,after-linger,after-linger-192,after-linger-b64 --levels 1,250,500,750 \
        -o bench/results/2026-12-04-simulated-h200-engine-loadgen.json

(the 2026-12-03 files were made with ``--workload single`` before it existed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any, Literal

from emostream.engine.admission import AdmissionPolicy, decide
from emostream.engine.chunks import ChunkSchedule
from emostream.engine.costs import (
    H100_HOST_PER_ITEM_S,
    H100_HOST_PER_PLAN_S,
    H200_HOST_PER_ITEM_S,
    H200_HOST_PER_PLAN_S,
    h100_lite_table,
    h200_table,
)
from emostream.engine.gpu.batcher import ENGINE_BUCKETS
from emostream.engine.scheduling.load import nearest_rank
from emostream.engine.scheduling.scheduler import EngineScheduler
from emostream.engine.scheduling.work import StageSpec
from emostream.engine.sim import (
    ACOUSTIC,
    ACOUSTIC_STAGE,
    FRAME_S,
    LOADGEN_SEGMENTS_S,
    VOCODER,
    FakeDevice,
    SimConfig,
    SimResult,
    simulate,
)
from emostream.stream.streamer import LOOKAHEAD_LEAD_S

ROWS_32 = (1, 2, 4, 8, 12, 16, 20, 24, 28, 32)
ROWS_64 = ROWS_32 + (40, 48, 56, 64)
LINGER_S = 0.04  # config.Settings.engine_acoustic_linger_ms's default
# name: (vocoder lengths, vocoder batch sizes, fill windows to the lengths, acoustic linger)
PLANS: dict[str, tuple[tuple[int, ...], tuple[int, ...], bool, float]] = {
    "before": ((32, 64, 96), ROWS_32, False, 0.0),
    "filled-32-64-96": ((32, 64, 96), ROWS_32, True, 0.0),
    "after": (ENGINE_BUCKETS.frames, ENGINE_BUCKETS.batch_sizes, True, 0.0),
    "after-b64": (ENGINE_BUCKETS.frames, ROWS_64, True, 0.0),
    "after-linger": (ENGINE_BUCKETS.frames, ENGINE_BUCKETS.batch_sizes, True, LINGER_S),
    "after-linger-192": ((32, 96, 192), ENGINE_BUCKETS.batch_sizes, True, LINGER_S),
    "after-linger-b64": (ENGINE_BUCKETS.frames, ROWS_64, True, LINGER_S),
}
# The light vocoder on an H100 (2026-12-06 run3: costs.H100_LITE, host
# work ~0.20 ms a call): its engine shapes (batcher.LITE_ENGINE_BUCKETS, 29 frames of
# context a side), the acoustic linger as served, and the vocoder linger (off / on).
# "lite-h100-256": a 256-frame bucket and later chunks planned up to 198 frames (what the
# largest bucket holds: the streamer plans that size when the runner has buckets).
# "lite-h100-128": no 48-frame bucket, so a first chunk fills a 128-frame row (99 frames,
# 1.15 s of audio, where 19 frames gave the second window 0.22 s).
LITE_PLANS = {"lite-h100": 0.0, "lite-h100-vlinger": LINGER_S, "lite-h100-256": LINGER_S,
              "lite-h100-128": LINGER_S}  # fmt: skip
PLANS.update({
    "lite-h100": ((48, 128), ROWS_32, True, LINGER_S),
    "lite-h100-vlinger": ((48, 128), ROWS_32, True, LINGER_S),
    "lite-h100-256": ((48, 128, 256), ROWS_32, True, LINGER_S),
    "lite-h100-128": ((128, 256), ROWS_32, True, LINGER_S),
})  # fmt: skip
# The look-ahead's due (--lookahead-due): "sent" (the streamer before the 2026-12-06 run3: due
# at once before the first packet) or "planned" (now: streamer._lookahead_deadline, the
# earlier segments' audio less LOOKAHEAD_LEAD_S)
LookaheadDue = Literal["sent", "planned"]
CHUNK_SIZE = {192: 130, 256: 198}  # planned chunk frames by the largest bucket (else 48)
CONTEXT = 14  # HiFi-GAN V1's frames of context per side
LITE_CONTEXT = 29  # the light vocoder's
WORKLOADS = ("loadgen", "single")


def _schedule(plan: str) -> ChunkSchedule:
    lengths, _, fill, _ = PLANS[plan]
    size = CHUNK_SIZE.get(lengths[-1], ChunkSchedule.size)
    context = LITE_CONTEXT if plan in LITE_PLANS else CONTEXT
    return ChunkSchedule(context=context, buckets=lengths if fill else (), size=size)


def _pct(xs: list[float], q: float) -> float:
    return nearest_rank(sorted(xs), q)


def _lead_s(due: LookaheadDue) -> float:
    return LOOKAHEAD_LEAD_S if due == "planned" else 0.0


def _run(
    plan: str,
    streams: int,
    seconds: float,
    seed: int,
    *,
    admission: bool,
    workload: str,
    lookahead_due: LookaheadDue = "sent",
) -> SimResult:
    lengths, rows, _, linger = PLANS[plan]
    lite = plan in LITE_PLANS
    cost = h100_lite_table() if lite else h200_table()
    acoustic_rows = ACOUSTIC_STAGE.batch_sizes + ((64,) if rows[-1] >= 64 else ())
    acoustic = replace(ACOUSTIC_STAGE, batch_sizes=acoustic_rows, linger_s=linger)
    vocoder = StageSpec(VOCODER, rows, lengths, linger_s=LITE_PLANS.get(plan, 0.0))
    scheduler = EngineScheduler([acoustic, vocoder], cost)
    config = SimConfig(streams=streams, seconds=seconds, schedule=_schedule(plan), seed=seed)
    device = FakeDevice(cost)
    if workload == "loadgen":
        config = replace(
            config,
            segments=LOADGEN_SEGMENTS_S,
            lookahead="eager",
            lookahead_due=lookahead_due,
            lookahead_lead_s=_lead_s(lookahead_due),
        )
        host = (H100_HOST_PER_PLAN_S, H100_HOST_PER_ITEM_S) if lite else (
            H200_HOST_PER_PLAN_S, H200_HOST_PER_ITEM_S)  # fmt: skip
        device = FakeDevice(cost, host_per_plan_s=host[0], host_per_item_s=host[1])
    policy = AdmissionPolicy()
    admit: Callable[[Any], bool] | None = (
        (lambda snap: decide(snap, policy).admitted) if admission else None
    )
    return simulate(config, scheduler, device, admit=admit)


def _figures(res: SimResult) -> dict[str, Any]:
    audio_s = res.audio_frames * FRAME_S
    voc = [p for p in res.plans if p[0] == VOCODER]
    ac = [p for p in res.plans if p[0] == ACOUSTIC]
    streams = len(res.utterances_by_stream)
    return {
        "late_chunks": res.underruns,
        "windows": res.windows,
        "streams_with_late_chunks": len(res.underruns_by_stream),
        "streams_served": streams,
        "refused_starts": res.refused,
        # the engine's own late count by stage (after need_by: what admission refuses on)
        "engine_late_by_stage": dict(sorted(res.late_by_stage.items())),
        "first_audio_ms": {
            "n": len(res.first_audio_s),
            "p50": round(1e3 * _pct(res.first_audio_s, 0.5), 1),
            "p95": round(1e3 * _pct(res.first_audio_s, 0.95), 1),
            "p99": round(1e3 * _pct(res.first_audio_s, 0.99), 1),
            "max": round(1e3 * max(res.first_audio_s, default=0.0), 1),
        },
        "audio_s_per_wall_s": round(audio_s / res.seconds, 1),
        "device_busy": round(res.busy_s / res.seconds, 3),
        "device_ms_per_audio_s": {
            stage: round(1e3 * res.busy_by_stage.get(stage, 0.0) / audio_s, 3) if audio_s else None
            for stage in (VOCODER, ACOUSTIC)
        },
        "vocoder_batches": len(voc),
        "vocoder_rows_mean": round(sum(p[1] for p in voc) / len(voc), 1) if voc else 0.0,
        "vocoder_padded_rows_mean": round(sum(p[2] for p in voc) / len(voc), 1) if voc else 0.0,
        "acoustic_batches": len(ac),
        "acoustic_rows_mean": round(sum(p[1] for p in ac) / len(ac), 2) if ac else 0.0,
        "acoustic_calls_per_s": round(res.acoustic_calls / res.seconds, 1),
        "acoustic_urgent_share": round(res.acoustic_urgent / max(1, res.acoustic_calls), 3),
        "windows_per_audio_s": round(res.windows / audio_s, 3) if audio_s else None,
    }


def _full_batch_ms(plan: str) -> float:
    """Vocoder device ms per second of audio if every batch were full (utterances of 2-6 s,
    uniform): the padding and context the plan's windows carry, whatever the load."""
    lengths, rows, _, _ = PLANS[plan]
    cost = h100_lite_table() if plan in LITE_PLANS else h200_table()
    spec = StageSpec(VOCODER, rows, lengths)
    schedule = _schedule(plan)
    row = {n: cost.cost(VOCODER, spec.max_batch, n) / spec.max_batch for n in lengths}
    frames = range(round(2.0 / FRAME_S), round(6.0 / FRAME_S) + 1)
    device = sum(row[spec.length_bucket(w.hi - w.lo)] for t in frames for w in schedule.windows(t))
    return 1e3 * device / (sum(frames) * FRAME_S)


def _knee(
    plan: str,
    seconds: float,
    seed: int,
    workload: str,
    lookahead_due: LookaheadDue = "sent",
    lo: int = 100,
    hi: int = 2000,
) -> int:
    """The most streams (a multiple of 25) with no late chunk, by bisection (``lo`` has
    none, ``hi`` has some)."""
    while hi - lo > 25:
        mid = (lo + hi) // 2 // 25 * 25
        res = _run(plan, mid, seconds, seed, admission=False, workload=workload,
                   lookahead_due=lookahead_due)  # fmt: skip
        if res.underruns == 0:
            lo = mid
        else:
            hi = mid
    return lo


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plans", default=",".join(PLANS), help="comma list of " + ", ".join(PLANS))
    p.add_argument("--levels", default="250,500,750,1000,1250")
    p.add_argument("--seconds", type=float, default=12.0, help="simulated seconds per run")
    p.add_argument("--seeds", default="0,1,2", help="seeds of the knee search")
    p.add_argument(
        "--workload",
        choices=WORKLOADS,
        default="loadgen",
        help="loadgen: as the load generator's, calibrated 2026-12-04 (module docs)",
    )
    p.add_argument(
        "--lookahead-due",
        choices=("sent", "planned"),
        default="sent",
        help="a look-ahead acoustic call's due (module comments at LookaheadDue)",
    )
    p.add_argument("-o", "--output", help="JSON file to write")
    args = p.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    t0 = time.time()
    out: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "host": {"platform": platform.platform(), "python": platform.python_version()},
        "command": " ".join(["bench/engine_sim.py", *(argv if argv is not None else sys.argv[1:])]),
        "what": "SIMULATED (CPU, no model): the engine scheduler on a fake H200 device; "
        + __doc__.split("\n\n")[1].replace("\n", " "),
        "workload": args.workload,
        "lookahead_due": [args.lookahead_due, _lead_s(args.lookahead_due)],
        "cost_table_s": {k: asdict(v) for k, v in h200_table(acoustic=ACOUSTIC).stages.items()},
        "plans": {},
    }
    for plan in args.plans.split(","):
        lengths, rows, fill, linger = PLANS[plan]
        schedule = _schedule(plan)
        entry: dict[str, Any] = {
            "vocoder_lengths": list(lengths),
            "vocoder_batch_sizes": list(rows),
            "filled": fill,
            "acoustic_linger_s": linger,
            "chunks_of_a_4s_utterance": [w.emitted for w in schedule.windows(344)],
            "windows_of_a_4s_utterance": [w.hi - w.lo for w in schedule.windows(344)],
            "vocoder_ms_per_audio_s_full_batches": round(_full_batch_ms(plan), 3),
            "knee_streams_by_seed": {
                s: _knee(plan, args.seconds, s, args.workload, args.lookahead_due) for s in seeds
            },
            "levels": [],
        }
        for n in levels:
            free, held = (
                _figures(_run(plan, n, args.seconds, 0, admission=admit, workload=args.workload,
                              lookahead_due=args.lookahead_due))
                for admit in (False, True)
            )  # fmt: skip
            entry["levels"].append({"streams": n, "admission_off": free, "admission_on": held})
        out["plans"][plan] = entry
        knees = entry["knee_streams_by_seed"]
        full = entry["vocoder_ms_per_audio_s_full_batches"]
        print(f"{plan:16s} knee {knees}; vocoder {full} ms/audio-s at full batches",
              file=sys.stderr)  # fmt: skip
        for lv in entry["levels"]:
            f, h = lv["admission_off"], lv["admission_on"]
            print(
                f"  {lv['streams']:5d}: late {f['late_chunks']:6d}  first audio p50/p95 "
                f"{f['first_audio_ms']['p50']:5.1f}/{f['first_audio_ms']['p95']:6.1f} ms  "
                f"{f['audio_s_per_wall_s']:6.1f}x  acoustic rows {f['acoustic_rows_mean']:4.1f}  "
                f"vocoder {f['device_ms_per_audio_s'][VOCODER]:.3f} ms/audio-s  "
                f"rows {f['vocoder_rows_mean']:4.1f}  | admission: late {h['late_chunks']:4d} "
                f"p95 {h['first_audio_ms']['p95']:6.1f} ms {h['audio_s_per_wall_s']:6.1f}x "
                f"refused {h['refused_starts']} engine late {h['engine_late_by_stage']}",
                file=sys.stderr,
            )
    out["wall_s"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=2)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
