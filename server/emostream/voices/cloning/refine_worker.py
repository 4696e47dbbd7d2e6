"""Where a refinement runs: a low-priority worker process (default), or a thread.

Refining a clone renders its probe sentences a few times (~14 s of speech per pass; 4-12 s of
CPU for a 10 s clip on the 2-core machine), which must not take first-audio time from the
streams the server is speaking. :class:`ProcessBackend` runs it in a child process of its own
(``python -m emostream.voices.cloning.refine_worker``) that:

* runs in Linux's ``SCHED_IDLE`` class (and niced 10): it gets only CPU time no other task
  wants, and a waking server thread takes its core at once (``bench/clone_refine.py`` on the
  loaded 2-core machine: other streams' p95 first audio within 20 ms while it refines, where a
  niced-only worker added ~0.2 s and a thread of the server 0.3-0.8 s; docs/voices.md); it
  keeps to one thread
  (ONNX Runtime intra-op 1, BLAS/OpenMP 1). A machine whose CPUs are never idle refines slowly,
  up to ``timeout_s``;
* loads the CPU path itself (the ONNX acoustic model, the light vocoder, the project's GE2E):
  nothing of the server's is shared or locked, and a GPU server refines on its CPU;
* is started on the first refinement and ends after ``idle_s`` without one (its ~0.3 GB are
  given back); one that passes ``timeout_s`` on a job, or dies, is killed and started afresh
  for the next.

The parent talks to it over its stdin/stdout: length-prefixed pickles of :class:`RefineTask`
one way and results the other (the child is this package, run by the server: no foreign
input is unpickled). :class:`ThreadBackend` runs the same work on one thread of the server
process with the server's own voices (tests, and hosts where a second process does not fit).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import pickle
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.voices.base import Controls
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine import RefineError, Refinement, TimbreRefiner

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
_HEADER = struct.Struct("<I")


class RefineFailure(Exception):
    """The server could not refine (not the clip's fault): ``timeout``, ``worker_died``,
    ``refine_unavailable`` (the worker could not load the model), ``internal``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RefineTask:
    """One refinement: the clone's GE2E ``embedding`` (as registered), its clip (mono
    ``clip_audio`` at ``clip_rate``) and the rate it was recorded at (``source_rate``)."""

    embedding: FloatArray
    clip_audio: FloatArray
    clip_rate: int
    source_rate: int


class Family(Protocol):
    """What a refinement needs of :class:`~emostream.voices.acoustic.AcousticFamily`."""

    def clone(self, voice_id: str, embedding: FloatArray, *, description: str,
              timbre: FloatArray | None = None) -> Any: ...  # fmt: skip


class RefineBackend(Protocol):
    """Runs one refinement at a time. Raises :class:`RefineError` (the clip) or
    :class:`RefineFailure` (the server)."""

    async def refine(self, task: RefineTask) -> Refinement: ...

    async def aclose(self) -> None: ...


def run_task(
    family: Family, task: RefineTask, *, refiner: TimbreRefiner | None = None
) -> Refinement:
    """``task`` refined with ``family``'s clone of its embedding (blocking)."""

    def render(text: str, timbre: FloatArray) -> FloatArray:
        voice = family.clone("clone_refining", task.embedding, description="refining",
                             timbre=timbre)  # fmt: skip
        audio: FloatArray = voice.decode(voice.acoustic(text, Controls()).frames)
        return audio

    return (refiner or TimbreRefiner()).refine(
        render, task.clip_audio, task.clip_rate, source_rate=task.source_rate
    )


class ThreadBackend:
    """Refinements on one thread of this process, with ``family`` (a CPU family: its voices
    decode) and ``refiner``."""

    def __init__(self, family: Family, *, refiner: TimbreRefiner | None = None) -> None:
        self.family = family
        self.refiner = refiner or TimbreRefiner()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="refine")

    async def refine(self, task: RefineTask) -> Refinement:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, lambda: run_task(self.family, task, refiner=self.refiner)
        )

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def worker_settings(settings: Settings) -> dict[str, Any]:
    """The settings a worker loads its CPU voices with (JSON-ready)."""
    return {
        "models_dir": settings.models_dir,
        "clone_gain": settings.clone_gain,
        "vocoder": "auto" if settings.device == "cuda" else settings.vocoder,  # lite on CPU
        "vocoder_checkpoint": settings.vocoder_checkpoint,
        "clone_match_bandwidth": settings.clone_match_bandwidth,
    }  # fmt: skip


def refiner_for(settings: Settings, encoder: SpeakerEncoder) -> TimbreRefiner:
    """The refiner a server with ``settings`` uses (``encoder``: GE2E for its figures)."""
    return TimbreRefiner(embed=encoder.embed_utterance,
                         match_bandwidth=settings.clone_match_bandwidth)  # fmt: skip


