"""A network's weights from either file the project writes: a torch checkpoint (training's
``model_fp16.pt``, ``last.pt``) or the shipped ONNX export (:mod:`emostream.networks.onnx_weights`:
weights under their ``state_dict`` names, config and step in the metadata). Warm starts and the
GPU path read both through :func:`read_checkpoint`; ``onnx`` is imported only for an export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_checkpoint(
    path: str | Path, *, prefix: str = "", weights_only: bool = False
) -> dict[str, Any]:
    """``{"config", "model", ...}`` with torch tensors. From an ONNX export: its metadata
    (config, step, version ...) and the initializers named ``prefix`` + ``state_dict`` name,
    as stored (float16 stays float16)."""
    import torch

    if Path(path).suffix != ".onnx":
        blob: dict[str, Any] = torch.load(str(path), map_location="cpu", weights_only=weights_only)
        return blob
    from emostream.networks import onnx_weights

    info, state = onnx_weights.read_export(path, prefix=prefix)
    out: dict[str, Any] = {k: v for k, v in info.items() if k != onnx_weights.CONFIG_KEY}
    out["config"] = info[onnx_weights.CONFIG_KEY]
    out["model"] = {k: torch.from_numpy(v.copy()) for k, v in state.items()}
    return out
