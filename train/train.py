"""Resumable training of :class:`~emostream.networks.acoustic.AcousticModel` on teacher shards.

Designed for short device windows: it stops cleanly once ``--budget`` seconds have passed
(default 8.5 min), always leaving ``last.pt`` (weights, optimiser, step, RNG-free state) that
the next call resumes from, plus ``model_fp16.pt`` (weights only, shippable). bf16 autocast on
CUDA; progress bar (tqdm when installed) and periodic held-out evaluation in the log.

    python -m train.train --corpus models/corpus/v1 --out runs/a --budget 510
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from emostream.networks import contour
from emostream.networks.acoustic import (
    AcousticConfig,
    AcousticModel,
    predicted_frames,
    read_checkpoint,
)
from train.corpus import Utterance, dequantize_mel, read_shard
from train.mel_gan import MelDiscriminator
from train.mel_gan import d_loss as mel_d_loss
from train.mel_gan import g_loss as mel_g_loss
from train.mel_gan import windows as mel_windows

log = logging.getLogger(__name__)
VOICED_HZ = 60.0
CONTOUR = 2  # shape coefficients fitted per unit (a model uses its config's first k)


@dataclass
class Item:
    ids: npt.NDArray[np.int64]
    tones: npt.NDArray[np.int64]
    langs: npt.NDArray[np.int64]
    durations: npt.NDArray[np.int64]
    pitch: npt.NDArray[np.float32]  # per unit: mean log F0 over voiced frames, 0 if none
    energy: npt.NDArray[np.float32]  # per unit: mean log energy
    mel: npt.NDArray[np.uint8]  # [T, 80]
    speaker: npt.NDArray[np.float32]  # [256]
    contour: npt.NDArray[np.float32]  # [N, CONTOUR]: log-F0 slope and bend (log Hz)
    contour_ok: npt.NDArray[np.bool_]  # [N]: the unit has enough voiced frames for them


def unit_average(
    values: npt.NDArray[np.floating],
    durations: npt.NDArray[np.integer],
    mask: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.float32]:
    """Mean of frame ``values`` over each unit's frames (only where ``mask``); 0 if none."""
    idx = np.repeat(np.arange(len(durations)), durations)
    w = np.ones(len(values)) if mask is None else mask.astype(np.float64)
    s = np.bincount(idx, weights=values.astype(np.float64) * w, minlength=len(durations))
    n = np.bincount(idx, weights=w, minlength=len(durations))
    return np.where(n > 0, s / np.maximum(n, 1e-9), 0.0).astype(np.float32)


def to_item(u: Utterance, speaker: npt.NDArray[np.float32]) -> Item:
    d = u.durations.astype(np.int64)
    f0 = u.f0.astype(np.float32)
    voiced = f0 > VOICED_HZ
    logf0 = np.log(np.maximum(f0, 1.0))
    shape, ok = contour.fit(logf0, voiced, d, CONTOUR)
    return Item(
        ids=u.ids.astype(np.int64),
        tones=u.tones.astype(np.int64),
        langs=u.langs.astype(np.int64),
        durations=d,
        pitch=unit_average(logf0, d, voiced),
        energy=unit_average(u.energy.astype(np.float32), d),
        mel=u.mel,
        speaker=speaker,
        contour=shape,
        contour_ok=ok,
    )


def load_corpus(corpus: Path, *, skip: frozenset[str] = frozenset()) -> list[Item]:
    """Every shard's utterances as training items (shards named in ``skip`` left out)."""
    spk: dict[str, npt.NDArray[np.float32]] = {}
    if (corpus / "speakers.npz").exists():
        with np.load(corpus / "speakers.npz") as z:
            spk = {k: z[k].astype(np.float32) for k in z.files}
    items = []
    for shard in sorted(corpus.glob("*.npz.xz")):
        if shard.name in skip:
            continue
        for u in read_shard(shard):
            emb = u.ge2e.astype(np.float32)
            if np.isnan(emb).any():
                emb = spk.get(u.speaker, np.zeros(256, np.float32))
            items.append(to_item(u, emb))
    return items


def corpus_stats(items: list[Item]) -> dict[str, float]:
    p = np.concatenate([it.pitch[it.pitch > 0] for it in items])
    e = np.concatenate([it.energy for it in items])
    return {
        "pitch_mean": float(p.mean()),
        "pitch_std": float(p.std() + 1e-3),
        "energy_mean": float(e.mean()),
        "energy_std": float(e.std() + 1e-3),
    }


