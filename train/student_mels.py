"""The acoustic model's own mels for the light vocoder to learn from.

The light vocoder is distilled from HiFi-GAN V1 on mel windows (target = V1 on the same
window), so it can learn from any mel: this job makes the mels it will meet when served. For
each teacher shard in ``--corpus`` it runs the acoustic model (``--model``: a shipped ``.onnx``
or a ``.pt``) on the same units and speaker embedding, free-running (its own durations, pitch
and energy), with controls drawn around neutral (rate, pitch shift and range, energy, and an
emotion label for a share of the lines, applied as served: through its prosody profile,
:func:`emostream.voices.acoustic.prosody_for`, the embedding kept at the trained neutral
row), trims the silence as served
(:func:`emostream.voices.acoustic.trim_silence`), and writes the mels as a shard of the same
name in ``--out`` (durations and text kept; F0 and energy zero: the vocoder reads only mels).
``train.vocoder_gan --corpus corpus --corpus <out>`` then samples both in proportion to frames.

``--aligned`` makes ground-truth-aligned mels instead (as Tacotron 2's and HiFi-GAN's
authors fine-tuned their vocoders): the model teacher-forced with the teacher's durations,
pitch, pitch shapes and energy, no controls, no trimming, so frame ``k`` still stands for the
same samples of the teacher's audio; the shard's kept audio (``render_gpu --keep-audio``) is
linked beside the output shard, and ``train.vocoder_gan --targets audio --corpus <out>``
teaches the vocoder to turn the model's own mels into the teacher's waveform.

With ``--follow`` it keeps polling for new shards until ``--budget`` seconds have passed.
Only numpy and torch are imported (as on the GPU host).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch

from emostream.networks.acoustic import AcousticModel
from emostream.text.emotion import EMOTIONS
from emostream.voices.acoustic import prosody_for, trim_silence
from emostream.voices.base import Controls
from train.corpus import (
    Record,
    Utterance,
    audio_path,
    quantize_mel,
    read_shard,
    write_shard,
)

log = logging.getLogger(__name__)


def draw_controls(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    """``[n, 5]`` rate, pitch shift (semitones), pitch range, energy, pause: around neutral,
    within the ranges the protocol's controls reach most often."""
    c = np.ones((n, 5), np.float32)
    c[:, 0] = rng.uniform(0.85, 1.2, n)
    c[:, 1] = np.clip(rng.normal(0.0, 1.5, n), -4.0, 4.0)
    c[:, 2] = rng.uniform(0.8, 1.25, n)
    c[:, 3] = rng.uniform(0.8, 1.25, n)
    return c


def predict(
    model: AcousticModel,
    utts: list[Utterance],
    rng: np.random.Generator,
    *,
    emotion_share: float = 0.3,
    device: torch.device,
) -> list[Record]:
    """Records of ``utts`` with the model's free-running mels in place of the teacher's."""
    n = max(len(u.ids) for u in utts)
    arr = {k: np.zeros((len(utts), n), np.int64) for k in ("ids", "tones", "langs")}
    for i, u in enumerate(utts):
        arr["ids"][i, : len(u.ids)] = u.ids
        arr["tones"][i, : len(u.ids)] = u.tones
        arr["langs"][i, : len(u.ids)] = u.langs
    speaker = np.stack([np.nan_to_num(u.ge2e.astype(np.float32)) for u in utts])
    labels = np.where(
        rng.random(len(utts)) < emotion_share, rng.integers(1, len(EMOTIONS), len(utts)), 0
    )
    controls = draw_controls(rng, len(utts))
    for row in map(int, np.flatnonzero(labels)):  # as served: neutral is the trained row
        label = EMOTIONS[int(labels[row])]
        rate, shift, span, energy, pause = prosody_for(Controls(emotion=label)).row()
        controls[row] *= (rate, 1.0, span, energy, pause)
        controls[row, 1] += shift
    t = {k: torch.from_numpy(v).to(device) for k, v in arr.items()}
    with torch.no_grad():
        mel, dur = model.infer(
            t["ids"],
            t["tones"],
            t["langs"],
            torch.from_numpy(speaker).to(device),
            torch.zeros(len(utts), dtype=torch.long, device=device),
            torch.ones(len(utts), device=device),
            torch.from_numpy(controls).to(device),
        )
    mel_np = mel.float().cpu().numpy()
    dur_np = dur.cpu().numpy()
    out = []
    for i, u in enumerate(utts):
        d = dur_np[i, : len(u.ids)].astype(np.int64)
        frames, d = trim_silence(mel_np[i, : int(d.sum())].T, d)
        if frames.shape[1] == 0:
            continue
        zeros = np.zeros(frames.shape[1], np.float16)
        out.append(
            Record(
                u.utt, u.lang, u.text, u.speaker, u.ids, u.tones, u.langs,
                d.astype(np.int16), quantize_mel(frames.T.astype(np.float32)), zeros, zeros,
            )
        )  # fmt: skip
    return out


