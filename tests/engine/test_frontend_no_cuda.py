"""An engine-mode front end (EMOSTREAM_ENGINE=process on a GPU host) never touches CUDA:
each process that does holds a CUDA context (~500 MB in nvidia-smi), and the engine
process is the one that owns the device."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from emostream.config import Settings
from emostream.engine.devices import frontend_settings
from emostream.voices.base import Controls
from emostream.voices.catalog import load_catalog

pytestmark = pytest.mark.slow


def test_engine_front_end_loads_its_voices_without_cuda(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    calls: list[str] = []
    # Every torch path into a CUDA context goes through _lazy_init (torch.cuda and its
    # memory module, which imports it by name).
    for module in (torch.cuda, torch.cuda.memory):
        monkeypatch.setattr(module, "_lazy_init", lambda: calls.append("lazy_init"))
    gpu_host = Settings(device="cuda", engine="process", acoustic="on", data_dir=str(tmp_path))
    front = frontend_settings(gpu_host)
    assert front.device == "cpu" and front.vocoder == "v1"  # the engine's choice on cuda
    catalog = load_catalog(front)
    voice = catalog.get("af_heart")
    assert voice is not None
    voice.prepare("Hello from the front end.", Controls())  # type: ignore[attr-defined]
    assert calls == [] and not torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
