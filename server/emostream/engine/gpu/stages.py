"""This device's runners for the stages the voices declare (the engine process's GPU path).

:func:`device_stages` is what the engine process (:mod:`emostream.engine.process`) hands
:func:`~emostream.engine.core.collect_stages` as overrides: on cuda, the batched CUDA-graph
vocoder and (``acoustic_graphs``) the acoustic model as CUDA graphs, every graph in one
pool; nothing on cpu. Torch and the GPU modules are imported only on cuda.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from emostream.config import Settings
from emostream.voices.base import BatchedStage, stage_of

log = logging.getLogger(__name__)


def device_stages(settings: Settings, voices: Iterable[object]) -> dict[str, BatchedStage]:
    """This device's runners for declared stage keys: on cuda the vocoder key runs in the
    batched fp16 CUDA-graph backend (the GPU path's bucket shapes) and, with
    ``acoustic_graphs``, the acoustic model as CUDA graphs. Nothing on cpu.

    Every graph of both models goes into ONE graph memory pool, captured largest first
    (:mod:`emostream.engine.gpu.graph_pool`; safe because
    :class:`~emostream.engine.core.EngineCore` runs one stage call at a time on its thread
    and each call copies its results to the host before it returns). What each part holds
    is logged at info as ``engine gpu memory {json}``."""
    if settings.device != "cuda":
        return {}
    from emostream.engine.gpu.acoustic_graphs import BATCHES, GraphedAcoustic
    from emostream.engine.gpu.batcher import engine_buckets
    from emostream.engine.gpu.graph_pool import CudaGraphDevice, GraphJob, GraphPool
    from emostream.engine.gpu.vocoder_backend import backend_for
    from emostream.networks.mel import silence_level
    from emostream.voices.catalog import VOCODER_KEYS, vocoder_choice

    device = CudaGraphDevice("cuda")
    memory: dict[str, Any] = {"at_start_mib": _mib(device.memory())}  # context, catalog models
    pool = GraphPool(device)
    choice = vocoder_choice(settings)
    spec = engine_buckets(choice, settings.vocoder_frames())
    backend = backend_for(settings, pool=pool)
    jobs: list[GraphJob] = backend.graph_jobs(spec.shapes())
    weights = {"vocoder": _param_bytes(backend.model)}
    key = VOCODER_KEYS[choice]
    out = {key: BatchedStage(key, "decode", backend.run, spec.batch_sizes, spec.frames,
                             silence_level())}  # fmt: skip
    if settings.acoustic_graphs:
        for voice in voices:
            stage = stage_of(voice, "acoustic")
            if stage is None or stage.model is None or stage.key in out:
                continue
            model = stage.model
            graphed = GraphedAcoustic(model, device="cuda", pool=pool)
            jobs += graphed.graph_jobs()
            weights["acoustic"] = weights.get("acoustic", 0) + _param_bytes(model)
            out[stage.key] = BatchedStage(stage.key, "acoustic", graphed, BATCHES,
                                          size=stage.size)  # fmt: skip
    compiled = getattr(backend, "compile_report", None)
    if compiled is not None:  # vocoder_compile: seconds per shape (graph_jobs compiled them)
        memory["vocoder_compile"] = compiled
    memory["weights_mib"] = {k: round(v / (1 << 20), 1) for k, v in weights.items()}
    memory["before_graphs_mib"] = _mib(device.memory())
    report = pool.capture_all(jobs)
    memory["graphs"] = report.as_dict()
    log.info("engine: %d graphs in one pool (%s); engine gpu memory %s", pool.captured,
             ", ".join(f"{k} {p.graphs}" for k, p in report.parts.items()),
             json.dumps(memory, separators=(",", ":")))  # fmt: skip
    return out


def _mib(figures: Mapping[str, int]) -> dict[str, float]:
    return {k: round(v / (1 << 20), 1) for k, v in figures.items()}


def _param_bytes(model: Any) -> int:
    """Bytes of a torch module's parameters and buffers (0 for anything else)."""
    params = getattr(model, "parameters", None)
    buffers = getattr(model, "buffers", None)
    if params is None or buffers is None:
        return 0
    tensors = [*params(), *buffers()]
    return sum(int(t.numel() * t.element_size()) for t in tensors)
