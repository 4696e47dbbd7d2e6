"""GE2E speaker encoder (Wan et al., 2018) as a torch module, with the weights PyPI ``resemblyzer``
0.1.4 ships, and its ONNX export.

The network: a 3-layer LSTM (40 mel bins in, 256 hidden) over a 160-frame (1.6 s) partial
utterance; the last layer's final hidden state goes through a 256→256 linear layer, a ReLU and an
L2 normalisation. The server runs the exported ONNX on CPU (:mod:`emostream.voices.cloning.encoder`, no
torch needed); a GPU engine may batch this module directly.

Export (needs torch and the ``resemblyzer`` wheel installed with ``--no-deps``; its Python code is
never imported, only its ``pretrained.pt`` read)::

    python -m emostream.networks.ge2e --out models/speaker_encoder/ge2e.onnx
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import logging
from pathlib import Path

import torch
from torch import nn

log = logging.getLogger(__name__)

N_MELS = 40
HIDDEN = 256
EMBEDDING = 256
LAYERS = 3
PARTIAL_FRAMES = 160


class GE2E(nn.Module):
    """mels ``[batch, frames, 40]`` (mel power, not log) → L2-normalised embeddings ``[batch, 256]``."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(N_MELS, HIDDEN, LAYERS, batch_first=True)
        self.linear = nn.Linear(HIDDEN, EMBEDDING)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        norm = torch.linalg.vector_norm(raw, dim=1, keepdim=True).clamp_min(1e-12)
        out: torch.Tensor = raw / norm
        return out


def resemblyzer_weights_path() -> Path:
    """``resemblyzer/pretrained.pt`` of the installed wheel, found without importing the package."""
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "resemblyzer is not installed: pip install --no-deps resemblyzer==0.1.4"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
    if not path.is_file():
        raise FileNotFoundError(f"no pretrained.pt in {path.parent}")
    return path


def load_ge2e(path: Path | None = None) -> GE2E:
    """The GE2E module with resemblyzer's trained weights, in eval mode on CPU."""
    path = path or resemblyzer_weights_path()
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    state = {
        k: v for k, v in checkpoint["model_state"].items() if k.startswith(("lstm.", "linear."))
    }
    model = GE2E()
    model.load_state_dict(state, strict=True)
    return model.eval()


def export_onnx(model: GE2E, out: Path, *, opset: int = 17) -> str:
    """Write ``model`` as ONNX (dynamic batch and frame axes); returns the file's SHA-256."""
    out.parent.mkdir(parents=True, exist_ok=True)
    example = torch.zeros(2, PARTIAL_FRAMES, N_MELS)
    torch.onnx.export(
        model,
        (example,),
        str(out),
        input_names=["mels"],
        output_names=["embedding"],
        dynamic_axes={"mels": {0: "batch", 1: "frames"}, "embedding": {0: "batch"}},
        opset_version=opset,
        dynamo=False,
    )
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    log.info("wrote %s (%d bytes, sha256 %s)", out, out.stat().st_size, digest)
    return digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export the GE2E speaker encoder to ONNX")
    parser.add_argument("--out", type=Path, default=Path("models/speaker_encoder/ge2e.onnx"))
    parser.add_argument("--weights", type=Path, default=None, help="default: resemblyzer's")
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO")
    export_onnx(load_ge2e(args.weights), args.out, opset=args.opset)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
