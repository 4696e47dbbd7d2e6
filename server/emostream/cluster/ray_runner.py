"""The ingress's runner (``engine=ray``): a stream's model calls, all on one model replica.

:class:`RayRunner` is a :class:`~emostream.engine.runner.Runner` like the thread pool or
the engine-process client: the streamer, the WebSocket and HTTP layers do not change. It
forwards ``acoustic`` and ``decode`` to the model deployment (:mod:`emostream.cluster.model`)
through Serve deployment handles, and is :class:`~emostream.engine.runner.StreamAffine`:

* ``bind`` opens the stream's **session** on a replica Serve picks (power of two choices on
  ongoing requests, i.e. on streams), learns the replica's id, and pins every later call of
  the stream to it (:mod:`emostream.cluster.affinity`). Acoustic calls carry no stream id
  in the Runner seam; the stream is found through a context variable set when the stream's
  first step (and so its look-ahead task) starts.
* If the session fails (the replica died, its node was lost), the stream's output raises
  :class:`ReplicaLost` at once, even while it waits for text: the client gets ``error``, the
  other streams go on, and Serve stops routing to the dead replica and starts another.

It is also :class:`~emostream.engine.admission.Admits`: the load each session reports
(streams / the replica's soft cap) is kept per replica; when ``max_replicas`` replicas are
known and every one is at its cap, a new utterance gets the documented degradation
(``ray_degrade``): ``lite`` (admitted, its session opened on the lite deployment, ``started``
says ``degraded: "lite"``) or ``busy`` (refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.engine.admission import Decision, Verdict
from emostream.engine.chunks import PadSide
from emostream.engine.devices import DeviceSetup
from emostream.voices.base import Controls, Latent, Voice
from emostream.voices.cloning.registry import is_cloned_id

log = logging.getLogger(__name__)

MODEL = "EmoStreamModel"
LITE = "EmoStreamLite"
_current_stream: ContextVar[str] = ContextVar("emostream_ray_stream", default="")
_FRESH_S = 5.0  # a replica's reported load counts for admission this long


class ReplicaLost(RuntimeError):
    """The model replica holding a stream went away mid-stream."""


@dataclass
class _Placement:
    handle: Any  # DeploymentHandle of the model (or lite) deployment
    replica: str
    node: str
    lost: asyncio.Future[str]
    session: Any = None  # DeploymentResponseGenerator
    watcher: asyncio.Task[None] | None = None
    closing: bool = False  # the stream ended: the session's end is not a loss


@dataclass
class ReplicaLoad:
    replica: str
    node: str
    deployment: str
    streams: int
    cap: int
    streams_total: int
    seen_at: float
    pid: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class RayRunner:
    """See the module docs. ``model`` / ``lite``: Serve deployment handles (``lite`` None: no
    lighter path, full replicas mean ``busy``); ``max_replicas``: the model deployment's
    autoscaling bound; ``is_stock``: whether a voice id is a stock voice (sent by id only)."""

    def __init__(
        self,
        model: Any,
        *,
        lite: Any = None,
        max_replicas: int = 1,
        is_stock: Callable[[str], bool] = lambda _id: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._model = model
        self._lite = lite
        self.max_replicas = max(1, max_replicas)
        self._is_stock = is_stock
        self._clock = clock
        self._streams: dict[str, _Placement] = {}
        self.loads: dict[str, ReplicaLoad] = {}
        self._admits: list[float] = []
        self.lost = 0

    # -- Runner ------------------------------------------------------------------------------

    def _ref(self, voice: Voice) -> Any:
        from emostream.cluster.model import VoiceRef

        return VoiceRef.of(voice, stock=self._is_stock(voice.info.id))

    def _target(self, stream: str) -> tuple[Any, dict[str, Any]]:
        placed = self._streams.get(stream) if stream else None
        if placed is None:
            return self._model, {}
        if placed.lost.done():
            raise ReplicaLost(placed.lost.result())
        return placed.handle, {"stream": stream, "replica": placed.replica}

    def _due_in(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self._clock()

    def _need(self, need_by: float | None) -> dict[str, float]:
        """``need_by`` as the replica's ``need_in`` keyword (seconds from now), if given."""
        return {} if need_by is None else {"need_in": need_by - self._clock()}

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        handle, pin = self._target(_current_stream.get())
        latent: Latent = await handle.acoustic.remote(
            self._ref(voice), text, controls, self._due_in(deadline), **pin, **self._need(need_by)
        )
        return latent

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> npt.NDArray[np.float32]:
        handle, pin = self._target(stream_id)
        audio: npt.NDArray[np.float32] = await handle.decode.remote(
            self._ref(voice), np.ascontiguousarray(frames), pad_side, self._due_in(deadline),
            **pin, **self._need(need_by),
        )  # fmt: skip
        return audio

    def cancel(self, stream_id: str) -> None:
        """Nothing here: the stream's session is closed when its bound output ends."""

    def close(self) -> None:
        for placed in list(self._streams.values()):
            self._end(placed)
        self._streams.clear()

    # -- admission ---------------------------------------------------------------------------

    def admit(self) -> Decision:
        now = self._clock()
        self._admits = [t for t in self._admits if t > now - 1.0]
        fresh = [
            r for r in self.loads.values() if r.deployment == MODEL and now - r.seen_at < _FRESH_S
        ]
        reserved = sum(1 for t in self._admits if all(t > r.seen_at for r in fresh))
        room = sum(max(0, r.cap - r.streams) for r in fresh) - reserved
        full = len(fresh) >= self.max_replicas and room <= 0
        used = sum(r.streams for r in fresh) / max(1, sum(r.cap for r in fresh))
        if not full:
            self._admits.append(now)
            return Decision(Verdict.ADMIT, "", used, 0.0)
        verdict = Verdict.LITE if self._lite is not None else Verdict.REFUSE
        return Decision(verdict, "replicas_full", used, 0.0)

    def note(self, report: dict[str, Any], deployment: str) -> None:
        """A replica's load (from a session's first answer or heartbeat)."""
        self.loads[str(report["replica"])] = ReplicaLoad(
            replica=str(report["replica"]),
            node=str(report.get("node", "")),
            deployment=deployment,
            streams=int(report.get("streams", 0)),
            cap=int(report.get("cap", 1)),
            streams_total=int(report.get("streams_total", 0)),
            seen_at=self._clock(),
            pid=int(report.get("pid", 0)),
        )

    def forget(self, replica: str) -> None:
        self.loads.pop(replica, None)

    # -- placement ---------------------------------------------------------------------------

    async def _open(self, stream: str, degraded: str) -> _Placement:
        lite = bool(degraded) and self._lite is not None
        handle, name = (self._lite, LITE) if lite else (self._model, MODEL)
        first: dict[str, Any] = {}
        session: Any = None
        for force in (lite, True):  # a replica that says full is asked again, with force
            session = handle.options(stream=True).session.remote(stream, force=force)
            first = await session.__anext__()
            if not first.get("refused"):
                break
            self.note(first, name)
            session.cancel()
        self.note(first, name)
        lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        placed = _Placement(handle, str(first["replica"]), str(first["node"]), lost, session)
        placed.watcher = asyncio.create_task(self._watch(placed, name))
        return placed

    async def _watch(self, placed: _Placement, name: str) -> None:
        why = "the model replica closed the stream's session"
        try:
            async for report in placed.session:
                self.note(report, name)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the replica or its node is gone
            if placed.closing:  # cancelled by _end (Serve's RequestCancelledError)
                return
            why = f"model replica {placed.replica} lost ({type(exc).__name__})"
            self.forget(placed.replica)
            self.lost += 1
            log.warning("%s", why)
        if not placed.lost.done():
            placed.lost.set_result(why)

    def _end(self, placed: _Placement) -> None:
        placed.closing = True
        load = self.loads.get(placed.replica)
        if load is not None:  # until its next report: one stream fewer
            load.streams = max(0, load.streams - 1)
        if placed.watcher is not None:
            placed.watcher.cancel()
        if placed.session is not None:
            with contextlib.suppress(Exception):
                placed.session.cancel()

    async def bind(
        self, stream_id: str, output: AsyncIterator[Any], *, degraded: str = ""
    ) -> AsyncIterator[Any]:
        """Place the stream, then pass ``output`` through; raises :class:`ReplicaLost` as soon
        as the replica is lost (see the module docs)."""
        placed = await self._open(stream_id, degraded)
        self._streams[stream_id] = placed
        step: asyncio.Future[Any] | None = None
        try:
            while True:
                token = _current_stream.set(stream_id)  # copied into the step's task
                try:
                    step = asyncio.ensure_future(output.__anext__())
                finally:
                    _current_stream.reset(token)
                await asyncio.wait({step, placed.lost}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    raise ReplicaLost(placed.lost.result())
                try:
                    item = step.result()
                except StopAsyncIteration:
                    return
                step = None
                yield item
        finally:
            if step is not None and not step.done():
                step.cancel()
                with contextlib.suppress(BaseException):
                    await step
            self._streams.pop(stream_id, None)
            self._end(placed)
            aclose = getattr(output, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    def placements(self) -> dict[str, str]:
        """Open streams by replica id (for the ops routes)."""
        return {s: p.replica for s, p in self._streams.items()}


def is_stock(voice_id: str) -> bool:
    """Stock voices go by id; clones and inline references carry their embedding."""
    return not (is_cloned_id(voice_id) or voice_id.startswith("ref_"))


async def ray_device(settings: Settings) -> DeviceSetup:
    """The ingress's runner: handles to the model (and lite) deployments of this replica's
    Serve application (``serve run`` names it ``default``, ``serve --ray`` ``ray_app``),
    found by name."""
    from ray import serve

    app = serve.get_replica_context().app_name
    model = serve.get_deployment_handle(MODEL, app_name=app)
    lite = None
    if settings.ray_degrade == "lite":
        lite = serve.get_deployment_handle(LITE, app_name=app)
    runner = RayRunner(model, lite=lite, max_replicas=settings.ray_max_replicas,
                       is_stock=is_stock)  # fmt: skip
    return DeviceSetup(runner)
