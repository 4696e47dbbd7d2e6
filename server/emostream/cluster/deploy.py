"""The Ray Serve application: ingress replicas in front, model replicas behind them.

``emostream serve --ray`` (or ``serve run emostream.cluster.deploy:app_builder`` with the
settings as arguments) deploys, under the application name ``ray_app``:

* **EmoStreamIngress** (``ray_ingress_replicas``): the unchanged Starlette app
  (:func:`emostream.transport.app.create_app`, same WebSocket and HTTP API, same auth and
  limits) with ``engine=ray``: its runner is :class:`~emostream.cluster.ray_runner.RayRunner`.
  Serve's HTTP proxy spreads connections over these replicas; each also answers
  ``/cluster/healthz`` and ``/cluster/metrics`` (:mod:`emostream.cluster.ops`).
* **EmoStreamModel**: :class:`~emostream.cluster.model.ModelReplica` with the device's own
  runner, autoscaled by Serve between ``ray_min_replicas`` and ``ray_max_replicas`` on
  ongoing requests per replica with target ``ray_target_streams`` (each stream holds one
  session request on its replica, so this is streams per replica), routed by
  :class:`~emostream.cluster.affinity.StreamAffinityRouter`.
* **EmoStreamLite** (only with ``ray_degrade=lite``): the same replica class on CPU with the
  light vocoder, for streams admitted while every model replica is full.

Clones must be shared: set ``voice_registry_url`` to a Redis with persistence
(:mod:`emostream.voices.cloning.registry_redis`); with the SQLite default each ingress has its own.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, replace
from typing import Any

from emostream.cluster.affinity import StreamAffinityRouter
from emostream.cluster.model import ModelReplica, replica_identity
from emostream.cluster.ops import IngressHeader, cluster_routes
from emostream.cluster.ray_runner import LITE, MODEL, ray_device
from emostream.config import Settings

log = logging.getLogger(__name__)

INGRESS = "EmoStreamIngress"


def parse_resources(spec: str) -> dict[str, float]:
    """``"a=1,b=0.5"`` -> ``{"a": 1.0, "b": 0.5}`` (Ray custom resources)."""
    out: dict[str, float] = {}
    for part in spec.split(","):
        if part.strip():
            name, _, amount = part.partition("=")
            out[name.strip()] = float(amount or 1)
    return out


def replica_settings(settings: Settings, *, lite: bool = False) -> dict[str, Any]:
    """A model replica's settings: its own local runner; lite: CPU, the light vocoder."""
    mine = replace(settings, engine=settings.ray_replica_engine, engine_socket="")
    if lite:
        mine = replace(mine, device="cpu", vocoder="lite", engine="inprocess")
    return asdict(mine)


class IngressReplica:
    """An ingress replica: the single-host app with ``engine=ray``. The model handles are
    constructor arguments so that Serve deploys those deployments with this one; the app's
    runner finds them by name (:func:`emostream.cluster.ray_runner.ray_device`)."""

    def __init__(self, settings: dict[str, Any], model: Any, lite: Any = None) -> None:
        self.settings = replace(Settings(**settings), engine="ray")
        self.handles = (model, lite)
        logging.basicConfig(level=self.settings.log_level.upper())

    def __serve_build_asgi_app__(self) -> Any:
        from emostream.transport.app import create_app

        app = create_app(self.settings, device=ray_device)
        replica, _ = replica_identity()
        from ray import serve

        app.state.ray_app = serve.get_replica_context().app_name
        app.state.ray_replica = replica
        app.router.routes[0:0] = cluster_routes()
        return IngressHeader(app, replica)


def build_app(settings: Settings) -> Any:
    """The Serve application for ``settings`` (see the module docs)."""
    from ray import serve
    from ray.serve.config import RequestRouterConfig

    deployment: Any = serve.deployment  # (its stubs type a class argument as a function's)
    router: Any = RequestRouterConfig
    cap = settings.ray_replica_max_streams
    model_options: dict[str, Any] = {
        "autoscaling_config": {
            "min_replicas": settings.ray_min_replicas,
            "initial_replicas": settings.ray_min_replicas,
            "max_replicas": settings.ray_max_replicas,
            "target_ongoing_requests": settings.ray_target_streams,
            "upscale_delay_s": settings.ray_upscale_delay_s,
            "downscale_delay_s": settings.ray_downscale_delay_s,
            "look_back_period_s": settings.ray_autoscale_window_s,
        },
        # sessions (one per stream) plus their in-flight calls
        "max_ongoing_requests": cap * 4 + 16,
        "ray_actor_options": {
            "num_cpus": settings.ray_model_cpus,
            "num_gpus": settings.ray_model_gpus,
            "resources": parse_resources(settings.ray_model_resources),
        },
        "request_router_config": router(request_router_class=StreamAffinityRouter),
        "health_check_period_s": 2.0,
        "health_check_timeout_s": 60.0,
        "graceful_shutdown_timeout_s": settings.drain_timeout_s,
    }
    model = deployment(ModelReplica).options(name=MODEL, **model_options)
    lite = None
    if settings.ray_degrade == "lite":
        lite_options = {**model_options, "ray_actor_options": {"num_cpus": settings.ray_model_cpus}}
        lite_options["autoscaling_config"] = {**model_options["autoscaling_config"],
                                              "min_replicas": 1, "initial_replicas": 1}  # fmt: skip
        lite = deployment(ModelReplica).options(name=LITE, **lite_options)
    elif settings.ray_degrade != "busy":
        raise ValueError(f"ray_degrade {settings.ray_degrade!r}: use busy or lite")
    ingress_cls = serve.ingress()(IngressReplica)
    ingress = deployment(ingress_cls).options(
        name=INGRESS,
        num_replicas=settings.ray_ingress_replicas,
        max_ongoing_requests=settings.max_streams + 64,  # a WebSocket is one, for its life
        ray_actor_options={"num_cpus": 0,
                           "resources": parse_resources(settings.ray_ingress_resources)},
        graceful_shutdown_timeout_s=settings.drain_timeout_s,
    )  # fmt: skip
    ingress_settings = asdict(replace(settings, engine="ray", engine_socket=""))
    return ingress.bind(
        ingress_settings,
        model.bind(replica_settings(settings)),
        lite.bind(replica_settings(settings, lite=True)) if lite is not None else None,
    )


def app_builder(args: dict[str, str]) -> Any:
    """``serve run emostream.cluster.deploy:app_builder ray_max_replicas=8 ...``: the
    settings from ``EMOSTREAM_*`` and these arguments (setting names, lower case)."""
    env = {**os.environ, **{f"EMOSTREAM_{k.upper()}": str(v) for k, v in args.items()}}
    return build_app(Settings.from_env(env))


def serve_ray(settings: Settings) -> int:
    """``emostream serve --ray``: join the Ray cluster at ``ray_address`` (or start a local
    one), start Serve's HTTP proxy on ``host:port`` and run the application until stopped."""
    import ray
    from ray import serve

    ray.init(address=settings.ray_address or None)
    serve.start(http_options={"host": settings.host, "port": settings.port})
    log.info("emostream on Ray Serve: http://%s:%d (application %r)", settings.host,
             settings.port, settings.ray_app)  # fmt: skip
    serve.run(build_app(settings), name=settings.ray_app, route_prefix="/", blocking=True)
    return 0
