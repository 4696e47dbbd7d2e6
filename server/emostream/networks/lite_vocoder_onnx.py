"""The light vocoder on ONNX Runtime (the CPU path of the default install), and chunked
decoding helpers. Only numpy and onnxruntime: the torch definition is
:mod:`emostream.networks.lite_vocoder`, whose ``export_onnx`` writes the file this runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

# Frames of context per side that make a chunked decode equal the one-shot one:
# 3 (embedding conv) + 8 blocks x 3 (their kernel-7 convs) + 2 (the iSTFT's overlap);
# equals ``LiteVocoderConfig().context_frames`` (tested).
CONTEXT_FRAMES = 29


class OnnxLiteVocoder:
    """The exported graph in ONNX Runtime: numpy ``[n_mels, T]`` -> ``[T * hop]``."""

    def __init__(self, path: str | Path, *, threads: int = 1) -> None:
        import onnxruntime as ort

        from emostream.networks.ort_cpu import cpu_options

        opts = cpu_options(threads)
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def __call__(self, mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        x = np.ascontiguousarray(mel, dtype=np.float32)[None]
        out = self.session.run(["audio"], {"mel": x})[0]
        return np.asarray(out[0], dtype=np.float32)


def decode_chunked(
    decode: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]],
    mel: npt.NDArray[np.float32],
    *,
    chunk: int = 48,
    context: int = CONTEXT_FRAMES,
    hop: int = 256,
) -> npt.NDArray[np.float32]:
    """Decode ``mel`` ``[n_mels, T]`` in windows of ``chunk`` emitted frames, each fed with
    ``context`` frames on both sides (fewer at the utterance's ends) and cropped to its own
    frames; returns the joined ``[T * hop]`` audio. ``context >= CONTEXT_FRAMES`` reproduces
    the one-shot decode to float error."""
    total = int(mel.shape[-1])
    out = np.zeros(total * hop, dtype=np.float32)
    for start in range(0, total, chunk):
        end = min(total, start + chunk)
        lo, hi = max(0, start - context), min(total, end + context)
        audio = decode(np.ascontiguousarray(mel[:, lo:hi]))
        a = (start - lo) * hop
        out[start * hop : end * hop] = audio[a : a + (end - start) * hop]
    return out


def chunk_snr(
    decode: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]],
    mel: npt.NDArray[np.float32],
    *,
    chunk: int = 48,
    context: int = CONTEXT_FRAMES,
) -> float:
    """SNR (dB) of the chunked decode against the one-shot decode of ``mel``."""
    ref = decode(mel)
    test = decode_chunked(decode, mel, chunk=chunk, context=context)
    err = test.astype(np.float64) - ref
    noise = float(np.sum(err * err))
    if noise == 0.0:
        return float("inf")
    return float(10.0 * np.log10(float(np.sum(ref.astype(np.float64) ** 2)) / noise))