class ProcessBackend:
    """Refinements in a child process (see the module docs). ``settings``: the server's;
    ``nice``: the child's niceness increment; ``sched_idle``: in SCHED_IDLE; ``timeout_s``:
    the most one job may take (start-up included); ``idle_s``: how long an idle child is
    kept."""

    def __init__(
        self,
        settings: Settings,
        *,
        nice: int = 10,
        sched_idle: bool = True,
        timeout_s: float = 120.0,
        idle_s: float = 60.0,
    ) -> None:
        self.config = worker_settings(settings)
        self.nice = nice
        self.sched_idle = sched_idle
        self.timeout_s = timeout_s
        self.idle_s = idle_s
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._idle: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        self.started = 0  # children started (for tests and logs)

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    async def refine(self, task: RefineTask) -> Refinement:
        async with self._lock:
            if self._idle is not None:
                self._idle.cancel()
            try:
                return await asyncio.wait_for(self._run(task), self.timeout_s)
            except TimeoutError:
                await self._kill()
                raise RefineFailure(
                    "timeout", f"refinement took over {self.timeout_s:g} s and was stopped"
                ) from None
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError):
                await self._kill()
                raise RefineFailure("worker_died", "the refinement worker process died") from None
            except asyncio.CancelledError:  # mid-job: its answer would come to the next one
                await self._kill()
                raise
            finally:
                if self._proc is not None:
                    self._idle = asyncio.get_running_loop().call_later(self.idle_s, self._idle_stop)

    def _idle_stop(self) -> None:
        task = asyncio.ensure_future(self._stop_idle())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, task: RefineTask) -> Refinement:
        proc = self._proc if self._proc is not None and self._proc.returncode is None else None
        if proc is None:
            proc = await self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_frame(task))
        await proc.stdin.drain()
        reply = await _read(proc.stdout)
        if reply[0] == "ok":
            result: Refinement = reply[1]
            return result
        if reply[0] == "refuse":
            raise RefineError(reply[1], reply[2])
        raise RefineFailure("internal", f"refinement failed: {reply[1]}")

    async def _start(self) -> asyncio.subprocess.Process:
        root = str(Path(__file__).resolve().parents[3])  # the folder holding emostream/
        path = os.environ.get("PYTHONPATH", "")
        env = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONPATH": root + (os.pathsep + path if path else ""),
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "emostream.voices.cloning.refine_worker",
            json.dumps({**self.config, "nice": self.nice, "sched_idle": self.sched_idle}),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env,
        )  # fmt: skip
        self._proc = proc
        self.started += 1
        assert proc.stdout is not None
        ready = await _read(proc.stdout)
        if ready[0] != "ready":
            await self._kill()
            raise RefineFailure("refine_unavailable", f"the refinement worker could not load "
                                f"the model: {ready[1]}")  # fmt: skip
        log.info("refinement worker started (pid %d, nice %d)", proc.pid, self.nice)
        return proc

    async def _stop_idle(self) -> None:
        if self._lock.locked():
            return
        async with self._lock:
            if self._proc is not None:
                log.info("refinement worker idle for %g s: stopped", self.idle_s)
                await self._stop()

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        assert proc.stdin is not None
        proc.stdin.close()  # the child ends at EOF
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()

    async def aclose(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        await self._stop()


def _frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def _read(stream: asyncio.StreamReader) -> Any:
    (size,) = _HEADER.unpack(await stream.readexactly(_HEADER.size))
    return pickle.loads(await stream.readexactly(size))


# -- the child ------------------------------------------------------------------------------


def _read_blocking(stream: BinaryIO) -> Any | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


def _send(stream: BinaryIO, obj: object) -> None:
    stream.write(_frame(obj))
    stream.flush()


def main(argv: list[str] | None = None) -> int:
    """The worker: load the CPU voices, then answer tasks on stdin until it closes."""
    config = json.loads((argv or sys.argv[1:])[0])
    os.nice(int(config.pop("nice", 10)))
    if config.pop("sched_idle", True):  # run only on CPU time no normal task wants
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError) as exc:  # not Linux: the niceness alone
            print(f"refinement worker: no SCHED_IDLE ({exc}); nice only", file=sys.stderr)
    out = os.fdopen(os.dup(1), "wb")  # the protocol; stray prints go to stderr instead
    os.dup2(2, 1)
    logging.basicConfig(level=logging.WARNING)
    try:
        from emostream.voices.catalog import load_acoustic_family

        settings = Settings(acoustic="on", device="cpu", cpu_threads=1, embedded_voice=False,
                            **config)  # fmt: skip
        family = load_acoustic_family(settings)
        if family is None:
            raise RuntimeError("no acoustic model")
        encoder = SpeakerEncoder(threads=1)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which logs it
        _send(out, ("error", f"{type(exc).__name__}: {exc}"))
        return 1
    refiner = refiner_for(settings, encoder)
    _send(out, ("ready", os.getpid()))
    stdin = sys.stdin.buffer
    while (task := _read_blocking(stdin)) is not None:
        try:
            _send(out, ("ok", run_task(family, task, refiner=refiner)))
        except RefineError as exc:
            _send(out, ("refuse", exc.code, exc.message))
        except Exception as exc:
            log.exception("refinement failed")
            _send(out, ("error", f"{type(exc).__name__}: {exc}"))
    with contextlib.suppress(Exception):
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
