"""Build what a ``--device`` needs: the voices' model placement and the runner.

* ``cpu``: every model call on a thread pool (ONNX Runtime for Piper, the EmoStream acoustic
  model and the light vocoder; torch only for ``vocoder=v1``), which admits utterances from
  its measured load (``cpu_admission``, :mod:`emostream.engine.cpu_admission`).
* ``cuda``: the EmoStream acoustic model on the GPU (batched across streams, CUDA graphs per
  bucket shape) and every mel window of every stream vocoded by one batched engine (HiFi-GAN
  V1 in fp16, or with ``vocoder=lite`` the light vocoder in float32; CUDA graphs); Piper
  stays on CPU threads.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from emostream.config import Settings
from emostream.engine.runner import Runner, ThreadRunner
from emostream.voices.catalog import VoiceCatalog

log = logging.getLogger(__name__)


@dataclass
class DeviceSetup:
    runner: Runner
    engine: Any = None  # GpuVocoderEngine on cuda
    report: dict[str, Any] = field(default_factory=dict)
    process: Any = None  # EngineHandle: the engine process this setup started (engine=process)

    async def prepare(self, catalog: VoiceCatalog, *, acoustic_graphs: bool = False) -> None:
        """After the voices load: on cuda with ``acoustic_graphs``, capture the acoustic
        model's CUDA graphs."""
        if not acoustic_graphs or self.engine is None or catalog.family is None:
            return  # nothing to capture (and the CPU path must not import torch)
        from emostream.engine.gpu.runner import GpuRunner
        from emostream.networks.acoustic import AcousticModel

        family = catalog.family
        if isinstance(self.runner, GpuRunner) and isinstance(family.model, AcousticModel):
            await asyncio.to_thread(
                self.runner.prepare_acoustic, family.model, device=family.device
            )

    async def close(self) -> None:
        self.runner.close()
        if self.engine is not None:
            await self.engine.close()
        if self.process is not None:
            await asyncio.to_thread(self.process.stop)


def frontend_settings(settings: Settings) -> Settings:
    """The settings a server process loads its voices with: with ``engine=process`` the
    models run in the engine process (``engine=ray``: on model replicas), so the front
    end's voices stay on cpu (text front end, voice info) with the engine's vocoder choice
    (the stage keys must match)."""
    if settings.engine not in ("process", "ray"):
        return settings
    from emostream.voices.acoustic import find_models_dir
    from emostream.voices.catalog import vocoder_choice

    vocoder = vocoder_choice(settings, find_models_dir(settings.models_dir))
    return replace(settings, device="cpu", vocoder=vocoder)


async def _engine_client(settings: Settings) -> DeviceSetup:
    """Connect to the engine process at ``engine_socket``, or start one."""
    from emostream.engine.admission import AdmissionPolicy
    from emostream.engine.client import EngineClient
    from emostream.engine.process import EngineHandle

    handle = None
    path = settings.engine_socket
    if not path:
        handle = await asyncio.to_thread(EngineHandle.spawn, settings)
        path = handle.socket_path
    policy = AdmissionPolicy(
        first_audio_bound_s=settings.engine_first_audio_bound_ms / 1000.0,
        max_utilization=settings.engine_max_utilization,
        enabled=settings.engine_admission,
    )
    client = EngineClient(path, workers=settings.decode_workers, policy=policy)
    try:
        await client.start()
    except BaseException:
        if handle is not None:
            handle.stop()
        raise
    return DeviceSetup(client, process=handle)


async def setup_device(settings: Settings) -> DeviceSetup:
    """The runner for ``settings.device``; on cuda the engine is started (graphs captured).
    With ``engine=process``: a client of the engine process (started here unless
    ``engine_socket`` names one already running)."""
    if settings.engine == "process":
        return await _engine_client(settings)
    if settings.engine == "ray":  # the cluster's ingress hands create_app its own setup
        raise ValueError("engine=ray runs only inside the Ray Serve app (emostream serve --ray)")
    if settings.engine != "inprocess":
        raise ValueError(f"unknown engine {settings.engine!r}; use inprocess, process or ray")
    if settings.device == "cpu":  # admission from measured load (engine.cpu_admission)
        from emostream.engine.cpu_admission import CpuAdmissionPolicy

        policy = CpuAdmissionPolicy.from_settings(settings)
        return DeviceSetup(ThreadRunner(workers=settings.decode_workers, admission=policy))
    if settings.device != "cuda":
        raise ValueError(f"unknown device {settings.device!r}; use cpu or cuda")
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError("--device cuda needs the [gpu] extra (torch)") from exc
    if not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no CUDA device")
    from emostream.engine.gpu.batcher import LITE_ENGINE_BUCKETS
    from emostream.engine.gpu.runner import GpuRunner, GpuVocoderEngine
    from emostream.engine.gpu.vocoder_backend import backend_for
    from emostream.voices.catalog import vocoder_choice

    # V1 keeps the in-process engine's default shapes; the light vocoder's windows (29
    # frames of context a side: up to 106 frames) need its own (128, 256).
    lite = vocoder_choice(settings) == "lite"
    engine = GpuVocoderEngine(backend_for(settings),
                              buckets=LITE_ENGINE_BUCKETS if lite else None)  # fmt: skip
    await engine.start()
    report = engine.memory_report()
    log.info("GPU vocoder engine ready: %s", report)
    return DeviceSetup(GpuRunner(engine, workers=settings.decode_workers), engine, report)
