"""EmotiVoice-style acoustic model: FastSpeech2-class, one definition for training, GPU
inference and ONNX export.

``units (+ tone, language) → FFT encoder → + speaker (GE2E 256-d) + emotion (label × intensity)
→ variance adaptor (duration, pitch, energy per unit) → length regulator → FFT decoder → mel``

Pitch and energy are predicted *per unit* (FastPitch style) and added back as embeddings, so
the prosody controls act on interpretable quantities before the decoder:

* ``rate``        — durations divided by it (>1 faster);
* ``pitch_shift`` — semitones added to every voiced unit's log-F0;
* ``pitch_range`` — log-F0 scaled around the utterance's mean (1 = as predicted);
* ``energy``      — multiplies the frame energy (added to the log);
* ``pause``       — durations of pause units (space, punctuation, boundaries) multiplied.

``AcousticConfig.pace`` is the checkpoint's own rate, applied on top of the request's: a
duration predictor trained on log durations predicts their geometric mean, which is shorter
than the teacher's durations on average (the more the teacher varies, the shorter), so a
version can ship with the pace it measured on held-out speakers (``ship.py --pace``).

With ``contour > 0`` a unit also gets the *shape* of its log-F0 (Legendre coefficients over
its frames, :mod:`emostream.networks.contour`): slope and bend, what tells Mandarin tones apart.
``pitch_range`` scales them with the unit means. ``infer_units`` then returns them as the last
``contour`` channels of its unit features, and :meth:`AcousticModel.regulate` turns them into
frame features; without it (v0.1–v0.3) both are as before.

Targets come from :mod:`train.corpus`: mel frames per unit, mean log-F0 over a
unit's voiced frames (0 when it has none), mean log-energy per unit. Normalisation constants
live in :class:`AcousticConfig` so a checkpoint carries them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from emostream.networks import checkpoint
from emostream.networks.acoustic_onnx import Prosody
from emostream.networks.contour import frame_positions, legendre
from emostream.networks.mel import silence_level
from emostream.text.emotion import EMOTIONS
from emostream.text.phonemes import BOS, EOS, NUM_LANGS, NUM_TONES, PUNCTUATION, SPACE, SYMBOLS


def predicted_frames(log_duration: torch.Tensor) -> torch.Tensor:
    """Frames per unit from the duration predictor's output (trained on ``log(d + 1)``):
    ``exp - 1``, at least 0, unrounded."""
    return torch.clamp(torch.exp(log_duration) - 1.0, min=0.0)


def pause_symbol_ids() -> tuple[int, ...]:
    return tuple(SYMBOLS.id(s) for s in (BOS, EOS, SPACE, *PUNCTUATION))


@dataclass
class AcousticConfig:
    n_symbols: int = len(SYMBOLS)
    n_tones: int = NUM_TONES
    n_langs: int = NUM_LANGS
    n_emotions: int = len(EMOTIONS)
    d_model: int = 256
    n_heads: int = 2
    enc_layers: int = 4
    dec_layers: int = 4
    ff_dim: int = 1024
    ff_kernel: int = 5
    dropout: float = 0.1
    var_filters: int = 256
    var_kernel: int = 3
    speaker_dim: int = 256
    n_mels: int = 80
    max_positions: int = 4096
    contour: int = 0  # log-F0 shape coefficients per unit (0: mean only, v0.1–v0.3)
    pace: float = 1.0  # durations divided by it at inference, as well as by the request's rate
    # normalisation (set from the corpus by the trainer; stored in checkpoints)
    pitch_mean: float = 5.3  # log Hz
    pitch_std: float = 0.3
    energy_mean: float = 0.0
    energy_std: float = 1.0
    mel_fill: float = field(default_factory=silence_level)  # padded frames: digital silence
    pause_ids: tuple[int, ...] = field(default_factory=pause_symbol_ids)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AcousticConfig:
        d = dict(d)
        if "pause_ids" in d:
            d["pause_ids"] = tuple(d["pause_ids"])
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def _positions(length: int, dim: int, device: torch.device) -> torch.Tensor:
    pos = torch.arange(length, device=device, dtype=torch.float32)[:, None]
    i = torch.arange(0, dim, 2, device=device, dtype=torch.float32)[None, :]
    angle = pos / torch.pow(10000.0, i / dim)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)


class SelfAttention(nn.Module):
    """Multi-head self-attention written out (exports to ONNX with dynamic lengths)."""

    def __init__(self, dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.heads, d // self.heads)
        q = qkv[:, :, 0].transpose(1, 2)  # [B, H, T, dh]
        k = qkv[:, :, 1].transpose(1, 2)
        v = qkv[:, :, 2].transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(pad.view(b, 1, 1, t), -1e4)
        w = self.drop(torch.softmax(scores.float(), dim=-1).to(v.dtype))
        result: torch.Tensor = self.out(torch.matmul(w, v).transpose(1, 2).reshape(b, t, d))
        return result


class FFTBlock(nn.Module):
    """Self-attention + 1-D conv feed-forward, pre-residual LayerNorm after each (FastSpeech)."""

    def __init__(self, c: AcousticConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(c.d_model, c.n_heads, c.dropout)
        self.norm1 = nn.LayerNorm(c.d_model)
        self.conv1 = nn.Conv1d(c.d_model, c.ff_dim, c.ff_kernel, padding=c.ff_kernel // 2)
        self.conv2 = nn.Conv1d(c.ff_dim, c.d_model, 1)
        self.norm2 = nn.LayerNorm(c.d_model)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """``x`` [B, T, D]; ``pad`` [B, T] True where padded."""
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        a = self.attn(x, pad)
        x = self.norm1(x + self.drop(a)) * keep
        y = self.conv2(F.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        result: torch.Tensor = self.norm2(x + self.drop(y)) * keep
        return result


class VariancePredictor(nn.Module):
    """Two conv layers → ``outputs`` values per position (FastSpeech2)."""

    def __init__(self, c: AcousticConfig, outputs: int = 1) -> None:
        super().__init__()
        k, f = c.var_kernel, c.var_filters
        self.conv1 = nn.Conv1d(c.d_model, f, k, padding=k // 2)
        self.norm1 = nn.LayerNorm(f)
        self.conv2 = nn.Conv1d(f, f, k, padding=k // 2)
        self.norm2 = nn.LayerNorm(f)
        self.out = nn.Linear(f, outputs)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        keep = (~pad).unsqueeze(-1).to(x.dtype)  # zero padding into conv2, as for one item
        y = self.drop(self.norm1(F.relu(self.conv1(x.transpose(1, 2))).transpose(1, 2))) * keep
        y = self.drop(self.norm2(F.relu(self.conv2(y.transpose(1, 2))).transpose(1, 2)))
        y = self.out(y)
        result: torch.Tensor = (
            y.squeeze(-1).masked_fill(pad, 0.0)
            if y.shape[-1] == 1
            else y.masked_fill(pad.unsqueeze(-1), 0.0)
        )
        return result


def length_regulate(
    x: torch.Tensor, durations: torch.Tensor, max_frames: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Expand unit features by integer durations with a 0/1 alignment matrix (batched, no
    Python loops, ONNX-exportable). Returns ``[B, T, D]`` and the frame padding mask."""
    ends = torch.cumsum(durations, dim=1)  # [B, N]
    starts = ends - durations
    total = ends[:, -1]
    if max_frames is not None:
        t = torch.arange(max_frames, device=x.device)
    else:  # a 0-d tensor bound keeps the frame count dynamic in ONNX export
        t = torch.arange(total.max().clamp(min=1), device=x.device)  # type: ignore[call-overload]
    t = t.view(1, -1, 1)
    align = ((t >= starts.unsqueeze(1)) & (t < ends.unsqueeze(1))).to(x.dtype)  # [B, T, N]
    frames = torch.bmm(align, x)
    pad = t.squeeze(-1) >= total.unsqueeze(1)
    return frames, pad