def collate(items: list[Item], c: AcousticConfig, device: torch.device) -> dict[str, torch.Tensor]:
    b, n, t = len(items), max(len(i.ids) for i in items), max(len(i.mel) for i in items)
    out = {k: np.zeros((b, n), np.int64) for k in ("ids", "tones", "langs", "durations")}
    pitch = np.zeros((b, n), np.float32)
    energy = np.zeros((b, n), np.float32)
    kc = c.contour
    shape = np.zeros((b, n, kc), np.float32)
    shape_ok = np.zeros((b, n), np.float32)
    mel = np.full((b, t, 80), c.mel_fill, np.float32)
    for i, it in enumerate(items):
        k = len(it.ids)
        out["ids"][i, :k], out["tones"][i, :k], out["langs"][i, :k] = it.ids, it.tones, it.langs
        out["durations"][i, :k] = it.durations
        voiced = it.pitch > 0
        pitch[i, :k] = np.where(voiced, (it.pitch - c.pitch_mean) / c.pitch_std, 0.0)
        energy[i, :k] = (it.energy - c.energy_mean) / c.energy_std
        mel[i, : len(it.mel)] = dequantize_mel(it.mel)
        if kc:
            shape[i, :k] = it.contour[:, :kc] / c.pitch_std
            shape_ok[i, :k] = it.contour_ok
    batch = {k: torch.from_numpy(v).to(device) for k, v in out.items()}
    batch["pitch"] = torch.from_numpy(pitch).to(device)
    batch["energy"] = torch.from_numpy(energy).to(device)
    batch["mel"] = torch.from_numpy(mel).to(device)
    batch["contour"] = torch.from_numpy(shape).to(device)
    batch["contour_ok"] = torch.from_numpy(shape_ok).to(device)
    batch["speaker"] = torch.from_numpy(np.stack([i.speaker for i in items])).to(device)
    return batch


def batches(items: list[Item], frames_per_batch: int, rng: random.Random) -> Iterator[list[Item]]:
    """Length-bucketed batches of about ``frames_per_batch`` mel frames, shuffled."""
    order = sorted(range(len(items)), key=lambda i: len(items[i].mel) + rng.random() * 40)
    groups: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        longest = max(longest, len(items[i].mel))
        if cur and longest * (len(cur) + 1) > frames_per_batch:
            groups.append(cur)
            cur, longest = [], len(items[i].mel)
        cur.append(i)
    if cur:
        groups.append(cur)
    rng.shuffle(groups)
    for g in groups:
        yield [items[i] for i in g]


def losses(
    model: AcousticModel,
    batch: dict[str, torch.Tensor],
    keep: dict[str, torch.Tensor] | None = None,
    *,
    total_dur: float = 0.0,
) -> dict[str, torch.Tensor]:
    """Teacher-forced losses of ``batch``; ``keep`` (optional) receives the predicted mel
    (``mel``) and each utterance's frame count (``frames``).

    ``pace`` (reported, not trained): the predicted frames over the teacher's, summed over
    the batch (below 1: the model speaks faster); ``total_dur``: the mean squared log ratio
    of each utterance's predicted and true length, added to the loss with weight
    ``total_dur`` when that is > 0 (it pulls back the per-unit log-duration loss's bias to
    short durations)."""
    b = batch
    emotion = torch.zeros(len(b["ids"]), dtype=torch.long, device=b["ids"].device)
    out = model(
        b["ids"],
        b["tones"],
        b["langs"],
        b["speaker"],
        emotion,
        torch.ones(len(b["ids"]), device=b["ids"].device),
        b["durations"],
        b["pitch"],
        b["energy"],
        b["contour"] if model.config.contour else None,
    )
    keep_u = (~out["unit_pad"]).float()
    keep_f = (~out["frame_pad"]).float().unsqueeze(-1)
    if keep is not None:
        keep["mel"], keep["frames"] = out["mel"], (~out["frame_pad"]).sum(1)
    mel_l1 = ((out["mel"].float() - b["mel"]).abs() * keep_f).sum() / (keep_f.sum() * 80)
    log_d = torch.log(b["durations"].float() + 1.0)
    dur = ((out["log_duration"].float() - log_d) ** 2 * keep_u).sum() / keep_u.sum()
    pred_d = predicted_frames(out["log_duration"].float()) * keep_u
    true_len = (b["durations"].float() * keep_u).sum(1)
    pace = pred_d.detach().sum() / true_len.sum().clamp(min=1.0)
    vu = (b["pitch"] != 0).float() * keep_u
    pitch = ((out["pitch"].float() - b["pitch"]) ** 2 * vu).sum() / vu.sum().clamp(min=1)
    energy = ((out["energy"].float() - b["energy"]) ** 2 * keep_u).sum() / keep_u.sum()
    total = mel_l1 + dur + 0.1 * pitch + 0.1 * energy
    parts = {"mel_l1": mel_l1, "dur": dur, "pitch": pitch, "energy": energy, "pace": pace}
    ratio = torch.log(pred_d.sum(1) + 1.0) - torch.log(true_len + 1.0)
    parts["total_dur"] = (ratio**2).mean()
    if total_dur > 0:
        total = total + total_dur * parts["total_dur"]
    if model.config.contour:
        ok = b["contour_ok"] * keep_u
        err = ((out["contour"].float() - b["contour"]) ** 2).sum(-1)
        parts["contour"] = (err * ok).sum() / ok.sum().clamp(min=1)
        total = total + 0.1 * parts["contour"]
    return {"loss": total, **parts}


