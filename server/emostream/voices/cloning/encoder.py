"""Speaker embeddings on CPU: GE2E (resemblyzer's weights) through ONNX Runtime, front end in numpy.

The front end reproduces resemblyzer 0.1.4 exactly (so its published behaviour carries over):
16 kHz audio → mel *power* spectrogram (40 Slaney mel bins, 25 ms Hann window, 10 ms hop,
centred frames, zero padding — librosa's defaults) → partial utterances of 160 frames (1.6 s) at
1.3 per second, the last kept when ≥ 75 % covered → one LSTM pass per partial, batched → the
L2-normalised mean of the partial embeddings (256-d, non-negative; cosine similarity ≈ 0.75+ for
the same speaker, lower for different speakers).

Preprocessing differs from resemblyzer's only in its voice-activity detector: where resemblyzer
cuts long pauses with WebRTC's VAD, :meth:`SpeakerEncoder.embed_clip` uses the energy mask the
clip intake already computed (see :mod:`emostream.voices.cloning.clip`), so no extra native dependency.

The model file is ``models/speaker_encoder/ge2e.onnx`` (5.7 MB fp32, committed; regenerate with
``python -m emostream.networks.ge2e``). Keeping it in the repository means the server needs neither
torch nor resemblyzer at run time and every host embeds with the same bytes (the cache key carries
:data:`ENCODER_VERSION`).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from emostream.voices.cloning.clip import HOP, SAMPLE_RATE, Clip

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]

ENCODER_VERSION = "ge2e-resemblyzer-0.1.4-onnx1"
EMBEDDING_DIM = 256
N_FFT = 400  # 25 ms
MEL_HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160
NORM_TARGET_DBFS = -30.0  # resemblyzer: quieter input is raised to this, louder left alone
CLIP_TARGET_DBFS = -23.0  # embed_audio: every clip set to this (the mel input is not log-scaled)
MODEL_RELPATH = Path("models/speaker_encoder/ge2e.onnx")


# ---------------------------------------------------------------------------------------------
# front end (numpy)


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f_sp, min_log_hz, min_log_mel, logstep = 200.0 / 3, 1000.0, 15.0, np.log(6.4) / 27.0
    mel = hz / f_sp
    high = hz >= min_log_hz
    mel[high] = min_log_mel + np.log(hz[high] / min_log_hz) / logstep
    return mel


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    f_sp, min_log_hz, min_log_mel, logstep = 200.0 / 3, 1000.0, 15.0, np.log(6.4) / 27.0
    hz = mel * f_sp
    high = mel >= min_log_mel
    hz[high] = min_log_hz * np.exp(logstep * (mel[high] - min_log_mel))
    return hz


@lru_cache(maxsize=4)
def mel_filterbank(
    sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS
) -> npt.NDArray[np.float64]:
    """``[n_mels, n_fft // 2 + 1]`` triangular Slaney-normalised filters from 0 Hz to Nyquist."""
    fft_hz = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = np.array([0.0, sample_rate / 2.0])
    mel_lo, mel_hi = _hz_to_mel(edges.copy())
    mel_hz = _mel_to_hz(np.linspace(mel_lo, mel_hi, n_mels + 2))
    fdiff = np.diff(mel_hz)
    ramps = mel_hz[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_hz[2:] - mel_hz[:-2]))[:, None]
    weights.flags.writeable = False
    return weights


def mel_spectrogram(audio: FloatArray) -> FloatArray:
    """``[frames, 40]`` mel power spectrogram, frames centred every 10 ms (``1 + n // 160``)."""
    pad = N_FFT // 2
    x = np.pad(audio.astype(np.float32), (pad, pad))
    n = 1 + (len(x) - N_FFT) // MEL_HOP
    idx = np.arange(N_FFT)[None, :] + MEL_HOP * np.arange(n)[:, None]
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    spec = np.fft.rfft(x[idx] * window, axis=1)
    power = spec.real**2 + spec.imag**2
    mels: FloatArray = (power @ mel_filterbank().T).astype(np.float32)
    return mels


def partial_slices(n_samples: int, *, rate: float = 1.3, min_coverage: float = 0.75) -> list[slice]:
    """Mel-frame slices of the 160-frame partial utterances (resemblyzer's scheme).

    Slices may run past the end of the audio; the caller zero-pads up to ``slices[-1].stop``
    frames.
    """
    if not 0 < min_coverage <= 1:
        raise ValueError("min_coverage must be in (0, 1]")
    n_frames = int(np.ceil((n_samples + 1) / MEL_HOP))
    step = int(np.round((SAMPLE_RATE / rate) / MEL_HOP))
    if not 0 < step <= PARTIAL_FRAMES:
        raise ValueError(f"rate {rate} out of range")
    slices = [
        slice(i, i + PARTIAL_FRAMES)
        for i in range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)
    ]
    last = slices[-1]
    coverage = (n_samples - last.start * MEL_HOP) / (PARTIAL_FRAMES * MEL_HOP)
    if coverage < min_coverage and len(slices) > 1:
        slices = slices[:-1]
    return slices