class AcousticModel(nn.Module):
    def __init__(self, config: AcousticConfig | None = None) -> None:
        super().__init__()
        c = self.config = config or AcousticConfig()
        self.symbol_emb = nn.Embedding(c.n_symbols, c.d_model, padding_idx=0)
        self.tone_emb = nn.Embedding(c.n_tones, c.d_model)
        self.lang_emb = nn.Embedding(c.n_langs, c.d_model)
        self.encoder = nn.ModuleList(FFTBlock(c) for _ in range(c.enc_layers))
        self.speaker_proj = nn.Linear(c.speaker_dim, c.d_model)
        self.emotion_emb = nn.Embedding(c.n_emotions, c.d_model)
        self.duration = VariancePredictor(c)
        self.pitch = VariancePredictor(c)
        self.energy = VariancePredictor(c)
        self.pitch_proj = nn.Conv1d(1, c.d_model, 3, padding=1)
        self.energy_proj = nn.Conv1d(1, c.d_model, 3, padding=1)
        if c.contour:  # both start at zero: a warm start from a mean-only model is unchanged
            self.contour = VariancePredictor(c, outputs=c.contour)
            self.contour_proj = nn.Linear(c.contour + 1, c.d_model)
            for layer in (self.contour.out, self.contour_proj):
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)
        self.decoder = nn.ModuleList(FFTBlock(c) for _ in range(c.dec_layers))
        self.mel_out = nn.Linear(c.d_model, c.n_mels)
        self.register_buffer(
            "pause_ids", torch.tensor(c.pause_ids, dtype=torch.long), persistent=False
        )

    def _pause_ids(self) -> torch.Tensor:
        ids = self.pause_ids
        assert isinstance(ids, torch.Tensor)
        return ids

    # ------------------------------------------------------------------ shared parts
    def encode(
        self,
        ids: torch.Tensor,
        tones: torch.Tensor,
        langs: torch.Tensor,
        speaker: torch.Tensor,
        emotion: torch.Tensor,
        intensity: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pad = ids == 0
        x = self.symbol_emb(ids) + self.tone_emb(tones) + self.lang_emb(langs)
        x = x + _positions(ids.shape[1], self.config.d_model, ids.device).to(x.dtype)
        for block in self.encoder:
            x = block(x, pad)
        style = self.speaker_proj(F.normalize(speaker, dim=-1)) + self.emotion_emb(
            emotion
        ) * intensity.unsqueeze(-1)
        return (x + style.unsqueeze(1)) * (~pad).unsqueeze(-1).to(x.dtype), pad

    def _add_variance(
        self, x: torch.Tensor, pitch: torch.Tensor, energy: torch.Tensor
    ) -> torch.Tensor:
        p = self.pitch_proj(pitch.unsqueeze(1).to(x.dtype)).transpose(1, 2)
        e = self.energy_proj(energy.unsqueeze(1).to(x.dtype)).transpose(1, 2)
        result: torch.Tensor = x + p + e
        return result

    def regulate(
        self, h: torch.Tensor, durations: torch.Tensor, max_frames: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit features → frames (:func:`length_regulate`). With contours, the last
        ``contour`` channels of ``h`` are each unit's shape coefficients (normalised log-F0):
        they become ``P_1..P_k`` of the frame's position in its unit and the contour there,
        added through ``contour_proj``."""
        frames, pad = length_regulate(h, durations, max_frames)
        k = self.config.contour
        if not k:
            return frames, pad
        d = self.config.d_model
        basis = legendre(frame_positions(durations, frames.shape[1]), k).to(frames.dtype)
        shape = (frames[..., d:] * basis).sum(-1, keepdim=True)
        x = frames[..., :d] + self.contour_proj(torch.cat([basis, shape], dim=-1))
        return x * (~pad).unsqueeze(-1).to(x.dtype), pad

    def decode(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        x = x + _positions(x.shape[1], self.config.d_model, x.device).to(x.dtype)
        for block in self.decoder:
            x = block(x, pad)
        mel = self.mel_out(x)
        result: torch.Tensor = mel.masked_fill(pad.unsqueeze(-1), self.config.mel_fill)
        return result

    # ----------------------------------------------------------------------- training
    def forward(
        self,
        ids: torch.Tensor,
        tones: torch.Tensor,
        langs: torch.Tensor,
        speaker: torch.Tensor,
        emotion: torch.Tensor,
        intensity: torch.Tensor,
        durations: torch.Tensor,
        pitch: torch.Tensor,
        energy: torch.Tensor,
        contour: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Teacher-forced pass. ``pitch``/``energy`` are *normalised* per-unit targets,
        ``contour`` [B, N, k] the normalised shape coefficients (with ``config.contour``)."""
        x, pad = self.encode(ids, tones, langs, speaker, emotion, intensity)
        out = {
            "log_duration": self.duration(x, pad),
            "pitch": self.pitch(x, pad),
            "energy": self.energy(x, pad),
        }
        h = self._add_variance(x, pitch, energy)
        if self.config.contour:
            out["contour"] = self.contour(x, pad)
            assert contour is not None, "a contour model trains on contour targets"
            h = torch.cat([h, contour.to(h.dtype)], dim=-1)
        frames, fpad = self.regulate(h, durations)
        out["mel"] = self.decode(frames, fpad)
        out["frame_pad"] = fpad
        out["unit_pad"] = pad
        return out

    # ---------------------------------------------------------------------- inference
    def infer(
        self,
        ids: torch.Tensor,
        tones: torch.Tensor,
        langs: torch.Tensor,
        speaker: torch.Tensor,
        emotion: torch.Tensor,
        intensity: torch.Tensor,
        controls: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``controls`` [B, 5] = rate, pitch_shift (semitones), pitch_range, energy, pause.
        Returns mel ``[B, T, 80]`` and integer durations ``[B, N]`` (frames per unit)."""
        h, durations = self.infer_units(ids, tones, langs, speaker, emotion, intensity, controls)
        frames, fpad = self.regulate(h, durations)
        return self.decode(frames, fpad), durations

    def infer_units(
        self,
        ids: torch.Tensor,
        tones: torch.Tensor,
        langs: torch.Tensor,
        speaker: torch.Tensor,
        emotion: torch.Tensor,
        intensity: torch.Tensor,
        controls: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The part of :meth:`infer` before length regulation (no host sync, so it can be a
        CUDA graph): unit features with pitch and energy added ``[B, N, D]`` (``D +
        contour`` channels with contours: :meth:`regulate` takes them) and integer
        durations ``[B, N]``."""
        c = self.config
        x, pad = self.encode(ids, tones, langs, speaker, emotion, intensity)
        keep = (~pad).to(x.dtype)
        rate, shift, rng, energy_scale, pause = (controls[:, i : i + 1] for i in range(5))
        log_d = self.duration(x, pad)
        d = predicted_frames(log_d) / rate
        if c.pace != 1.0:  # the checkpoint's own rate (the graph of a pace-1 one is unchanged)
            d = d / c.pace
        is_pause = (ids.unsqueeze(-1) == self._pause_ids().view(1, 1, -1)).any(-1)
        d = torch.where(is_pause, d * pause, d)
        # Whole frames by rounding the running total (float32: fp16 counts exactly only to
        # 2048): each unit is off by under a frame and the utterance by under half of one.
        # Rounding each unit alone dropped the short ones (spaces, light syllables) and made
        # v0.4 2.6 % faster than its own predictor in English (lab.pace).
        total = torch.round(torch.cumsum(d.float() * keep.float(), dim=1))
        before = torch.cat([torch.zeros_like(total[:, :1]), total[:, :-1]], dim=1)
        durations = (total - before).clamp(min=0).long() * (~pad).long()
        # pitch: normalised → log Hz, controls, back to normalised
        p = self.pitch(x, pad) * c.pitch_std + c.pitch_mean
        voiced = (p > math.log(60.0)) & ~pad
        vf = voiced.to(p.dtype)
        mean = (p * vf).sum(1, keepdim=True) / vf.sum(1, keepdim=True).clamp(min=1.0)
        p = mean + (p - mean) * rng + shift * (math.log(2.0) / 12.0)
        p = torch.where(voiced, (p - c.pitch_mean) / c.pitch_std, torch.zeros_like(p))
        e = self.energy(x, pad) + torch.log(energy_scale) / c.energy_std
        h = self._add_variance(x, p * keep, e * keep)
        if c.contour:  # the shape of each voiced unit's pitch, scaled like its mean
            shape = self.contour(x, pad) * (rng * vf).unsqueeze(-1)
            h = torch.cat([h, shape.to(h.dtype)], dim=-1)
        return h, durations

    # --------------------------------------------------------------------- checkpoints
    def save(
        self, path: str | Path, *, half: bool = True, extra: dict[str, Any] | None = None
    ) -> None:
        state = {
            k: (v.half() if half and v.is_floating_point() else v)
            for k, v in self.state_dict().items()
        }
        torch.save({"config": asdict(self.config), "model": state, **(extra or {})}, str(path))

    @classmethod
    def load(cls, path: str | Path) -> AcousticModel:
        """A checkpoint :meth:`save` wrote, or a shipped ONNX file :meth:`export_onnx` wrote
        (its initializers are this module's ``state_dict``), as float32 in eval mode."""
        blob = read_checkpoint(path)
        model = cls(AcousticConfig.from_dict(blob["config"]))
        model.load_state_dict(
            {k: v.float() if v.is_floating_point() else v for k, v in blob["model"].items()}
        )
        return model.eval()

    def export_onnx(
        self,
        path: str | Path,
        *,
        opset: int = 17,
        half: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """Batch-1 inference graph: inputs ids/tones/langs [1, N], speaker [1, 256], emotion [1],
        intensity [1], controls [1, 5]; outputs mel [1, T, 80] and durations [1, N].

        Every parameter keeps its ``state_dict`` name (prefixed ``model.``) so :meth:`load`
        reads the file back; the config (and ``extra``, e.g. the step) is in the metadata.
        ``half`` stores the weights as float16 (ONNX Runtime still computes in float32):
        how a version ships, see :mod:`emostream.networks.onnx_weights`."""
        from emostream.networks.onnx_weights import finish_export

        path = Path(path)
        was_training = self.training
        wrapper = _InferWrapper(self).eval()  # export restores the wrapper's mode afterwards
        n = 12
        example = (
            torch.randint(4, self.config.n_symbols, (1, n)),
            torch.zeros(1, n, dtype=torch.long),
            torch.ones(1, n, dtype=torch.long),
            torch.randn(1, self.config.speaker_dim),
            torch.zeros(1, dtype=torch.long),
            torch.ones(1),
            torch.ones(1, 5),
        )
        with warnings.catch_warnings():  # the TorchScript exporter is deprecated but handles
            warnings.simplefilter("ignore")  # (and its tracer warnings are expected here)
            self._export(wrapper, example, path, opset)
        self.train(was_training)
        state = {ONNX_PREFIX + k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}
        return finish_export(path, config=asdict(self.config), half=half, extra=extra, state=state)

    @staticmethod
    def _export(
        wrapper: nn.Module, example: tuple[torch.Tensor, ...], path: Path, opset: int
    ) -> None:
        torch.onnx.export(
            wrapper,
            example,
            str(path),
            opset_version=opset,
            dynamo=False,
            do_constant_folding=False,  # keeps the state_dict names (ONNX Runtime folds)
            input_names=["ids", "tones", "langs", "speaker", "emotion", "intensity", "controls"],
            output_names=["mel", "durations"],
            dynamic_axes={
                "ids": {1: "N"},
                "tones": {1: "N"},
                "langs": {1: "N"},
                "mel": {1: "T"},
                "durations": {1: "N"},
            },
        )


class _InferWrapper(nn.Module):
    def __init__(self, model: AcousticModel) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        ids: torch.Tensor,
        tones: torch.Tensor,
        langs: torch.Tensor,
        speaker: torch.Tensor,
        emotion: torch.Tensor,
        intensity: torch.Tensor,
        controls: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.infer(ids, tones, langs, speaker, emotion, intensity, controls)


ONNX_PREFIX = "model."  # _InferWrapper holds the model as .model


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """``{"config", "model", ...}`` from a torch checkpoint or the shipped ONNX export
    (:func:`emostream.networks.checkpoint.read_checkpoint`; the export's weights sit under
    :data:`ONNX_PREFIX`)."""
    return checkpoint.read_checkpoint(path, prefix=ONNX_PREFIX)


def controls_tensor(p: Prosody, batch: int = 1) -> torch.Tensor:
    return torch.tensor([p.row()] * batch, dtype=torch.float32)
