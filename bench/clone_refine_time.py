"""How long a clone's refinement takes (:class:`~emostream.voices.cloning.refine.TimbreRefiner`).

The clip: ``--clip FILE`` (any format the server accepts), or else 10 s of a stock voice
(``--clip-voice``, default bf_emma) spoken by the model itself, so the command needs nothing
beyond the repo. The clone: the clip's GE2E at the served gain. Devices:

* ``cpu``: what the default install runs (ONNX Runtime acoustic model, light vocoder,
  ``--threads`` intra-op threads);
* ``cuda``: the torch acoustic model and a torch vocoder on the GPU (``--vocoder v1``:
  HiFi-GAN V1 universal, the GPU default; ``lite``: the light vocoder), fp32.

Prints one JSON object: each run's seconds (the first includes warm-up), the median of the
rest, the refinement's figures::

    python bench/clone_refine_time.py --device cpu --runs 3
    python bench/clone_refine_time.py --device cuda --vocoder v1 --runs 5
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))


def load_family(device: str, vocoder: str, threads: int) -> Any:
    """The acoustic family for ``device``: on cpu what the server loads (ONNX Runtime, light
    vocoder); on cuda the torch model with a torch vocoder attached as its decoder."""
    from emostream.config import Settings
    from emostream.voices.acoustic import AcousticFamily
    from emostream.voices.catalog import load_acoustic_family

    if device == "cpu":
        return load_acoustic_family(Settings(acoustic="on", vocoder="lite", cpu_threads=threads))
    import torch

    models = REPO / "models"
    if vocoder == "v1":
        from emostream.networks.hifigan import HifiGan

        checkpoint = os.environ.get("EMOSTREAM_VOCODER_CHECKPOINT") or None  # a staged copy
        net: Any = HifiGan.load("universal", checkpoint=checkpoint).float().to("cuda").eval()
    else:
        from emostream.networks.lite_vocoder import LiteVocoder

        net = LiteVocoder.load(models / "vocoder/emostream-lite-vocoder-v0.2.onnx").to("cuda").eval()

    def decode_cuda(mel: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            audio = net(torch.from_numpy(np.ascontiguousarray(mel)).to("cuda")[None])
        return np.asarray(audio.float().reshape(-1).cpu().numpy(), dtype=np.float32)

    return AcousticFamily(models, decoder=decode_cuda, backend="torch", device="cuda")


def main(argv: list[str] | None = None) -> int:
    import soundfile as sf

    from emostream.voices.base import Controls
    from emostream.voices.cloning.clip import prepare_clip
    from emostream.voices.cloning.encoder import SpeakerEncoder
    from emostream.voices.cloning.refine import TimbreRefiner
    from emostream.voices.cloning.refine_worker import RefineTask, run_task

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--vocoder", choices=("v1", "lite"), default="v1", help="cuda only")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--clip", default="")
    p.add_argument("--clip-voice", default="bf_emma")
    p.add_argument("-o", "--output", default="")
    a = p.parse_args(argv)

    t0 = time.perf_counter()
    family = load_family(a.device, a.vocoder, a.threads)
    load_s = time.perf_counter() - t0
    if a.clip:
        data = Path(a.clip).read_bytes()
    else:
        voice = family.voice(a.clip_voice, family.speakers[a.clip_voice], language="en",
                             description="")  # fmt: skip
        lines = ["I have been reading about the old harbour town all week.",
                 "Every evening the fishing boats come back before the sun goes down.",
                 "My grandmother used to sell bread there, right by the water."]  # fmt: skip
        audio = np.concatenate([voice.decode(voice.acoustic(t, Controls()).frames) for t in lines])
        buf = io.BytesIO()
        sf.write(buf, audio[: 10 * 22050], 22050, format="WAV", subtype="PCM_16")
        data = buf.getvalue()
    clip = prepare_clip(data)
    ge2e = SpeakerEncoder()
    task = RefineTask(ge2e.embed_clip(clip), clip.audio, clip.sample_rate,
                      clip.source_sample_rate)  # fmt: skip
    refiner = TimbreRefiner(embed=ge2e.embed_utterance)
    runs, result = [], None
    for _ in range(a.runs):
        t1 = time.perf_counter()
        result = run_task(family, task, refiner=refiner)  # the server's own refinement step
        runs.append(round(time.perf_counter() - t1, 3))
    assert result is not None
    report = {
        "command": " ".join(["python bench/clone_refine_time.py", *(argv or sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d"),
        "device": a.device,
        "gpu": _gpu_name() if a.device == "cuda" else None,
        "cpu": platform.processor() or platform.machine(),
        "vocoder": a.vocoder if a.device == "cuda" else "lite (ONNX Runtime)",
        "threads": a.threads,
        "clip_s": round(clip.duration_s, 2),
        "probes": len(refiner.probes),
        "iterations": refiner.iterations,
        "load_s": round(load_s, 2),
        "runs_s": runs,
        "median_after_first_s": statistics.median(runs[1:]) if len(runs) > 1 else runs[0],
        "refinement": result.summary(),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n")
    return 0


def _gpu_name() -> str:
    import torch

    return str(torch.cuda.get_device_name(0))


if __name__ == "__main__":
    sys.exit(main())