def score(
    model: AcousticModel,
    items: list[Item],
    device: torch.device,
    *,
    frames_per_batch: int = 12000,
) -> dict[str, float]:
    """Mean of :func:`losses` over ``items`` (teacher-forced; bf16 on CUDA), in the model's
    current mode: the trainer's evaluations and ``models/recipes/valpick.py`` alike."""
    acc: dict[str, float] = {}
    with torch.no_grad(), torch.autocast("cuda", torch.bfloat16, enabled=device.type == "cuda"):
        for group in batches(items, frames_per_batch, random.Random(0)):
            for k, v in losses(model, collate(group, model.config, device)).items():
                acc[k] = acc.get(k, 0.0) + float(v) * len(group)
    return {k: v / len(items) for k, v in acc.items()}


@dataclass
class TrainConfig:
    lr: float = 1e-3
    warmup: int = 1000
    frames_per_batch: int = 12000
    eval_every: int = 500
    save_every: int = 1000
    eval_fraction: float = 0.02
    seed: int = 0
    cooldown: float = 0.0  # last share of the run (budget or max_steps) with the rate → 0
    cooldown_floor: float = 0.02  # ... down to this share of the scheduled rate
    freeze: tuple[str, ...] = ()  # top-level modules kept as they are (see PROSODY_MODULES)
    mel_gan: float = 0.0  # weight of the mel discriminator's losses (0: off; mel_gan.py)
    mel_gan_window: int = 64  # frames per discriminator window
    total_dur: float = 0.0  # weight of the utterance-length loss (see losses; 0: off)


# Everything that decides what is said and how (units, durations, pitch, pitch shapes,
# energy) before the frames: ``--freeze prosody`` keeps these and trains the rest (the
# variance embeddings, length-regulator features, decoder and mel head).
PROSODY_MODULES = (
    "symbol_emb", "tone_emb", "lang_emb", "encoder", "speaker_proj", "emotion_emb",
    "duration", "pitch", "energy", "contour",
)  # fmt: skip


def freeze(model: nn.Module, names: tuple[str, ...]) -> int:
    """Stop gradients to the top-level modules ``names`` ("prosody" stands for
    :data:`PROSODY_MODULES`); returns how many parameters are frozen. Raises ``ValueError``
    for a name the model does not have."""
    have = dict(model.named_children())
    prosody = tuple(m for m in PROSODY_MODULES if m in have)  # contour: only with contours
    wanted = {m for n in names for m in (prosody if n == "prosody" else (n,))}
    unknown = sorted(wanted - set(have))
    if unknown:
        raise ValueError(f"no such module to freeze: {', '.join(unknown)}")
    frozen = 0
    for name in wanted:
        for param in have[name].parameters():
            param.requires_grad_(False)
            frozen += param.numel()
    return frozen


REWARM = 200  # steps of learning-rate ramp after a weights-only warm start


