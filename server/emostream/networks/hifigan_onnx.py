"""HiFi-GAN V1 through ONNX Runtime (the CPU path; no torch needed at run time).

The ONNX file is made from the torch definition by :meth:`HifiGan.export_onnx`
(:func:`ensure_onnx` does it once and caches the file). ONNX Runtime's CUDA or TensorRT
execution providers are used when the installed onnxruntime has them (onnxruntime-gpu);
otherwise the CPU provider with ``threads`` intra-op threads.

Note: HiFi-GAN V1 is not real time on one or two laptop cores (docs/measurements.md, "Figures
behind the code"; models/vocoder/README.md);
the CPU path for mel voices needs a lighter vocoder. This class is here for parity and for
users with onnxruntime-gpu.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from emostream.networks.ort_cpu import cpu_options

log = logging.getLogger(__name__)

HOP_LENGTH = 256
SAMPLE_RATE = 22050
# Preferred order; only those the installed onnxruntime offers are used.
PREFERRED_PROVIDERS: tuple[str, ...] = (
    "TensorrtExecutionProvider",
    "CUDAExecutionProvider",
    "CPUExecutionProvider",
)


def choose_providers(
    available: Sequence[str] | None = None, *, allow_gpu: bool = True
) -> list[str]:
    """The providers to ask for, best first, from ``available`` (default: what the installed
    onnxruntime reports)."""
    have = list(ort.get_available_providers() if available is None else available)
    wanted = PREFERRED_PROVIDERS if allow_gpu else ("CPUExecutionProvider",)
    chosen = [p for p in wanted if p in have]
    return chosen or ["CPUExecutionProvider"]


class OnnxHifiGan:
    """A HiFi-GAN ONNX session: ``decode(mel [80, T]) -> audio [T * 256]`` (float32)."""

    hop_length = HOP_LENGTH
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        path: str | Path,
        *,
        threads: int = 1,
        providers: Sequence[str] | None = None,
    ) -> None:
        opts = cpu_options(threads)
        chosen = list(providers) if providers is not None else choose_providers()
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=chosen)
        self.providers = self.session.get_providers()
        log.info("HiFi-GAN ONNX %s on %s (%d threads)", path, self.providers, threads)

    def decode_batch(self, mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``[B, 80, T]`` -> ``[B, T * 256]``."""
        out = self.session.run(["audio"], {"mel": np.ascontiguousarray(mel, dtype=np.float32)})
        audio: npt.NDArray[np.float32] = np.asarray(out[0]).astype(np.float32, copy=False)
        return audio

    def decode(self, mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``[80, T]`` -> ``[T * 256]``."""
        audio: npt.NDArray[np.float32] = self.decode_batch(mel[None])[0]
        return audio


def ensure_onnx(directory: str | Path, name: str = "universal", *, opset: int = 17) -> Path:
    """``directory/hifigan_v1_<name>.onnx``, exported from the packaged weights if missing
    (needs torch once; later starts only read the file)."""
    path = Path(directory).expanduser() / f"hifigan_v1_{name}.onnx"
    if path.is_file():
        return path
    from emostream.networks.hifigan import HifiGan  # torch only when exporting

    tmp = path.with_suffix(".onnx.tmp")
    HifiGan.load(name).export_onnx(tmp, opset=opset)
    tmp.replace(path)
    log.info("exported HiFi-GAN %s to %s", name, path)
    return path
