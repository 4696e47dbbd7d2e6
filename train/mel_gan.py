"""An adversarial loss on the acoustic model's mels (training only; nothing served changes).

Measured on the held-out Mandarin lines (``lab.prosody_oracle``, 2026-12-06): the teacher's
mel through HiFi-GAN V1 keeps its tones (6.3 % toned-syllable error), the acoustic model's
mel of the same line, given the teacher's own durations and pitch, loses them (8.7 %), and
further steps of mel L1 made it worse while the L1 kept falling. L1 regression averages the
fine harmonic structure that carries the pitch; a discriminator that tells the teacher's
mel patches from the model's pushes that structure back (as GANSpeech and JETS do for
FastSpeech 2).

:class:`MelDiscriminator` sees random windows of ``window`` frames, cut at the same places
from the teacher's and the model's (teacher-forced) mels of a batch, inside the utterance;
least-squares GAN losses, feature matching for the generator.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

LRELU = 0.2


class MelDiscriminator(nn.Module):
    """2-D convolutions over ``[B, 1, 80, T]`` mel windows: stride 2 in frequency and time
    after the first layer; returns the patch logits and every layer's features."""

    def __init__(self, channels: Sequence[int] = (32, 64, 128, 128)) -> None:
        super().__init__()
        layers, c_in = [], 1
        for i, c in enumerate(channels):
            stride = (1, 1) if i == 0 else (2, 2)
            layers.append(weight_norm(nn.Conv2d(c_in, c, (5, 5), stride, padding=(2, 2))))
            c_in = c
        self.layers = nn.ModuleList(layers)
        self.out = weight_norm(nn.Conv2d(c_in, 1, (3, 3), padding=(1, 1)))

    def forward(self, mel: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``mel`` ``[B, T, 80]`` → logits ``[B, ...]`` and features."""
        x = mel.transpose(1, 2).unsqueeze(1)
        feats = []
        for layer in self.layers:
            x = F.leaky_relu(layer(x), LRELU)
            feats.append(x)
        return self.out(x).flatten(1), feats


def windows(
    real: torch.Tensor,
    fake: torch.Tensor,
    lengths: torch.Tensor,
    window: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same random ``window``-frame slice of each utterance's real and fake mel
    (``[B, T, 80]``; utterances shorter than ``window`` are left out). Returns two
    ``[n, window, 80]`` tensors (``n`` may be 0)."""
    keep = [i for i in range(real.shape[0]) if int(lengths[i]) >= window]
    if not keep:
        empty = real.new_zeros((0, window, real.shape[-1]))
        return empty, empty.to(fake.dtype)
    hi = torch.tensor([int(lengths[i]) - window + 1 for i in keep], dtype=torch.float32)
    starts = (torch.rand(len(keep), generator=generator) * hi).long().tolist()
    r = torch.stack([real[i, s : s + window] for i, s in zip(keep, starts)])
    f = torch.stack([fake[i, s : s + window] for i, s in zip(keep, starts)])
    return r, f


def d_loss(disc: MelDiscriminator, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
    """Least-squares discriminator loss (``fake`` detached here)."""
    lr, _ = disc(real)
    lf, _ = disc(fake.detach())
    loss: torch.Tensor = ((lr.float() - 1.0) ** 2).mean() + (lf.float() ** 2).mean()
    return loss


def g_loss(
    disc: MelDiscriminator, real: torch.Tensor, fake: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Least-squares generator loss and feature matching (L1 over every layer, mean)."""
    lf, ff = disc(fake)
    with torch.no_grad():
        _, fr = disc(real)
    adv = ((lf.float() - 1.0) ** 2).mean()
    fm = sum((a.float() - b.float()).abs().mean() for a, b in zip(ff, fr)) / len(ff)
    return adv, torch.as_tensor(fm)