def lr_at(step: int, tc: TrainConfig) -> float:
    return tc.lr * min(1.0, (step + 1) / tc.warmup) * min(1.0, math.sqrt(tc.warmup / (step + 1)))


def cooldown_factor(progress: float, tc: TrainConfig) -> float:
    """Multiplier of the scheduled rate at ``progress`` (0..1 of the run: seconds of the
    budget, or steps of ``max_steps``): 1 until the last ``tc.cooldown`` of the run, then
    linear down to ``tc.cooldown_floor``. A window ends on a settled model rather than
    mid-stride of a rate that is still high (the held-out loss of window 2 swung ±0.005 at
    its end)."""
    if tc.cooldown <= 0.0:
        return 1.0
    left = (1.0 - progress) / tc.cooldown
    return max(tc.cooldown_floor, min(1.0, left))


def train(
    corpus: Path,
    out: Path,
    *,
    budget_s: float = 510.0,
    max_steps: int = 0,
    tc: TrainConfig | None = None,
    model_config: dict[str, Any] | None = None,
    device: str | None = None,
    init: Path | None = None,
    follow: bool = False,
    val_corpus: Path | None = None,
    contour_k: int | None = None,
) -> dict[str, Any]:
    """Train until ``budget_s`` or ``max_steps`` (0 = no limit); resume from ``out/last.pt``.

    Without ``last.pt``, ``init`` (a shipped ``model_fp16.pt``: weights, config and step only)
    warm-starts the weights with a fresh optimiser — how a window on a new machine continues
    when the 190 MB optimiser state could not travel. The learning rate then ramps up again
    over ``REWARM`` steps; embedding tables that grew since (symbols appended) keep their
    trained rows.

    ``follow``: the corpus is still being rendered; shards that appear join the training
    set at the next epoch (the held-out set stays the one drawn at the start).

    ``val_corpus``: utterances of speakers the training never sees (validation voices, not
    the test voices), scored at every evaluation beside the held-out split of the training
    speakers; the model at its lowest validation mel L1 is kept as ``best_fp16.pt``. The
    training corpus's own held-out split only measures fit to its speakers: window 3's
    candidate improved there and got worse on unseen voices.

    ``contour_k``: log-F0 shape coefficients per unit for a new or warm-started model
    (:mod:`emostream.networks.contour`; None keeps the warm start's, 0 for a new model); a
    warm start from a model without them begins with them at zero."""
    t0 = time.monotonic()
    tc = tc or TrainConfig()
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    out.mkdir(parents=True, exist_ok=True)
    seen = frozenset(p.name for p in corpus.glob("*.npz.xz"))
    items = load_corpus(corpus)
    rng = random.Random(tc.seed)
    idx = list(range(len(items)))
    rng.shuffle(idx)
    n_eval = max(1, int(len(items) * tc.eval_fraction))
    held, train_items = [items[i] for i in idx[:n_eval]], [items[i] for i in idx[n_eval:]]
    ckpt = out / "last.pt"
    state: dict[str, Any] | None = None
    warm: dict[str, Any] | None = None
    if ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        cfg = AcousticConfig.from_dict(state["config"])
    elif init is not None:
        warm = read_checkpoint(init)  # a shipped .onnx or a model_fp16.pt
        from emostream.text.phonemes import SYMBOLS

        n_symbols = max(int(warm["config"].get("n_symbols", 0)), len(SYMBOLS))
        cfg = AcousticConfig.from_dict({**warm["config"], "n_symbols": n_symbols})
    else:
        cfg = AcousticConfig.from_dict({**(model_config or {}), **corpus_stats(train_items)})
    if state is None and contour_k is not None:
        cfg.contour = contour_k
    if cfg.contour > CONTOUR:
        raise ValueError(f"contour {cfg.contour}: the trainer fits at most {CONTOUR}")
    model = AcousticModel(cfg).to(dev)
    if tc.freeze:
        log.info("frozen: %s (%d parameters)", ",".join(tc.freeze), freeze(model, tc.freeze))
    opt = torch.optim.AdamW(
        [q for q in model.parameters() if q.requires_grad],
        lr=tc.lr,
        betas=(0.9, 0.98),
        weight_decay=0.01,
    )
    step, epoch = 0, 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        step, epoch = int(state["step"]), int(state["epoch"])
        log.info("resumed from %s at step %d", ckpt, step)
    rewarm_from = -1
    if warm is not None:
        missing, unexpected = model.load_state_dict(
            _grown(model.state_dict(), warm["model"]), strict=False
        )
        new = [k for k in missing if not k.startswith("contour")]
        if new or unexpected:
            raise ValueError(f"warm start does not fit: missing {new}, unexpected {unexpected}")
        if missing:
            log.info("warm start: %d contour tensors start at zero", len(missing))
        step = rewarm_from = int(warm.get("step", 0))
        log.info("warm start from %s (step %d, fresh optimiser)", init, step)
    amp = dev.type == "cuda"
    history: list[dict[str, float]] = []
    disc: MelDiscriminator | None = None
    opt_d: torch.optim.Optimizer | None = None
    if tc.mel_gan > 0:
        disc = MelDiscriminator().to(dev)
        opt_d = torch.optim.AdamW(disc.parameters(), lr=2e-4, betas=(0.8, 0.99))
        if state is not None and "disc" in state:
            disc.load_state_dict(state["disc"])
            opt_d.load_state_dict(state["opt_d"])
        log.info("mel discriminator: weight %g, windows of %d frames", tc.mel_gan,
                 tc.mel_gan_window)  # fmt: skip

    def save() -> None:
        gan = {} if disc is None or opt_d is None else {
            "disc": disc.state_dict(), "opt_d": opt_d.state_dict()
        }  # fmt: skip
        torch.save(
            {
                "config": asdict(cfg),
                "model": model.state_dict(),
                "optim": opt.state_dict(),
                "step": step,
                "epoch": epoch,
                "train": asdict(tc),
                **gan,
            },
            out / "last.tmp",
        )
        (out / "last.tmp").replace(ckpt)
        model.save(out / "model_fp16.pt", extra={"step": step})

    val = load_corpus(val_corpus) if val_corpus is not None else []
    best: dict[str, float] = {}

    def score_(items: list[Item]) -> dict[str, float]:
        model.eval()
        result = score(model, items, dev, frames_per_batch=tc.frames_per_batch)
        model.train()
        return result

    def evaluate() -> dict[str, float]:
        """Held-out split of the training speakers, and ``val_*`` on the validation
        speakers (keeping ``best_fp16.pt`` at the lowest validation mel L1)."""
        ev = score_(held)
        if val:
            v = score_(val)
            ev.update({f"val_{k}": x for k, x in v.items()})
            if not best or v["mel_l1"] < best["val_mel_l1"]:
                best.clear()
                best.update({"step": step, "val_mel_l1": v["mel_l1"]})
                model.save(out / "best_fp16.pt", extra={"step": step, "val": v})
        return ev

    bar = _progress(max_steps or None, step)
    first_step = step
    stop = False
    while not stop:
        for group in batches(train_items, tc.frames_per_batch, random.Random(tc.seed + epoch)):
            progress = (time.monotonic() - t0) / budget_s
            if max_steps:
                progress = max(progress, (step - first_step) / max(max_steps - first_step, 1))
            for g in opt.param_groups:
                g["lr"] = (
                    lr_at(step, tc)
                    * (min(1.0, (step - rewarm_from) / REWARM) if rewarm_from >= 0 else 1.0)
                    * cooldown_factor(progress, tc)
                )
            kept: dict[str, torch.Tensor] = {}
            batch = collate(group, cfg, dev)
            with torch.autocast("cuda", torch.bfloat16, enabled=amp):
                parts = losses(model, batch, kept if disc is not None else None,
                               total_dur=tc.total_dur)  # fmt: skip
            if disc is not None and opt_d is not None:
                real, fake = mel_windows(batch["mel"], kept["mel"], kept["frames"],
                                         tc.mel_gan_window)  # fmt: skip
                if len(real):
                    with torch.autocast("cuda", torch.bfloat16, enabled=amp):
                        loss_d = mel_d_loss(disc, real, fake)
                    opt_d.zero_grad(set_to_none=True)
                    loss_d.backward()  # type: ignore[no-untyped-call]
                    opt_d.step()
                    with torch.autocast("cuda", torch.bfloat16, enabled=amp):
                        adv, fm = mel_g_loss(disc, real, fake)
                    parts["loss"] = parts["loss"] + tc.mel_gan * (adv + 2.0 * fm)
                    parts.update({"d": loss_d.detach(), "adv": adv, "fm": fm})
            opt.zero_grad(set_to_none=True)
            parts["loss"].backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            bar(step, {k: float(v.detach()) for k, v in parts.items()})
            if step % tc.eval_every == 0:
                ev = evaluate()
                history.append({"step": step, **ev})
                log.info(
                    "eval step %d: %s", step, json.dumps({k: round(v, 4) for k, v in ev.items()})
                )
            if step % tc.save_every == 0:
                save()
            if (max_steps and step >= max_steps) or time.monotonic() - t0 > budget_s:
                stop = True
                break
        else:
            epoch += 1
            if follow:
                now = frozenset(p.name for p in corpus.glob("*.npz.xz"))
                if now - seen:
                    train_items += load_corpus(corpus, skip=seen)
                    log.info("epoch %d: %d training utterances", epoch, len(train_items))
                    seen = now
    ev = evaluate()
    history.append({"step": step, **ev})
    save()
    summary = {
        "step": step,
        "epoch": epoch,
        "eval": ev,
        "history": history,
        "train_utterances": len(train_items),
        "eval_utterances": len(held),
        "val_utterances": len(val),
        "best": dict(best),
        "seconds": round(time.monotonic() - t0, 1),
        "device": str(dev),
        "last_lr": opt.param_groups[0]["lr"],
        "cooldown": tc.cooldown,
    }
    (out / f"summary-{step:07d}.json").write_text(json.dumps(summary, indent=1))
    log.info("stopped at step %d (%.0f s); eval %s", step, summary["seconds"], ev)
    return summary


