"""Light CPU vocoder for HiFi-GAN log-mels: a Vocos-style ConvNeXt generator with an iSTFT head.

Same input as HiFi-GAN V1 (:mod:`emostream.networks.hifigan`): 80-bin natural-log mels at
22.05 kHz, hop 256 (:mod:`emostream.networks.mel`). It is trained by distillation against V1
universal's audio (:mod:`train.vocoder_gan`) and runs on one CPU core through ONNX
Runtime.

Architecture (:class:`LiteVocoderConfig` defaults)::

    mel [B, 80, T] -> (mel - log 1e-5) / 4           (digital silence -> 0 = the conv padding)
      -> Conv1d(80, 288, k=7) -> LayerNorm
      -> 8 x ConvNeXt block: depthwise Conv1d k=7 -> LayerNorm -> Linear 288->864 -> GELU
                             -> Linear 864->288 -> layer scale, residual
      -> LayerNorm -> Linear 288 -> 2 x 513 (log-magnitude, phase)
      -> S = exp(logmag) * (cos phase + i sin phase)  (magnitude capped at 100)
      -> iSTFT (n_fft 1024, hop 256, periodic Hann): inverse real DFT by one matmul with a fixed
         window-weighted basis, overlap-add as 4 shifted sums, divided by the window-square
         envelope, cropped by 384 samples per side -> audio [B, T * 256]

The cropping mirrors V1's framing (frame ``t`` analyses samples ``[256 t - 384, 256 t + 640)``),
so sample ``n`` of the output lines up with sample ``n`` of V1's output for the same mel.

Size: 4,475,106 parameters, 8.98 MB as the fp16 file :meth:`LiteVocoder.save` writes. ONNX
Runtime on one CPU thread runs it far faster than real time, one-shot and chunked
(docs/measurements.md, "Figures behind the code"; ``bench/lite_vocoder_speed.py`` re-measures
it).

Receptive field: every layer is non-causal but bounded: the embedding conv and the 8 depthwise
convs reach 3 frames each way, the overlap-add 2 frames each way, so
:data:`CONTEXT_FRAMES` = 3 + 8 * 3 + 2 = 29 frames of context per side make a chunked decode
(:func:`decode_chunked`) equal the one-shot decode to float error (tested: > 60 dB in torch and
in ONNX Runtime, for any weights). Trained weights reach >= 40 dB with less context
(:func:`chunk_snr` measures it for a given context).
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder, chunk_snr, decode_chunked
from emostream.networks.mel import silence_level

if TYPE_CHECKING:  # onnx only when exporting (the GPU training host may lack it)
    import onnx

LOG_CLAMP = silence_level()  # the log-mel of digital silence (V1's mel settings)
MEL_SCALE = 4.0
MAX_MAGNITUDE = 100.0


@dataclass(frozen=True)
class LiteVocoderConfig:
    """Hyper-parameters. ``n_fft`` / ``hop_length`` / ``n_mels`` must match the mels (V1's)."""

    n_mels: int = 80
    dim: int = 288
    intermediate: int = 864
    blocks: int = 8
    kernel: int = 7
    embed_kernel: int = 7
    n_fft: int = 1024
    hop_length: int = 256
    sample_rate: int = 22050
    layer_scale: float = 0.125

    def __post_init__(self) -> None:
        if self.kernel % 2 == 0 or self.embed_kernel % 2 == 0:
            raise ValueError("kernels must be odd (symmetric, non-causal padding)")
        if self.n_fft % self.hop_length != 0 or (self.n_fft - self.hop_length) % 2 != 0:
            raise ValueError("n_fft must be a multiple of hop_length")

    @property
    def overlap(self) -> int:
        """Frames overlapping each output sample in the overlap-add (4 for 1024 / 256)."""
        return self.n_fft // self.hop_length

    @property
    def pad(self) -> int:
        """Samples cropped per side after the overlap-add (384 = V1's reflect padding)."""
        return (self.n_fft - self.hop_length) // 2

    @property
    def context_frames(self) -> int:
        """Frames of context per side for a chunked decode to equal the one-shot decode."""
        conv = self.embed_kernel // 2 + self.blocks * (self.kernel // 2)
        # Frame s's window covers samples [hop s - pad, hop s - pad + n_fft): frame t's
        # samples [hop t, hop t + hop) come from frames t-2 .. t+2 (n_fft 1024, hop 256).
        back = math.ceil((self.n_fft - self.pad) / self.hop_length) - 1
        fwd = math.ceil((self.hop_length + self.pad) / self.hop_length) - 1
        return conv + max(back, fwd)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LiteVocoderConfig:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


CONTEXT_FRAMES = LiteVocoderConfig().context_frames  # 29 (lite_vocoder_onnx.CONTEXT_FRAMES)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int, intermediate: int, kernel: int, layer_scale: float) -> None:
        super().__init__()
        self.dwconv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1 = nn.Linear(dim, intermediate)
        self.pw2 = nn.Linear(intermediate, dim)
        self.gamma = nn.Parameter(torch.full((dim,), layer_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, C, T]`` -> ``[B, C, T]``."""
        y = self.dwconv(x).transpose(1, 2)
        y = self.pw2(F.gelu(self.pw1(self.norm(y))))
        out: torch.Tensor = x + (self.gamma * y).transpose(1, 2)
        return out


def hann_window(n_fft: int) -> torch.Tensor:
    """Periodic Hann (the window of the V1 mel features), float64."""
    n = torch.arange(n_fft, dtype=torch.float64)
    return 0.5 - 0.5 * torch.cos(2.0 * math.pi * n / n_fft)


def inverse_dft_basis(n_fft: int) -> torch.Tensor:
    """``[2 * (n_fft // 2 + 1), n_fft]`` float32: rows ``k`` (real parts) and ``bins + k``
    (imaginary parts) map a one-sided spectrum to its windowed inverse real DFT frame.

    The phase index is reduced modulo ``n_fft`` in integers (the ONNX twin,
    :func:`basis_nodes`, computes the same in float32)."""
    bins = n_fft // 2 + 1
    k = torch.arange(bins)[:, None]
    n = torch.arange(n_fft)[None, :]
    angle = (k * n % n_fft).double() * (2.0 * math.pi / n_fft)
    edge = (k == 0) | (k == bins - 1)  # DC and Nyquist appear once in the full spectrum
    scale = torch.where(edge, 1.0 / n_fft, 2.0 / n_fft).double()
    real = scale * torch.cos(angle)
    imag = torch.where(edge, 0.0, -scale * torch.sin(angle))
    win = 0.5 - 0.5 * torch.cos(n.double() * (2.0 * math.pi / n_fft))
    return (torch.cat([real, imag], dim=0) * win).float()


def basis_nodes(n_fft: int, output: str) -> list[onnx.NodeProto]:
    """ONNX nodes that compute :func:`inverse_dft_basis` into ``output`` from a few scalars.
    The export puts them where the traced graph had the matrix as a 4 MB constant; ONNX
    Runtime folds them once when it loads the file, so the shipped file stays small."""
    from onnx import TensorProto, helper

    bins, tau = n_fft // 2 + 1, 2.0 * math.pi / n_fft
    p = output + "/basis/"
    consts: dict[str, tuple[int, Any]] = {
        "zero": (TensorProto.INT64, 0), "one": (TensorProto.INT64, 1),
        "bins": (TensorProto.INT64, bins), "last": (TensorProto.INT64, bins - 1),
        "n_fft": (TensorProto.INT64, n_fft), "tau": (TensorProto.FLOAT, tau),
        "one_n": (TensorProto.FLOAT, 1.0 / n_fft), "two_n": (TensorProto.FLOAT, 2.0 / n_fft),
        "zero_f": (TensorProto.FLOAT, 0.0), "half": (TensorProto.FLOAT, 0.5),
        "ax0": (TensorProto.INT64, [0]), "ax1": (TensorProto.INT64, [1]),
    }  # fmt: skip
    nodes = []
    for name, (dtype, v) in consts.items():
        dims, vals = ([len(v)], v) if isinstance(v, list) else ([], [v])
        tensor = helper.make_tensor(p + name, dtype, dims, vals)
        nodes.append(helper.make_node("Constant", [], [p + name], value=tensor))

    def op(kind: str, inputs: list[str], name: str, **attrs: Any) -> None:
        nodes.append(helper.make_node(kind, [p + i for i in inputs], [p + name], **attrs))

    op("Range", ["zero", "bins", "one"], "k0")
    op("Unsqueeze", ["k0", "ax1"], "k")  # [bins, 1]
    op("Range", ["zero", "n_fft", "one"], "n0")
    op("Unsqueeze", ["n0", "ax0"], "n")  # [1, n_fft]
    op("Mul", ["k", "n"], "kn")
    op("Mod", ["kn", "n_fft"], "kn_mod")
    op("Cast", ["kn_mod"], "kn_f", to=TensorProto.FLOAT)
    op("Mul", ["kn_f", "tau"], "angle")
    op("Equal", ["k", "zero"], "dc")
    op("Equal", ["k", "last"], "nyq")
    op("Or", ["dc", "nyq"], "edge")  # DC and Nyquist appear once in the full spectrum
    op("Where", ["edge", "one_n", "two_n"], "scale")
    op("Cos", ["angle"], "cos")
    op("Mul", ["scale", "cos"], "real")
    op("Sin", ["angle"], "sin")
    op("Mul", ["scale", "sin"], "ssin")
    op("Neg", ["ssin"], "nsin")
    op("Where", ["edge", "zero_f", "nsin"], "imag")
    op("Cast", ["n"], "n_f", to=TensorProto.FLOAT)
    op("Mul", ["n_f", "tau"], "wangle")
    op("Cos", ["wangle"], "wcos")
    op("Mul", ["wcos", "half"], "hcos")
    op("Sub", ["half", "hcos"], "win")  # periodic Hann
    op("Concat", ["real", "imag"], "ri", axis=0)
    nodes.append(helper.make_node("Mul", [p + "ri", p + "win"], [output]))
    return nodes


def _inline_basis(model: onnx.ModelProto, n_fft: int) -> None:
    """Replace the traced constant that holds the iSTFT basis by :func:`basis_nodes`."""
    shape = [2 * (n_fft // 2 + 1), n_fft]
    graph = model.graph
    for i, node in enumerate(graph.node):
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        if node.op_type == "Constant" and value is not None and list(value.dims) == shape:
            out = node.output[0]
            del graph.node[i]
            for k, new in enumerate(basis_nodes(n_fft, out)):
                graph.node.insert(i + k, new)
            return
    raise ValueError("the exported graph holds no iSTFT basis constant")


class LiteVocoder(nn.Module):
    """log-mel ``[B, n_mels, T]`` -> audio ``[B, T * hop]`` (see the module docstring)."""

    def __init__(self, config: LiteVocoderConfig = LiteVocoderConfig()) -> None:
        super().__init__()
        self.config = config
        c = config
        self.hop_length = c.hop_length
        self.sample_rate = c.sample_rate
        self.n_mels = c.n_mels
        self.context_frames = c.context_frames
        self.embed = nn.Conv1d(c.n_mels, c.dim, c.embed_kernel, padding=c.embed_kernel // 2)
        self.norm_in = nn.LayerNorm(c.dim, eps=1e-6)
        self.blocks = nn.ModuleList(
            ConvNeXtBlock(c.dim, c.intermediate, c.kernel, c.layer_scale) for _ in range(c.blocks)
        )
        self.norm_out = nn.LayerNorm(c.dim, eps=1e-6)
        self.bins = c.n_fft // 2 + 1
        self.head = nn.Linear(c.dim, 2 * self.bins)
        self.register_buffer("basis", inverse_dft_basis(c.n_fft), persistent=False)
        win_sq = (hann_window(c.n_fft) ** 2).float().reshape(c.overlap, c.hop_length)
        self.register_buffer("win_sq", win_sq, persistent=False)
        self.apply(_init)

    # -- network ---------------------------------------------------------------------

    def spectrum(self, mel: torch.Tensor) -> torch.Tensor:
        """``[B, n_mels, T]`` -> head output ``[B, T, 2 * bins]`` (log-magnitude, phase)."""
        x = self.embed((mel - LOG_CLAMP) / MEL_SCALE)
        x = self.norm_in(x.transpose(1, 2)).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        out: torch.Tensor = self.head(self.norm_out(x.transpose(1, 2)))
        return out

    def synthesize(self, head: torch.Tensor) -> torch.Tensor:
        """Head output ``[B, T, 2 * bins]`` -> audio ``[B, T * hop]`` (the iSTFT; run it in
        float32: the trainer keeps it out of autocast)."""
        logmag, phase = head[..., : self.bins], head[..., self.bins :]
        mag = torch.exp(logmag).clamp(max=MAX_MAGNITUDE)
        spec = torch.cat([mag * torch.cos(phase), mag * torch.sin(phase)], dim=-1)
        basis: torch.Tensor = self.basis  # type: ignore[assignment]
        frames = torch.matmul(spec, basis.to(spec.dtype))  # [B, T, n_fft]
        b, t = frames.shape[0], frames.shape[1]
        hop, ov = self.hop_length, self.config.overlap
        parts = frames.reshape(b, t, ov, hop)
        # Overlap-add: block j of the output sums part k of frame j - k.
        y = F.pad(parts[:, :, 0], (0, 0, 0, ov - 1))
        win_sq: torch.Tensor = self.win_sq  # type: ignore[assignment]
        ones = torch.ones_like(parts[:, :, 0, :1])  # [B, T, 1]
        env = F.pad(ones * win_sq[0], (0, 0, 0, ov - 1))
        for k in range(1, ov):
            y = y + F.pad(parts[:, :, k], (0, 0, k, ov - 1 - k))
            env = env + F.pad(ones * win_sq[k], (0, 0, k, ov - 1 - k))
        audio = (y / env.clamp(min=1e-3)).reshape(b, -1)
        pad = self.config.pad
        return audio[:, pad : audio.shape[1] - pad]

    def mixed(self, mel: torch.Tensor, *, bf16: bool) -> torch.Tensor:
        """``[B, n_mels, T]`` -> ``[B, T * hop]`` as trained on the GPU: the network under
        bf16 autocast when ``bf16``, the iSTFT in float32 (not clipped)."""
        with torch.autocast(mel.device.type, torch.bfloat16, enabled=bf16):
            head = self.spectrum(mel)
        return self.synthesize(head.float())

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        """``[B, n_mels, T]`` log-mel -> ``[B, T * hop]`` audio (clipped to [-1, 1] in eval)."""
        audio = self.synthesize(self.spectrum(mel))
        return audio if self.training else audio.clamp(-1.0, 1.0)

    # -- files -----------------------------------------------------------------------

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def save(self, path: str | Path, *, extra: dict[str, Any] | None = None) -> Path:
        """Write the weights as fp16 with the config (``extra`` is stored alongside)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().to("cpu", torch.float16) for k, v in self.state_dict().items()}
        tmp = path.with_name(path.name + ".tmp")
        torch.save({"config": asdict(self.config), "model": state, **(extra or {})}, tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path, *, device: str | torch.device = "cpu") -> LiteVocoder:
        """A file :meth:`save` wrote, or a shipped ONNX file :meth:`export_onnx` wrote, as
        float32 in eval mode."""
        if Path(path).suffix == ".onnx":
            from emostream.networks import onnx_weights

            info, state = onnx_weights.read_export(path)
            model = cls(LiteVocoderConfig.from_dict(info[onnx_weights.CONFIG_KEY]))
            model.load_state_dict(
                {k: torch.from_numpy(state[k].astype(np.float32)) for k in model.state_dict()}
            )
            return model.eval().to(device)
        raw: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
        model = cls(LiteVocoderConfig.from_dict(raw["config"]))
        model.load_state_dict({k: v.float() for k, v in raw["model"].items()})
        return model.eval().to(device)

    def export_onnx(
        self,
        path: str | Path,
        *,
        opset: int = 17,
        half: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """ONNX (dynamic frames): input ``mel`` ``[1, n_mels, T]``, output ``audio``
        ``[1, T * hop]``. Parameters keep their ``state_dict`` names and the config is in the
        metadata (:meth:`load` reads the file back); ``half`` stores the weights as float16;
        ONNX Runtime computes in float32. The iSTFT basis is not stored: a few nodes compute
        it, folded at load (:func:`basis_nodes`)."""
        from emostream.networks.onnx_weights import finish_export

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        model = copy.deepcopy(self).to(device="cpu", dtype=torch.float32).eval()
        example = torch.full((1, self.n_mels, 40), LOG_CLAMP)
        with warnings.catch_warnings():
            # The TorchScript exporter is deprecated but needs no onnxscript (see hifigan.py).
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            torch.onnx.export(
                model,
                (example,),
                str(path),
                input_names=["mel"],
                output_names=["audio"],
                dynamic_axes={"mel": {2: "frames"}, "audio": {1: "samples"}},
                opset_version=opset,
                dynamo=False,
                do_constant_folding=False,  # keeps the state_dict names (ORT folds)
            )
        state = {k: v.float().numpy() for k, v in model.state_dict().items()}
        return finish_export(
            path,
            config=asdict(self.config),
            half=half,
            extra=extra,
            state=state,
            rewrite=partial(_inline_basis, n_fft=self.config.n_fft),
        )

    @torch.no_grad()
    def decode(self, mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """numpy ``[n_mels, T]`` -> ``[T * hop]`` (torch, on this module's device)."""
        dev = next(self.parameters()).device
        x = torch.from_numpy(np.ascontiguousarray(mel, dtype=np.float32))[None].to(dev)
        out: npt.NDArray[np.float32] = self(x)[0].float().cpu().numpy()
        return out


def _init(m: nn.Module) -> None:
    if isinstance(m, (nn.Conv1d, nn.Linear)):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)


__all__ = [
    "CONTEXT_FRAMES",
    "LiteVocoder",
    "LiteVocoderConfig",
    "OnnxLiteVocoder",
    "basis_nodes",
    "chunk_snr",
    "decode_chunked",
    "inverse_dft_basis",
]
