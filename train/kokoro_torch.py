"""Kokoro-82M as a PyTorch teacher: the ``kokoro`` package's own network, our int8 weights.

The only Kokoro weights to be had offline are the int8 ONNX export (see
:mod:`train.teacher`). Its initialisers keep the torch parameter names, or name the
node that consumes them (``/encoder/F0.0/conv1/Conv_quant``), so each one maps onto a
parameter of the ``kokoro`` package's ``KModel`` (PyPI ``kokoro``, Apache-2.0, the network
definition only). Weights are dequantised (``(q - zero_point) * scale``, per tensor or per
channel), weight-normalised layers get ``v = W`` and ``g = ‖W‖`` (so ``g·v/‖v‖ = W``) and
ONNX LSTM gates (i, o, f, c) are reordered to torch's (i, f, g, o).

The activations are not quantised here (the ONNX graph quantises them on the fly, uint8 per
tensor), so the port is the float network the int8 model approximates: `tests/train/
test_kokoro_torch.py` measures how close the two are (durations per token, audio).

``KokoroTorchTeacher`` exposes what :class:`~train.teacher.KokoroTeacher` does
(audio, frames per token, F0 at twice the frame rate) and runs on CPU or CUDA. Its forward
is batched: sequences are padded, masks keep the text side exact, and the decoder runs on
each utterance's own length (its instance norms see the whole sequence).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
import types
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from train.teacher import MAX_TOKENS, TeacherOutput, style_row

# ONNX scope → KModel attribute. The export wrapper hoisted the prosody predictor's F0/N
# blocks and shared LSTM one level up ("/encoder/F0.0" is ``predictor.F0.0``).
_PREFIXES = (
    ("decoder.decoder.", "decoder."),
    ("encoder.F0.", "predictor.F0."),
    ("encoder.N.", "predictor.N."),
    ("encoder.shared.", "predictor.shared."),
    ("encoder.", ""),
)


def _kokoro_package() -> Any:
    """Import ``kokoro.model`` without running ``kokoro/__init__``: that imports its text
    pipeline (misaki's English G2P, spaCy), which a teacher fed token ids never needs."""
    if "kokoro" not in sys.modules:
        spec = importlib.util.find_spec("kokoro")
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError("pip install --no-deps kokoro==0.9.4 loguru (and transformers)")
        pkg = types.ModuleType("kokoro")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["kokoro"] = pkg
    import kokoro.istftnet
    import kokoro.model

    kokoro.istftnet.torch = _NoiselessTorch()
    return kokoro.model


class _NoiselessTorch(types.ModuleType):
    """``torch`` as Kokoro's decoder module sees it, minus the noise: the harmonic source's
    random initial phases (``torch.rand``) and additive noise (``torch.randn_like``) are
    zeros. The ONNX export has neither, so this is the teacher the corpus was made with,
    and the same tokens and style always give the same audio."""

    def __init__(self) -> None:
        super().__init__("torch")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    @staticmethod
    def rand(*size: Any, **kwargs: Any) -> torch.Tensor:
        return torch.zeros(*size, **kwargs)

    @staticmethod
    def randn_like(x: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return torch.zeros_like(x, **kwargs)


def kokoro_config() -> dict[str, Any]:
    """Kokoro v1.0's network configuration and vocabulary (shipped in ``kokoro_onnx``)."""
    spec = importlib.util.find_spec("kokoro_onnx")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pip install kokoro-onnx (for its config.json)")
    cfg: dict[str, Any] = json.loads(
        (Path(spec.origin).parent / "config.json").read_text(encoding="utf-8")
    )
    return cfg


def _map_name(name: str) -> str:
    for src, dst in _PREFIXES:
        if name.startswith(src):
            return dst + name[len(src) :]
    raise KeyError(name)


def _scope_to_module(node_name: str) -> str:
    """``/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant`` → ``text_encoder.cnn.0.0``."""
    parts: list[str] = []
    for comp in node_name.strip("/").split("/")[:-1]:
        comp = re.sub(r"_\d+$", "", comp)  # repeated calls of a shared layer: "query_3"
        if parts and comp.startswith(parts[-1] + "."):
            parts[-1] = comp
        else:
            parts.append(comp)
    return _map_name(".".join(parts) + ".")[:-1]


def _dequantize(q: npt.NDArray[Any], scale: npt.NDArray[Any], zp: npt.NDArray[Any]) -> Any:
    q = q.astype(np.float32)
    if scale.ndim == 0:
        return (q - zp.astype(np.float32)) * scale
    # Per channel: a MatMul's B [in, out] per output column; conv [out, in, k] and LSTM
    # [directions, ...] tensors along their first axis.
    axis = 1 if q.ndim == 2 and q.shape[1] == scale.shape[0] else 0
    shape = [1] * q.ndim
    shape[axis] = scale.shape[0]
    return (q - zp.astype(np.float32).reshape(shape)) * scale.reshape(shape)


def _lstm(prefix: str, w: Any, r: Any, b: Any) -> dict[str, torch.Tensor]:
    """ONNX (quantised) LSTM tensors → torch ``nn.LSTM`` parameters (bidirectional)."""
    hidden = r.shape[1] if r.shape[1] * 4 == r.shape[2] else r.shape[2]
    out: dict[str, torch.Tensor] = {}
    order = [0, 2, 3, 1]  # ONNX gates i, o, f, c → torch i, f, g, o

    def gates(m: Any) -> Any:
        return np.concatenate([m[k * hidden : (k + 1) * hidden] for k in order], axis=0)

    for d, suffix in enumerate(("", "_reverse")):
        wd, rd = w[d], r[d]
        # DynamicQuantizeLSTM stores W as [input, 4H] and R as [H, 4H]; plain LSTM [4H, ·].
        if wd.shape[0] != 4 * hidden:
            wd, rd = wd.T, rd.T
        out[f"{prefix}.weight_ih_l0{suffix}"] = torch.from_numpy(gates(wd).copy())
        out[f"{prefix}.weight_hh_l0{suffix}"] = torch.from_numpy(gates(rd).copy())
        out[f"{prefix}.bias_ih_l0{suffix}"] = torch.from_numpy(gates(b[d][: 4 * hidden]).copy())
        out[f"{prefix}.bias_hh_l0{suffix}"] = torch.from_numpy(gates(b[d][4 * hidden :]).copy())
    return out


def onnx_state_dict(onnx_path: Path) -> dict[str, torch.Tensor]:
    """Float tensors keyed by ``KModel`` parameter names (weight norm already folded)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    raw = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for k, inp in enumerate(node.input):
            consumers.setdefault(inp, []).append((node, k))
    # Zero points equal between tensors were deduplicated: find a tensor's own through the
    # integer op that reads it (its 4th input) or the DequantizeLinear that reads its scale.
    zero_points: dict[str, str] = {}
    for n in model.graph.node:
        if n.op_type in ("MatMulInteger", "ConvInteger") and len(n.input) > 3:
            zero_points[n.input[1]] = n.input[3]
        elif n.op_type == "DynamicQuantizeLSTM":
            zero_points[n.input[1]], zero_points[n.input[2]] = n.input[9], n.input[11]
        elif n.op_type == "DequantizeLinear" and len(n.input) > 2:
            zero_points[n.input[1]] = n.input[2]
    floats: dict[str, Any] = {}
    for name, arr in raw.items():
        if name.endswith("_quantized"):
            base = name[: -len("_quantized")]
            zp = raw.get(base + "_zero_point")
            if zp is None:
                zp = raw[zero_points.get(name) or zero_points[base + "_scale"]]
            floats[base] = _dequantize(arr, raw[base + "_scale"], zp)
        elif arr.dtype == np.float32 and not name.endswith(("_scale", "_zero_point")):
            floats[name] = arr
    out: dict[str, torch.Tensor] = {}
    lstm_parts: dict[str, dict[int, Any]] = {}
    for base, value in floats.items():
        key = base if base.startswith(("encoder.", "decoder.")) else ""
        users = consumers.get(base + "_quantized", []) + consumers.get(base, [])
        if key:
            key = _map_name(key)
            op = users[0][0].op_type if users else ""
            if op in ("MatMulInteger", "MatMul") and value.ndim == 2:
                value = value.T  # MatMul's B is [in, out]; nn.Linear keeps [out, in]
            out[key] = torch.tensor(np.asarray(value, dtype=np.float32))
            continue
        if not users:
            continue
        node, slot = users[0]
        if node.op_type == "DynamicQuantizeLSTM" or node.op_type == "LSTM":
            lstm_parts.setdefault(_scope_to_module(node.name), {})[slot] = value
            continue
        module = _scope_to_module(node.name)
        if node.op_type in ("ConvInteger", "Conv", "ConvTranspose") and slot in (1, 3):
            out[module + ".weight"] = torch.tensor(np.asarray(value, dtype=np.float32))
        elif node.op_type in ("MatMulInteger", "MatMul") and value.ndim == 2:
            out[module + ".weight"] = torch.tensor(np.asarray(value.T, dtype=np.float32))
    for module, parts in lstm_parts.items():
        out.update(_lstm(module, parts[1], parts[2], parts[3]))
    return out


def _fold_weight_norm(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """For weight-normalised layers, turn ``X.weight`` into ``X.weight_g``/``X.weight_v``."""
    own = model.state_dict()
    for key in list(state):
        if not key.endswith(".weight") or key in own:
            continue
        stem = key[: -len(".weight")]
        if stem + ".weight_v" in own:
            w = state.pop(key)
            g = torch.linalg.vector_norm(w, dim=tuple(range(1, w.ndim)), keepdim=True)
            # A row quantised to all zeros has no direction: any v with g = 0 gives W = 0.
            state[stem + ".weight_v"] = torch.where(g > 0, w, torch.ones_like(w))
            state[stem + ".weight_g"] = g


def load_kmodel(onnx_path: Path) -> torch.nn.Module:
    """``KModel`` with the int8 ONNX weights (dequantised), in eval mode on CPU."""
    km = _kokoro_package()
    cfg = kokoro_config()
    # KModel reads its weights from a file (or downloads them): give it an empty one, in a
    # temporary folder rather than beside the model, and load ours below.
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package's LSTM dropout and weight_norm notices
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        model: torch.nn.Module = km.KModel(
            repo_id="hexgrad/Kokoro-82M", config=cfg, model=str(empty)
        )
    state = onnx_state_dict(onnx_path)
    _fold_weight_norm(model, state)
    own = model.state_dict()
    for key, value in state.items():
        if key in own and own[key].shape != value.shape:
            if own[key].numel() == value.numel():
                state[key] = value.reshape(own[key].shape)
            else:
                raise ValueError(f"{key}: {tuple(value.shape)} vs {tuple(own[key].shape)}")
    unknown = sorted(k for k in state if k not in own and not _derived(k))
    if unknown:
        raise KeyError(f"ONNX tensors with no KModel parameter: {unknown[:8]}")
    for key in own:  # AdaIN's instance norms: the graph normalises with no affine step
        if re.search(r"\.(norm\d|adain\d\.\d+)\.norm\.(weight|bias)$", key) and key not in state:
            fill = torch.ones_like if key.endswith("weight") else torch.zeros_like
            state[key] = fill(own[key])
    missing = [k for k in own if k not in state and not _derived(k)]
    if missing:
        raise KeyError(f"KModel parameters missing from the ONNX weights: {missing[:8]}")
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    return model.eval()


def _derived(key: str) -> bool:
    """Tensors the two sides compute themselves (positions, STFT bases) or never use."""
    unused = key.startswith("bert.pooler.")  # ALBERT's pooler: KModel reads hidden states
    return unused or key.endswith(("position_ids", "num_batches_tracked")) or ".stft." in key


@dataclass
class _Batch:
    tokens: torch.Tensor  # [B, N] with the two pads
    lengths: torch.Tensor  # [B]
    style: torch.Tensor  # [B, 256]


class KokoroTorchTeacher:
    """Kokoro on torch (CPU or CUDA), the same interface as the ONNX ``KokoroTeacher``."""

    def __init__(self, onnx_path: Path, *, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.model: Any = load_kmodel(onnx_path).to(self.device)

    def __call__(
        self, tokens: list[int], style_table: npt.NDArray[np.float32], *, speed: float = 1.0
    ) -> TeacherOutput:
        return self.batch([tokens], [style_table], speed=speed)[0]

    @torch.no_grad()
    def batch(
        self,
        token_lists: Sequence[list[int]],
        styles: Sequence[npt.NDArray[np.float32]],
        *,
        speed: float = 1.0,
        frames: Sequence[npt.NDArray[np.int64]] | None = None,
    ) -> list[TeacherOutput]:
        """Render several utterances; the text side runs as one padded batch.

        ``frames`` (frames per token, pads included) replaces the predicted durations: how
        the parity test compares the decoders on one alignment."""
        b = self._pack(token_lists, styles)
        m = self.model
        n = b.tokens.shape[1]
        pad = torch.arange(n, device=self.device)[None, :] >= b.lengths[:, None]  # True = pad
        bert = m.bert(b.tokens, attention_mask=(~pad).int())
        d_en = m.bert_encoder(bert).transpose(-1, -2)
        s_pro, s_dec = b.style[:, 128:], b.style[:, :128]
        d = m.predictor.text_encoder(d_en, s_pro, b.lengths, pad)
        x, _ = self._lstm(m.predictor.lstm, d, b.lengths)
        dur = torch.sigmoid(m.predictor.duration_proj(x)).sum(dim=-1) / speed
        pred = torch.round(dur).clamp(min=1).long().masked_fill(pad, 0)
        t_en = m.text_encoder(b.tokens, b.lengths, pad)
        out: list[TeacherOutput] = []
        for i in range(len(token_lists)):
            k = int(b.lengths[i])
            f = pred[i, :k]
            if frames is not None:
                f = torch.as_tensor(frames[i], device=self.device).long()
            aln = torch.repeat_interleave(torch.eye(k, device=self.device), f, dim=1)[None]
            en = d[i : i + 1, :k].transpose(-1, -2) @ aln
            f0, noise = m.predictor.F0Ntrain(en, s_pro[i : i + 1])
            asr = t_en[i : i + 1, :, :k] @ aln
            audio = m.decoder(asr, f0, noise, s_dec[i : i + 1]).reshape(-1)
            out.append(
                TeacherOutput(
                    audio=audio.float().cpu().numpy(),
                    token_frames=f.cpu().numpy().astype(np.int64),
                    f0=f0.reshape(-1).float().cpu().numpy(),
                )
            )
        return out

    @staticmethod
    def _lstm(lstm: torch.nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> Any:
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        y, h = lstm(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return y, h

    def _pack(
        self, token_lists: Sequence[list[int]], styles: Sequence[npt.NDArray[np.float32]]
    ) -> _Batch:
        n = max(len(t) for t in token_lists) + 2
        tokens = torch.zeros(len(token_lists), n, dtype=torch.long)
        rows = []
        for i, (toks, st) in enumerate(zip(token_lists, styles)):
            if not 0 < len(toks) <= MAX_TOKENS - 2:
                raise ValueError(f"{len(toks)} tokens: Kokoro takes 1..{MAX_TOKENS - 2}")
            tokens[i, 1 : 1 + len(toks)] = torch.tensor(toks)
            rows.append(style_row(st, len(toks)).reshape(256))
        lengths = torch.tensor([len(t) + 2 for t in token_lists])
        style = torch.from_numpy(np.stack(rows).astype(np.float32))
        return _Batch(tokens.to(self.device), lengths.to(self.device), style.to(self.device))
