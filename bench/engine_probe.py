"""Watch a loaded ``emostream serve`` (engine=process) from the side: bench/gpu_engine_probe.sh.

``watch``: find the server's processes (the ``emostream serve`` main process, its engine
process ``python -m emostream.engine.process`` and its uvicorn workers), then

* every ``--sample-s``: CPU % of the engine process, of its loop thread (the main thread),
  its thread count, of the workers (sum and busiest), of the load generator's processes and
  of the whole host, to ``NAME-procs.csv``;
* ``--start-after`` seconds after the engine is found (or after ``--after-line`` appears in
  ``--log``): ``py-spy record`` of the engine (``--rate``, ``--record-s``, speedscope, idle
  threads included, not pausing it) and, at half the rate, of one worker (idle threads
  included: ``NAME-worker``) and of another worker with ``--gil`` (only the thread holding the
  GIL: who the event loop waits for, ``NAME-worker-gil``); two ``py-spy dump`` of the engine
  (one with native frames) and one of the worker, to ``NAME-dump.txt``.

It ends when the engine process exits or after ``--max-s``. py-spy needs ptrace rights over
the server's processes: root with CAP_SYS_PTRACE, or (Yama ptrace_scope 1) targets that
called ``prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`` (gpu_engine_probe.sh's sitecustomize).

``summarize FILE.speedscope.json``: the top frames by self and by inclusive share of the
samples, per thread with samples (the engine's loop thread first): where its time goes.

    python bench/engine_probe.py watch --out /tmp/res --name probe --start-after 20
    python bench/engine_probe.py summarize /tmp/res/probe-engine.speedscope.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ENGINE_MARK = "emostream.engine.process"


def _cmdline(p: Any) -> str:
    try:
        return " ".join(p.cmdline())
    except Exception:  # noqa: BLE001 - gone or not ours
        return ""


def find(psutil: Any) -> dict[str, Any]:
    """The engine process, the serve main process and its workers, the load generators."""
    engine = serve = None
    loadgen = []
    for p in psutil.process_iter():
        try:
            args = p.cmdline()
        except psutil.Error:
            continue
        module = args[args.index("-m") + 1] if "-m" in args[:-1] else ""
        if module == ENGINE_MARK and "--socket" in args:
            engine = p
        elif module == "emostream" and "serve" in args:
            serve = p
        elif module == "loadtest":  # its --server-cmd names "emostream serve": not that
            loadgen.append(p)
    workers = []
    if serve is not None:
        try:
            workers = [c for c in serve.children() if "spawn_main" in _cmdline(c)]
        except psutil.Error:
            workers = []
    loadgen_all = []
    for p in loadgen:
        loadgen_all.append(p)
        try:
            loadgen_all += p.children(recursive=True)
        except psutil.Error:
            pass
    return {"engine": engine, "serve": serve, "workers": workers, "loadgen": loadgen_all}


class Sampler(threading.Thread):
    """CPU shares every ``every`` seconds to a CSV (see the module docs)."""

    COLUMNS = ("t_s", "engine_cpu", "engine_loop_thread_cpu", "engine_threads", "workers",
               "workers_cpu_sum", "workers_cpu_max", "loadgen_cpu", "host_cpu",
               "load1")  # fmt: skip

    def __init__(self, psutil: Any, path: Path, every: float, t0: float) -> None:
        super().__init__(daemon=True)
        self.psutil, self.path, self.every, self.t0 = psutil, path, every, t0
        self.stop = threading.Event()

    def _cpu(self, procs: list[Any]) -> list[float]:
        out = []
        for p in procs:
            try:
                out.append(p.cpu_percent(None))
            except self.psutil.Error:
                out.append(0.0)
        return out

    def run(self) -> None:
        ps = self.psutil
        with self.path.open("w") as f:
            f.write(",".join(self.COLUMNS) + "\n")
            seen = find(ps)
            known: dict[int, Any] = {}
            thread_cpu: tuple[float, float] | None = None
            ps.cpu_percent(None)
            while not self.stop.wait(self.every):
                seen = find(ps) if not seen["engine"] or not seen["workers"] else seen
                procs = {"engine": [seen["engine"]] if seen["engine"] else [],
                         "workers": seen["workers"], "loadgen": find(ps)["loadgen"]}  # fmt: skip
                # psutil's cpu_percent(None) is since the previous call on the same object.
                for group in procs.values():
                    for i, p in enumerate(group):
                        group[i] = known.setdefault(p.pid, p)
                eng = self._cpu(procs["engine"])
                wrk = self._cpu(procs["workers"])
                lg = self._cpu(procs["loadgen"])
                loop_cpu, n_threads = 0.0, 0
                if seen["engine"] is not None:
                    try:
                        threads = seen["engine"].threads()
                        n_threads = len(threads)
                        main = next((t for t in threads if t.id == seen["engine"].pid), None)
                        now = time.monotonic()
                        if main is not None:
                            used = main.user_time + main.system_time
                            if thread_cpu is not None:
                                loop_cpu = 100.0 * (used - thread_cpu[1]) / (now - thread_cpu[0])
                            thread_cpu = (now, used)
                    except ps.Error:
                        pass
                row = (round(time.monotonic() - self.t0, 2), sum(eng), round(loop_cpu, 1),
                       n_threads, len(wrk), round(sum(wrk), 1), max(wrk, default=0.0),
                       round(sum(lg), 1), ps.cpu_percent(None), os.getloadavg()[0])  # fmt: skip
                f.write(",".join(str(x) for x in row) + "\n")
                f.flush()
                if seen["engine"] is not None and not seen["engine"].is_running():
                    return


def _run(cmd: list[str], out: Any, timeout: float) -> None:
    out.write(f"\n===== {time.strftime('%H:%M:%S')} $ {' '.join(cmd)}\n")
    out.flush()
    try:
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
        out.write(r.stdout)
        if r.returncode:
            out.write(f"[exit {r.returncode}] {r.stderr[-4000:]}\n")
    except (OSError, subprocess.TimeoutExpired) as exc:
        out.write(f"[failed] {exc}\n")
    out.flush()


def watch(args: argparse.Namespace) -> int:
    import psutil

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    deadline = t0 + args.max_s
    found = find(psutil)
    while found["engine"] is None and time.monotonic() < deadline:
        time.sleep(0.5)
        found = find(psutil)
    if found["engine"] is None:
        print("engine_probe: no engine process found", file=sys.stderr)
        return 1
    engine = found["engine"]
    print(f"engine_probe: engine pid {engine.pid}; serve pid "
          f"{found['serve'].pid if found['serve'] else '?'}", flush=True)  # fmt: skip
    sampler = Sampler(psutil, out / f"{args.name}-procs.csv", args.sample_s, t0)
    sampler.start()
    # When to start recording: after a line in the log (the server is ready and quiet) + delay.
    start = time.monotonic() + args.start_after
    if args.log and args.after_line:
        while time.monotonic() < deadline and engine.is_running():
            try:
                if args.after_line in Path(args.log).read_text(errors="replace"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        start = time.monotonic() + args.start_after
    while time.monotonic() < start and engine.is_running():
        time.sleep(0.2)
    found = find(psutil)
    worker = found["workers"][0] if found["workers"] else None
    spy = args.pyspy
    dump_path = out / f"{args.name}-dump.txt"
    procs: list[subprocess.Popen[bytes]] = []
    with dump_path.open("w") as dump, contextlib.ExitStack() as files:
        dump.write(f"engine pid {engine.pid}; worker pid {worker.pid if worker else '-'}; "
                   f"workers {[w.pid for w in found['workers']]}\n")  # fmt: skip
        scope = Path("/proc/sys/kernel/yama/ptrace_scope")
        dump.write(f"{scope}: {scope.read_text().strip() if scope.exists() else 'absent'}\n")
        if not spy or not Path(spy).exists():
            dump.write(f"no py-spy at {spy!r}: no profiles\n")
        else:
            print(f"engine_probe: recording {args.record_s} s", flush=True)
            half = max(1, args.rate // 2)
            targets = [("engine", engine, args.rate, "--idle")]
            if worker is not None:
                targets.append(("worker", worker, half, "--idle"))
            if len(found["workers"]) > 1:
                targets.append(("worker-gil", found["workers"][1], half, "--gil"))
            for side, proc, rate, which in targets:
                err = files.enter_context((out / f"{args.name}-pyspy-{side}.err").open("w"))
                cmd = [spy, "record", "--format", "speedscope", which, "--nonblocking",
                       "--duration", str(args.record_s), "--rate", str(rate),
                       "--pid", str(proc.pid),
                       "--output", str(out / f"{args.name}-{side}.speedscope.json")]  # fmt: skip
                procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err))
            time.sleep(args.record_s / 3)
            _run([spy, "dump", "--pid", str(engine.pid)], dump, 20)
            if worker is not None:
                _run([spy, "dump", "--pid", str(worker.pid)], dump, 20)
            time.sleep(args.record_s / 3)
            _run([spy, "dump", "--native", "--pid", str(engine.pid)], dump, 30)
        for rec in procs:
            try:
                rec.wait(timeout=args.record_s + 60)
            except subprocess.TimeoutExpired:
                rec.kill()
        files.close()
        for side in ("engine", "worker", "worker-gil"):
            err_path = out / f"{args.name}-pyspy-{side}.err"
            if err_path.exists():
                text = err_path.read_text(errors="replace").strip()
                if text:
                    dump.write(f"\n===== py-spy record ({side}) stderr\n{text[-4000:]}\n")
                err_path.unlink()
    while engine.is_running() and time.monotonic() < deadline and not args.no_wait:
        time.sleep(0.5)
    sampler.stop.set()
    sampler.join(5)
    return 0


def summarize(args: argparse.Namespace) -> int:
    data = json.loads(Path(args.file).read_text())
    frames = data["shared"]["frames"]

    def name(i: int) -> str:
        f = frames[i]
        where = f.get("file", "")
        short = "/".join(where.split("/")[-2:]) if where else ""
        return f"{f['name']} ({short}:{f.get('line', '')})"

    profiles = [p for p in data["profiles"] if p.get("samples")]
    profiles.sort(key=lambda p: ("MainThread" not in p.get("name", ""), -len(p["samples"])))
    for prof in profiles[: args.threads]:
        samples, weights = prof["samples"], prof.get("weights") or [1] * len(prof["samples"])
        total = float(sum(weights)) or 1.0
        own: Counter[int] = Counter()
        incl: Counter[int] = Counter()
        for stack, w in zip(samples, weights, strict=False):
            if not stack:
                continue
            own[stack[-1]] += w
            for i in set(stack):
                incl[i] += w
        print(f"== {prof.get('name', '?')}: {len(samples)} samples")
        print("   self:")
        for i, w in own.most_common(args.top):
            print(f"   {100 * w / total:5.1f}%  {name(i)}")
        print("   inclusive (frames in every sample left out):")
        shown = [(i, w) for i, w in incl.most_common() if w < 0.995 * total]
        for i, w in shown[: args.top]:
            print(f"   {100 * w / total:5.1f}%  {name(i)}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("watch")
    w.add_argument("--out", required=True)
    w.add_argument("--name", default="probe")
    w.add_argument("--pyspy", default="")
    w.add_argument("--log", default="", help="wait for --after-line in this file first")
    w.add_argument("--after-line", default="")
    w.add_argument("--start-after", type=float, default=20.0)
    w.add_argument("--record-s", type=int, default=15)
    w.add_argument("--rate", type=int, default=200)
    w.add_argument("--sample-s", type=float, default=1.0)
    w.add_argument("--max-s", type=float, default=600.0)
    w.add_argument("--no-wait", action="store_true", help="end after the recordings")
    s = sub.add_parser("summarize")
    s.add_argument("file")
    s.add_argument("--top", type=int, default=25)
    s.add_argument("--threads", type=int, default=3)
    args = p.parse_args()
    return watch(args) if args.cmd == "watch" else summarize(args)


if __name__ == "__main__":
    sys.exit(main())
