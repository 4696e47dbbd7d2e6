"""The acoustic model on ONNX Runtime (CPU), and the inputs both runtimes share.

The shipped file is :meth:`emostream.networks.acoustic.AcousticModel.export_onnx`'s graph (fp16
weights, float32 arithmetic; the same file the torch side loads its weights from). Its inputs
are one utterance: ``ids``, ``tones``, ``langs`` ``[1, N]`` (int64), ``speaker`` ``[1, 256]``
(GE2E), ``emotion`` ``[1]`` (int64), ``intensity`` ``[1]``, ``controls`` ``[1, 5]`` (the
:class:`Prosody` row); outputs ``mel`` ``[1, T, 80]`` and ``durations`` ``[1, N]``.

Only numpy and onnxruntime are imported: this is the acoustic model of the torch-free install.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

INPUTS = ("ids", "tones", "langs", "speaker", "emotion", "intensity", "controls")


@dataclass(frozen=True)
class Prosody:
    """Inference-time prosody controls (defaults: as the model predicts)."""

    rate: float = 1.0
    pitch_shift: float = 0.0  # semitones
    pitch_range: float = 1.0
    energy: float = 1.0
    pause: float = 1.0

    def row(self) -> list[float]:
        """The model's ``controls`` row: rate, pitch shift, pitch range, energy, pause."""
        return [self.rate, self.pitch_shift, self.pitch_range, self.energy, self.pause]


class OnnxAcousticModel:
    """One ONNX Runtime session over the shipped graph; one utterance per call."""

    def __init__(self, path: str | Path, *, threads: int = 1) -> None:
        import onnxruntime as ort

        from emostream.networks.ort_cpu import cpu_options

        opts = cpu_options(max(1, threads))
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        meta = self.session.get_modelmeta().custom_metadata_map
        # onnx_weights.CONFIG_KEY (not imported: that module loads the onnx package)
        self.config: dict[str, Any] = json.loads(meta.get("emostream.config", "{}"))

    def infer(
        self, inputs: dict[str, npt.NDArray[Any]]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """``inputs`` by :data:`INPUTS` name (batch 1) -> mel ``[T, 80]``, durations ``[N]``."""
        mel, durations = self.session.run(["mel", "durations"], {k: inputs[k] for k in INPUTS})
        return (
            np.asarray(mel[0], dtype=np.float32),
            np.asarray(durations[0], dtype=np.int64),
        )


def pack_one(
    ids: list[int],
    tones: list[int],
    langs: list[int],
    speaker: npt.NDArray[np.float32],
    emotion: int,
    intensity: float,
    prosody: Prosody,
) -> dict[str, npt.NDArray[Any]]:
    """One utterance as the graph's inputs (batch 1)."""
    return {
        "ids": np.asarray([ids], dtype=np.int64),
        "tones": np.asarray([tones], dtype=np.int64),
        "langs": np.asarray([langs], dtype=np.int64),
        "speaker": np.asarray(speaker, dtype=np.float32).reshape(1, -1),
        "emotion": np.asarray([emotion], dtype=np.int64),
        "intensity": np.asarray([intensity], dtype=np.float32),
        "controls": np.asarray([prosody.row()], dtype=np.float32),
    }