def predict_aligned(
    model: AcousticModel, utts: list[Utterance], *, device: torch.device
) -> list[Record]:
    """Records of ``utts`` with the model's teacher-forced mels (teacher durations, pitch,
    shapes, energy; speaker as stored): frame for frame the teacher's timeline."""
    from train.train import collate, to_item

    items = [to_item(u, np.nan_to_num(u.ge2e.astype(np.float32))) for u in utts]
    b = collate(items, model.config, device)
    n = len(utts)
    with torch.no_grad():
        mel = model(
            b["ids"], b["tones"], b["langs"], b["speaker"],
            torch.zeros(n, dtype=torch.long, device=device), torch.ones(n, device=device),
            b["durations"], b["pitch"], b["energy"], b["contour"] if model.config.contour else None,
        )["mel"]  # fmt: skip
    mel_np = mel.float().cpu().numpy()
    zeros = np.zeros(0, np.float16)
    return [
        Record(
            u.utt,
            u.lang,
            u.text,
            u.speaker,
            u.ids,
            u.tones,
            u.langs,
            u.durations,
            quantize_mel(mel_np[i, : u.mel.shape[0]]),
            zeros,
            zeros,
        )
        for i, u in enumerate(utts)
    ]


def convert_shard(
    model: AcousticModel,
    src: Path,
    dst: Path,
    rng: np.random.Generator,
    *,
    batch: int = 32,
    device: torch.device,
    aligned: bool = False,
) -> int:
    """Write ``dst`` with the model's mels for every utterance of ``src``; returns how many.
    ``aligned``: teacher-forced mels (:func:`predict_aligned`), and ``src``'s kept audio
    linked beside ``dst`` first (a shard that is listed has its audio)."""
    utts = sorted(read_shard(src), key=lambda u: len(u.ids))
    records: list[Record] = []
    for i in range(0, len(utts), batch):
        group = utts[i : i + batch]
        records += (
            predict_aligned(model, group, device=device)
            if aligned
            else predict(model, group, rng, device=device)
        )
    if aligned and audio_path(src).exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        audio_path(dst).unlink(missing_ok=True)
        try:
            audio_path(dst).hardlink_to(audio_path(src))
        except OSError:  # another file system
            shutil.copyfile(audio_path(src), audio_path(dst))
    write_shard(records, dst, preset=1)
    return len(records)


def run(
    corpus: Path,
    model_path: Path,
    out: Path,
    *,
    follow: bool = False,
    budget_s: float = 600.0,
    poll_s: float = 10.0,
    batch: int = 32,
    seed: int = 0,
    device: str | None = None,
    aligned: bool = False,
) -> int:
    """Convert every shard of ``corpus`` not yet in ``out``; with ``follow``, keep going until
    ``budget_s``. Returns the number of utterances written."""
    t0 = time.monotonic()
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model = AcousticModel.load(model_path).to(dev)
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    done = 0
    while True:
        todo = [p for p in sorted(corpus.glob("*.npz.xz")) if not (out / p.name).exists()]
        for src in todo:
            try:
                n = convert_shard(model, src, out / src.name, rng, batch=batch, device=dev,
                                  aligned=aligned)  # fmt: skip
            except Exception:  # a damaged shard must not end the job
                log.exception("skipping %s", src)
                continue
            done += n
            log.info(
                "%s: %d utterances (%d in all, %.0f s)", src.name, n, done, time.monotonic() - t0
            )
        if not follow or time.monotonic() - t0 > budget_s:
            return done
        time.sleep(poll_s)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, required=True, help="teacher shards (*.npz.xz)")
    p.add_argument("--model", type=Path, required=True, help="acoustic model .onnx or .pt")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--follow", action="store_true", help="keep converting new shards")
    p.add_argument("--budget", type=float, default=600.0, help="seconds (with --follow)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None)
    p.add_argument("--aligned", action="store_true",
                   help="teacher-forced mels on the teacher's timeline, kept audio linked")  # fmt: skip
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    n = run(
        a.corpus, a.model, a.out, follow=a.follow, budget_s=a.budget, batch=a.batch,
        seed=a.seed, device=a.device, aligned=a.aligned,
    )  # fmt: skip
    log.info("done: %d utterances", n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
