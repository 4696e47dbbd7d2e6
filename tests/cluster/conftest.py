"""A local two-node Ray cluster on this machine, with EmoStream deployed on Ray Serve.

The head and one worker node are started by the test (``ray.cluster_utils.Cluster``), each
with one CPU and its own custom resources (one model replica and one ingress replica fit on
each node), with a Redis (append-only file) as the shared voice registry. Module-scoped:
starting it costs tens of seconds on the 2-core CI machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emostream.config import Settings
from tests.conftest import Loopback, free_port
from tests.voices.voice_fixtures import RedisServer

NODE_RESOURCES = {"emostream_model": 1.0, "emostream_ingress": 1.0}


@dataclass
class RayServed(Loopback):
    port: int
    settings: Settings
    redis: RedisServer
    cluster: object


def cluster_settings(port: int, data_dir: Path, redis_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": port,
        "data_dir": str(data_dir),
        "voice_registry_url": redis_url,
        "ray_ingress_replicas": 2,
        "ray_min_replicas": 2,
        "ray_max_replicas": 2,
        "ray_model_cpus": 0.0,
        "ray_model_resources": "emostream_model=1",
        "ray_ingress_resources": "emostream_ingress=1",
        "ray_replica_max_streams": 4,
        "ray_target_streams": 2.0,
        "decode_workers": 1,
        "phrase_cache_bytes": 0,
        "log_level": "warning",
        "drain_timeout_s": 2.0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@contextlib.contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[object]:
    """Head + ``nodes - 1`` workers, one CPU each; shut down on exit."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "resources": NODE_RESOURCES, "object_store_memory": 100 << 20}
    # Serve's proxy (on the head only, HeadOnly) would send every connection to the head's
    # ingress replica while it has room; the test wants both ingress replicas reachable.
    # Replicas and handles report ongoing requests to the autoscaler every second (default
    # 10 s), so a test sees it scale within its time.
    env = {"RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING": "0",
           "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
           "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1"}  # fmt: skip
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node)
        ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
        yield cluster
    finally:
        # Serve's client side first: the deployment handles this process made push metrics
        # from background threads, which would go on failing (and logging tracebacks, which
        # parse source with ast in Python 3.11, racing the tests' own ast.parse) once the
        # cluster is gone. Replicas drain for drain_timeout_s (2 s here).
        from ray import serve

        t0 = time.monotonic()
        with contextlib.suppress(Exception):
            serve.shutdown()
        print(f"serve.shutdown took {time.monotonic() - t0:.1f} s")
        ray.shutdown()
        cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def ray_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayServed]:
    pytest.importorskip("ray")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (apt-get install -y redis-server); CI installs it")
    workdir = tmp_path_factory.mktemp("ray-redis")
    redis = RedisServer(binary, free_port(), workdir, persistent=True)
    redis.start()
    try:
        with ray_cluster(2) as cluster:
            from ray import serve

            from emostream.cluster.deploy import build_app

            port = free_port()
            settings = cluster_settings(port, workdir / "data", redis.url)
            serve.start(http_options={"host": "127.0.0.1", "port": port},
                        proxy_location="HeadOnly")  # fmt: skip
            t0 = time.monotonic()
            serve.run(build_app(settings), name=settings.ray_app, route_prefix="/")
            print(f"emostream on a 2-node Ray cluster in {time.monotonic() - t0:.1f} s")
            yield RayServed(port, settings, redis, cluster)
    finally:
        redis.stop()


@pytest.fixture(scope="session")
def speech_wav() -> bytes:
    """A 16 kHz WAV reference clip of real speech (see tests.voices.voice_fixtures.speech)."""
    from tests.voices.voice_fixtures import LIBRIVOX, _piper, to_bytes

    path = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"
    if path.exists():
        import soundfile as sf

        audio, rate = sf.read(path, dtype="float32")
        return to_bytes(audio, int(rate))
    audio, rate = _piper("The family of Dashwood had long been settled in Sussex.")
    return to_bytes(audio, rate)