def _grown(own: dict[str, torch.Tensor], warm: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``warm`` weights for a model whose embedding tables may have more rows than theirs."""
    out = {}
    for k, v in warm.items():
        v = v.float()
        if k in own and own[k].shape != v.shape and own[k].shape[1:] == v.shape[1:]:
            grown = own[k].detach().clone().float()
            grown[: v.shape[0]] = v
            v = grown
        out[k] = v
    return out


def _progress(total: int | None, start: int) -> Any:
    try:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=start, mininterval=5.0, unit="step")

        def update(step: int, parts: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix({k: f"{v:.3f}" for k, v in parts.items()}, refresh=False)

        return update
    except ImportError:  # pragma: no cover

        def plain(step: int, parts: dict[str, float]) -> None:
            if step % 100 == 0:
                log.info("step %d %s", step, parts)

        return plain


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="train.train")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--budget", type=float, default=510.0, help="wall seconds")
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--frames-per-batch", type=int, default=12000)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--save-every", type=int, default=1000)
    p.add_argument("--device", default=None)
    p.add_argument("--init", type=Path, default=None, help="warm start from a model_fp16.pt")
    p.add_argument("--follow", action="store_true", help="add shards that appear while training")
    p.add_argument(
        "--cooldown", type=float, default=0.0, help="last share of the run with the rate → 0"
    )
    p.add_argument(
        "--val-corpus",
        type=Path,
        default=None,
        help="utterances of validation speakers (never trained on); keeps best_fp16.pt",
    )
    p.add_argument(
        "--contour",
        type=int,
        default=None,
        help="log-F0 shape coefficients per unit (2: slope and bend; default: as --init)",
    )
    p.add_argument(
        "--freeze",
        default="",
        help="comma-separated top-level modules not trained ('prosody': the encoder and "
        "every predictor, so durations and pitch stay the --init model's)",
    )
    p.add_argument(
        "--mel-gan",
        type=float,
        default=0.0,
        help="weight of a mel discriminator's losses (train.mel_gan; 0 = off)",
    )
    p.add_argument(
        "--total-dur",
        type=float,
        default=0.0,
        help="weight of the utterance-length loss (0 = off; the pace figure is logged anyway)",
    )
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    tc = TrainConfig(
        mel_gan=a.mel_gan,
        total_dur=a.total_dur,
        frames_per_batch=a.frames_per_batch,
        eval_every=a.eval_every,
        save_every=a.save_every,
        cooldown=a.cooldown,
        freeze=tuple(x.strip() for x in a.freeze.split(",") if x.strip()),
    )
    train(
        a.corpus,
        a.out,
        budget_s=a.budget,
        max_steps=a.max_steps,
        tc=tc,
        device=a.device,
        init=a.init,
        follow=a.follow,
        val_corpus=a.val_corpus,
        contour_k=a.contour,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
