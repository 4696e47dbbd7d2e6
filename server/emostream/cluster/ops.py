"""Operations on the cluster: who answered, and health and metrics per replica and in all.

Each ingress replica keeps the single-host routes (``/healthz``, ``/metrics``: that replica's
own streams and errors) and adds:

* ``GET /cluster/healthz``: the Serve application's deployments and their replicas by state
  (from Serve's controller), the model replicas' loads as their sessions last reported them
  (streams, cap, node, streams served), and how many this ingress saw lost. 200 while the
  model deployment has a running replica, else 503.
* ``GET /cluster/metrics``: the same as Prometheus gauges
  (``emostream_cluster_replicas{deployment,state}``,
  ``emostream_cluster_replica_streams{deployment,replica,node}`` and ``..._cap``,
  ``emostream_cluster_replica_streams_served``, ``emostream_cluster_replicas_lost``).

:class:`IngressHeader` names the ingress replica that answered a request or accepted a
WebSocket (``X-EmoStream-Ingress``), so a client, a load balancer's log or a test can tell
them apart.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emostream.cluster.ray_runner import MODEL, RayRunner, ReplicaLoad

HEADER = b"x-emostream-ingress"


class IngressHeader:
    """ASGI middleware: every HTTP response and WebSocket accept names this replica."""

    def __init__(self, app: ASGIApp, replica: str) -> None:
        self.app = app
        self.value = replica.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return

        async def named(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                headers = list(message.get("headers") or [])
                headers.append((HEADER, self.value))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, named)


def _deployments(app_name: str) -> dict[str, dict[str, int]]:
    """``{deployment: {state: replicas}}`` of the Serve application, from the controller."""
    from ray import serve

    status = serve.status()
    app = status.applications.get(app_name)
    if app is None:
        return {}
    return {
        name: {str(state): int(n) for state, n in dep.replica_states.items()}
        for name, dep in app.deployments.items()
    }


def _runner(request: Request) -> RayRunner | None:
    runner = getattr(getattr(request.app.state, "service", None), "runner", None)
    return runner if isinstance(runner, RayRunner) else None


def _load(r: ReplicaLoad, now: float) -> dict[str, Any]:
    return {
        "replica": r.replica,
        "deployment": r.deployment,
        "node": r.node,
        "pid": r.pid,
        "streams": r.streams,
        "cap": r.cap,
        "streams_served": r.streams_total,
        "seen_s_ago": round(now - r.seen_at, 3),
    }


async def cluster_view(request: Request) -> dict[str, Any]:
    state = request.app.state
    deployments = await asyncio.to_thread(_deployments, state.ray_app)
    runner = _runner(request)
    now = time.monotonic()
    loads = [] if runner is None else sorted(runner.loads.values(), key=lambda r: r.replica)
    return {
        "app": state.ray_app,
        "ingress": state.ray_replica,
        "deployments": deployments,
        "model_replicas": [_load(r, now) for r in loads],
        "open_streams": {} if runner is None else runner.placements(),
        "replicas_lost": 0 if runner is None else runner.lost,
    }


async def cluster_healthz(request: Request) -> JSONResponse:
    view = await cluster_view(request)
    running = view["deployments"].get(MODEL, {}).get("RUNNING", 0)
    view["status"] = "ok" if running > 0 else "no_model_replica"
    return JSONResponse(view, status_code=200 if running > 0 else 503)


async def cluster_metrics(request: Request) -> Response:
    view = await cluster_view(request)
    reg = CollectorRegistry()
    replicas = Gauge("emostream_cluster_replicas", "Replicas by deployment and state",
                     ["deployment", "state"], registry=reg)  # fmt: skip
    for dep, states in view["deployments"].items():
        for state, n in states.items():
            replicas.labels(dep, state).set(n)
    labels = ["deployment", "replica", "node"]
    streams = Gauge("emostream_cluster_replica_streams", "Open streams on a model replica",
                    labels, registry=reg)  # fmt: skip
    cap = Gauge("emostream_cluster_replica_cap", "A model replica's stream cap", labels,
                registry=reg)  # fmt: skip
    served = Gauge("emostream_cluster_replica_streams_served", "Streams a replica served",
                   labels, registry=reg)  # fmt: skip
    for r in view["model_replicas"]:
        key = (r["deployment"], r["replica"], r["node"])
        streams.labels(*key).set(r["streams"])
        cap.labels(*key).set(r["cap"])
        served.labels(*key).set(r["streams_served"])
    lost = Gauge("emostream_cluster_replicas_lost", "Sessions this ingress saw fail",
                 registry=reg)  # fmt: skip
    lost.set(view["replicas_lost"])
    return Response(generate_latest(reg), media_type="text/plain; version=0.0.4")


def cluster_routes() -> list[Route]:
    return [
        Route("/cluster/healthz", cluster_healthz, methods=["GET"]),
        Route("/cluster/metrics", cluster_metrics, methods=["GET"]),
    ]
