"""Refuse rather than degrade on CPU: offer twice the measured capacity and report what the
admitted streams heard and how fast the extra ones were told ``busy``.

Each step is its own server on a free loopback port, started and stopped by
``bench/loadtest.sh`` (voice ``af_heart``, closed loop paced to playback, live synthesis):

1. capacity (skipped with ``--capacity N``): ``--find-max`` with admission off
   (``EMOSTREAM_CPU_ADMISSION=0``): the most streams with p95 first audio <= 200 ms, no
   underruns and no errors;
2. twice that with admission on (the default settings; refused clients wait the
   ``retry_after_ms`` they are given, then start their next reply);
3. twice that with admission off (``--no-baseline`` skips it): what every stream heard without.

It prints, per run: utterances admitted (``started``) and refused (``busy``), the time from
``start`` to the refusal (client clock, p50/p95), the admitted utterances' first audio
(p50/p95) and underruns, audio delivered per wall second; and the goal's verdict (some
refused, refusals within ``--refusal-p95-ms``, admitted p95 first audio <= ``--p95-goal-ms``,
no underrun). Writes ``OUTDIR/DATE-cpuN-admission.json`` (the summary) and each run's
load-test report beside it (``…-capacity``, ``…-on``, ``…-off``: ``.json``, ``.png``, server
log).

    PY=.venv/bin/python bench/cpu_admission.py                  # ~15 min on 2 cores
    PY=.venv/bin/python bench/cpu_admission.py --capacity 32    # ~6 min
    PY=.venv/bin/python bench/cpu_admission.py --capacity 2 --duration 5 --no-baseline \\
        --outdir /tmp/adm                                       # a check that it runs

Run it on a quiet machine: the server and the load generator share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_loadtest(outdir: Path, name: str, admission: bool, args: list[str]) -> dict[str, Any]:
    """One ``bench/loadtest.sh`` run (its own server) with CPU admission on or off."""
    env = {**os.environ, "EMOSTREAM_CPU_ADMISSION": "1" if admission else "0"}
    cmd = ["bash", str(ROOT / "bench" / "loadtest.sh"), str(outdir), name, *args]
    print("==", " ".join(cmd[1:]), f"(EMOSTREAM_CPU_ADMISSION={env['EMOSTREAM_CPU_ADMISSION']})",
          flush=True)  # fmt: skip
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)
    report: dict[str, Any] = json.loads((outdir / f"{name}.json").read_text(encoding="utf-8"))
    return report


def summarize(level: dict[str, Any]) -> dict[str, Any]:
    """The figures of one load level that this benchmark is about."""
    adm = level.get("admission") or {}
    refused = adm.get("refused", 0)
    other_errors = dict(level["errors"])
    for code, n in (adm.get("refused_by_code") or {}).items():
        other_errors[code] = other_errors.get(code, 0) - n
    return {
        "offered_streams": int(level["level"]),
        "utterances": level["utterances"],
        "admitted": adm.get("started", level["utterances_ok"]),
        "refused": refused,
        "refused_by_code": adm.get("refused_by_code", {}),
        "start_to_refusal_ms": adm.get("time_to_refusal_ms"),
        "retry_after_ms": adm.get("retry_after_ms"),
        "admitted_first_audio_ms": level["first_audio_ms"],
        "admitted_first_audio_ms_after_5s": level.get("first_audio_ms_after_5s"),
        "underruns": level["underruns"]["count"],
        "underruns_per_stream_minute": level["underruns"]["per_stream_minute"],
        "other_errors": {k: v for k, v in sorted(other_errors.items()) if v},
        "audio_s_per_wall_s": level["rtf"]["aggregate_audio_s_per_wall_s"],
        "server_cpu_percent_mean": (level["server"].get("cpu_percent") or {}).get("mean"),
        "server_refusals_by_reason": level["server"].get("admission_refusals_by_reason"),
        "loadavg_1min_before": level["client"].get("loadavg_1min_before"),
        "client_loop_lag_p99_ms": level["client"]["loop_lag_ms"].get("p99"),
    }


def verdict(s: dict[str, Any], *, p95_goal_ms: float, refusal_p95_ms: float) -> dict[str, Any]:
    """The goal: the extra streams get busy quickly, the admitted ones keep their bound."""
    fa = s["admitted_first_audio_ms"]["p95"]
    refusal = (s["start_to_refusal_ms"] or {}).get("p95")
    checks = {
        "some_refused": s["refused"] > 0,
        "refused_quickly": refusal is not None and refusal <= refusal_p95_ms,
        "admitted_p95_first_audio": fa is not None and fa <= p95_goal_ms,
        "no_underruns": s["underruns"] == 0,
        "no_other_errors": not s["other_errors"],
    }
    return {**checks, "ok": all(checks.values())}


def line(name: str, s: dict[str, Any]) -> str:
    fa, t = s["admitted_first_audio_ms"], s["start_to_refusal_ms"] or {}
    return (
        f"{name:>14}: {s['offered_streams']} streams | utterances {s['utterances']}: admitted "
        f"{s['admitted']}, refused {s['refused']} {s['refused_by_code'] or ''}"
        f" (start -> busy p50 {t.get('p50')} p95 {t.get('p95')} ms)"
        f" | admitted first audio p50 {fa['p50']} p95 {fa['p95']} ms, underruns"
        f" {s['underruns']} | audio/wall {s['audio_s_per_wall_s']}"
        f" | other errors {s['other_errors'] or '-'}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--capacity", type=int, default=None,
                   help="streams the server holds without admission (default: find it)")  # fmt: skip
    p.add_argument("--factor", type=float, default=2.0, help="offered load x capacity")
    p.add_argument("--duration", type=float, default=60.0, help="measured s per 2x run")
    p.add_argument("--find-duration", type=float, default=30.0, help="measured s per find level")
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--ramp", type=float, default=3.0, help="stagger the streams' starts over s")
    p.add_argument("--procs", type=int, default=1, help="load-generator processes")
    p.add_argument("--p95-goal-ms", type=float, default=250.0)
    p.add_argument("--refusal-p95-ms", type=float, default=100.0)
    p.add_argument("--no-baseline", action="store_true", help="skip the run without admission")
    p.add_argument("--outdir", default=str(ROOT / "bench" / "results"))
    p.add_argument("--name", default=None, help="default: DATE-cpuN-admission")
    args = p.parse_args(argv)
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    name = args.name or f"{datetime.now(UTC):%Y-%m-%d}-cpu{cores}-admission"
    common = ["--voice", args.voice, "--settle-s", "0", "-q"]
    given = argv if argv is not None else sys.argv[1:]
    goal = {"admitted_p95_first_audio_ms_max": args.p95_goal_ms, "underruns": 0,
            "start_to_refusal_p95_ms_max": args.refusal_p95_ms}  # fmt: skip
    summary: dict[str, Any] = {
        "tool": "bench/cpu_admission.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["bench/cpu_admission.py", *given]),
        "cores": cores,
        "voice": args.voice,
        "goal": goal,
    }
    capacity = args.capacity
    if capacity is None:
        found = run_loadtest(outdir, f"{name}-capacity", False, [
            *common, "--find-max", "--duration", str(args.find_duration), "--settle-s", "3",
            "--ramp", str(args.ramp), "--procs", str(args.procs)])  # fmt: skip
        capacity = int(found["find_max"]["largest_good"] or 0)
        summary["capacity_run"] = {"report": f"{name}-capacity.json", **found["find_max"]}
        if capacity < 1:
            print("no good level found: nothing to double", file=sys.stderr)
            return 1
    summary["capacity"] = capacity
    offered = max(1, round(capacity * args.factor))
    level = [*common, "--streams", str(offered), "--duration", str(args.duration),
             "--ramp", str(args.ramp), "--procs", str(args.procs)]  # fmt: skip
    runs = [("on", True)] + ([] if args.no_baseline else [("off", False)])
    for tag, admission in runs:
        report = run_loadtest(outdir, f"{name}-{tag}", admission, level)
        s = summarize(report["levels"][0])
        s["verdict"] = verdict(s, p95_goal_ms=args.p95_goal_ms, refusal_p95_ms=args.refusal_p95_ms)
        summary[f"admission_{tag}"] = {"report": f"{name}-{tag}.json", **s}
    out = outdir / f"{name}.json"
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"capacity {capacity} streams; offered {offered}")
    for tag, _ in runs:
        s = summary[f"admission_{tag}"]
        checks = ", ".join(k for k, v in s["verdict"].items() if k != "ok" and not v)
        print(line(f"admission {tag}", s))
        print(f"{'':>14}  goal {'met' if s['verdict']['ok'] else 'NOT met: ' + checks}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
