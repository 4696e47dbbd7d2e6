"""Turn what a GPU window brought back into the shipped files (one ONNX file per network).

    .venv/bin/python models/recipes/ship.py --results DIR --version v0.3 \\
        [--acoustic [--pace P]] [--speakers] [--vocoder v0.1]

DIR is the window's ``$OUT`` copy (``gpu_window_v02.sh collect``): ``model_fp16.pt.*`` parts,
``speakers.npz``, ``lite_vocoder_fp16.pt``. Writes, under ``models/``:

* ``acoustic/emostream-fs2-VERSION.onnx``: the acoustic model, fp16 weights under their
  ``state_dict`` names (ONNX Runtime serves it on CPU; torch loads it for the GPU and the next
  window's warm start), step and version in the metadata;
* ``acoustic/speakers-VERSION.npz``: the corpus speakers' mean GE2E (the stock voices);
* ``vocoder/emostream-lite-vocoder-VERSION.onnx``: the light vocoder, likewise.

Each export is checked: reloaded into torch (weights identical) and run once in ONNX Runtime
against torch (SNR printed). Old versions are left for ``git rm``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))

from emostream.networks.acoustic import AcousticModel
from emostream.networks.acoustic_onnx import OnnxAcousticModel, Prosody, pack_one
from emostream.networks.lite_vocoder import LiteVocoder, OnnxLiteVocoder
from emostream.text.phonemes import G2P

MODELS = ROOT / "models"


def snr(ref: np.ndarray, test: np.ndarray) -> float:
    err = float(np.sum((ref.astype(np.float64) - test) ** 2))
    return (
        float("inf")
        if err == 0
        else 10 * np.log10(float(np.sum(ref.astype(np.float64) ** 2)) / err)
    )


def ship_acoustic(results: Path, version: str, models: Path = MODELS, pace: float = 1.0) -> Path:
    parts = sorted(results.glob("model_fp16.pt.*"))
    if not parts:
        raise SystemExit(f"no model_fp16.pt.* parts in {results}")
    with tempfile.TemporaryDirectory() as tmp:
        joined = Path(tmp) / "model_fp16.pt"
        with joined.open("wb") as f:
            for part in parts:
                f.write(part.read_bytes())
        blob = torch.load(joined, map_location="cpu", weights_only=False)
        model = AcousticModel.load(joined)
    model.config.pace = pace  # the checkpoint's own rate (1: as its duration predictor says)
    out = models / "acoustic" / f"emostream-fs2-{version}.onnx"
    model.export_onnx(out, half=True, extra={"step": int(blob.get("step", 0)), "version": version})
    again = AcousticModel.load(out)
    same = all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())
    seq = G2P()("Thanks for the follow! 谢谢大家来看我的直播。")
    speaker = np.full(256, 0.06, dtype=np.float32)
    inputs = pack_one(seq.ids(), seq.tones, seq.langs, speaker, 0, 1.0, Prosody())
    mel, dur = OnnxAcousticModel(out).infer(inputs)
    with torch.inference_mode():
        tm, td = model.infer(*(torch.from_numpy(inputs[k]) for k in
                               ("ids", "tones", "langs", "speaker", "emotion", "intensity", "controls")))  # fmt: skip
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB, step {blob.get('step')}, pace {pace}, "
          f"weights identical: {same}, durations equal: {np.array_equal(dur, td[0].numpy())}, "
          f"ORT vs torch mel SNR {snr(tm[0].numpy(), mel):.1f} dB")  # fmt: skip
    return out


def ship_vocoder(
    results: Path, version: str, models: Path = MODELS, name: str = "lite_vocoder_fp16.pt"
) -> Path:
    src = results / name
    model = LiteVocoder.load(src)
    step = int(torch.load(src, map_location="cpu", weights_only=True).get("step", 0))
    out = models / "vocoder" / f"emostream-lite-vocoder-{version}.onnx"
    model.export_onnx(out, half=True, extra={"step": step, "version": version})
    again = LiteVocoder.load(out)
    same = all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())
    mel = (np.random.default_rng(0).standard_normal((80, 200)) - 5).astype(np.float32)
    with torch.inference_mode():
        ref = model(torch.from_numpy(mel)[None])[0].numpy()
    print(
        f"{out}: {out.stat().st_size / 1e6:.2f} MB, step {step}, "
        f"weights identical: {same}, ORT vs torch SNR {snr(ref, OnnxLiteVocoder(out)(mel)):.1f} dB"
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", type=Path, required=True)
    p.add_argument("--version", required=True, help="acoustic model version, e.g. v0.3")
    p.add_argument("--acoustic", action="store_true")
    p.add_argument("--speakers", action="store_true")
    p.add_argument("--vocoder", default="", help="light vocoder version, e.g. v0.1")
    p.add_argument(
        "--vocoder-file",
        default="lite_vocoder_fp16.pt",
        help="which generator (best_fp16.pt: the lowest held-out mel L1 of the run)",
    )
    p.add_argument("--models", type=Path, default=MODELS, help="where to write (default models/)")
    p.add_argument(
        "--pace",
        type=float,
        default=1.0,
        help="the acoustic model's own rate (AcousticConfig.pace): its pace against the "
        "teacher on held-out speakers, as lab.pace measures it (1 = as predicted)",
    )
    a = p.parse_args()
    if a.acoustic:
        ship_acoustic(a.results, a.version, a.models, a.pace)
    if a.speakers:
        dst = a.models / "acoustic" / f"speakers-{a.version}.npz"
        shutil.copy(a.results / "speakers.npz", dst)
        with np.load(dst) as z:
            print(f"{dst}: {len(z.files)} speakers")
    if a.vocoder:
        ship_vocoder(a.results, a.vocoder, a.models, a.vocoder_file)


if __name__ == "__main__":
    main()