def normalize_volume(
    audio: FloatArray, *, target_dbfs: float = NORM_TARGET_DBFS, increase_only: bool = True
) -> FloatArray:
    """Scale to ``target_dbfs`` RMS (by default only ever louder, as the encoder was trained)."""
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))
    if rms <= 0.0:
        return audio
    change = target_dbfs - 20.0 * float(np.log10(rms))
    if change < 0 and increase_only:
        return audio
    out: FloatArray = (audio * 10.0 ** (change / 20.0)).astype(np.float32)
    return out


def shorten_pauses(
    audio: FloatArray, active: npt.NDArray[np.bool_], *, keep_s: float = 0.1
) -> FloatArray:
    """Drop inactive stretches, keeping ``keep_s`` of each pause's edges (``active``: 10 ms frames)."""
    if active.size == 0 or active.all():
        return audio
    keep = max(0, round(keep_s * SAMPLE_RATE / HOP))
    mask = active.copy()
    on = np.flatnonzero(active)
    if on.size == 0:
        return audio
    for shift in range(1, keep + 1):  # dilate the active frames by ``keep`` on both sides
        mask[shift:] |= active[:-shift]
        mask[:-shift] |= active[shift:]
    samples = np.zeros(len(audio), dtype=bool)
    rep = np.repeat(mask, HOP)[: len(audio)]
    samples[: len(rep)] = rep
    samples[len(rep) :] = bool(mask[-1])
    return audio[samples]


# ---------------------------------------------------------------------------------------------
# the encoder


def default_model_path(models_dir: str | Path = "") -> Path:
    """``models/speaker_encoder/ge2e.onnx`` in ``models_dir`` (``Settings.models_dir``) or
    else in the checkout (or image) holding this package."""
    if models_dir:
        candidate = Path(models_dir).expanduser() / Path(MODEL_RELPATH).relative_to("models")
        if candidate.is_file():
            return candidate
        raise FileNotFoundError(f"{candidate} not found (models_dir={models_dir!r})")
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / MODEL_RELPATH
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"{MODEL_RELPATH} not found above {here}; export it with `python -m emostream.networks.ge2e`"
    )


class SpeakerEncoder:
    """GE2E through ONNX Runtime. Thread-safe (ONNX Runtime sessions allow concurrent ``run``)."""

    version = ENCODER_VERSION
    dim = EMBEDDING_DIM

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        threads: int = 1,
        providers: tuple[str, ...] = ("CPUExecutionProvider",),
        max_batch: int = 32,
    ) -> None:
        import onnxruntime as ort

        self.model_path = model_path or default_model_path()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(self.model_path), sess_options=opts, providers=list(providers)
        )
        self.max_batch = max_batch

    def embed_mels(self, mels: FloatArray) -> FloatArray:
        """``[batch, frames, 40]`` → ``[batch, 256]`` L2-normalised partial embeddings."""
        outs = []
        for start in range(0, len(mels), self.max_batch):
            batch = np.ascontiguousarray(mels[start : start + self.max_batch], dtype=np.float32)
            outs.append(self._session.run(["embedding"], {"mels": batch})[0])
        out: FloatArray = np.concatenate(outs, axis=0).astype(np.float32)
        return out

    def embed_utterance(
        self, audio: FloatArray, *, rate: float = 1.3, min_coverage: float = 0.75
    ) -> FloatArray:
        """Embedding of 16 kHz ``audio`` as given (no normalisation, no pause removal)."""
        slices = partial_slices(len(audio), rate=rate, min_coverage=min_coverage)
        need = slices[-1].stop * MEL_HOP
        if need >= len(audio):
            audio = np.pad(audio, (0, need - len(audio)))
        mel = mel_spectrogram(audio)
        batch = np.stack([mel[s] for s in slices])
        partials = self.embed_mels(batch)
        raw = partials.mean(axis=0)
        emb: FloatArray = (raw / np.linalg.norm(raw)).astype(np.float32)
        return emb

    def embed_audio(
        self, audio: FloatArray, active: npt.NDArray[np.bool_] | None = None
    ) -> FloatArray:
        """Embedding with the encoder's preprocessing: long pauses cut, RMS set to -23 dBFS.

        GE2E reads mel *power*, so its embedding moves with the input level (resemblyzer only
        raises quiet input to -30 dBFS). Setting one level makes an embedding independent of how
        loud the upload was; -23 dBFS sits in the range of its training audio (LibriSpeech,
        VoxCeleb). Against resemblyzer's own pipeline on LibriVox clips: cosine 0.995-0.999.
        """
        if active is not None:
            audio = shorten_pauses(audio, active)
        return self.embed_utterance(
            normalize_volume(audio, target_dbfs=CLIP_TARGET_DBFS, increase_only=False)
        )

    def embed_clip(self, clip: Clip) -> FloatArray:
        """Embedding of a clip from :func:`emostream.voices.cloning.clip.prepare_clip`."""
        return self.embed_audio(clip.audio, clip.active)


def cosine(a: FloatArray, b: FloatArray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))
