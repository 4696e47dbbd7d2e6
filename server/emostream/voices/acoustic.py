"""The project's own acoustic model as a :class:`~emostream.voices.base.Voice`.

``acoustic()`` runs G2P → :class:`~emostream.models.acoustic.AcousticModel` (torch) and returns
an 80-bin HiFi-GAN mel ``[80, T]`` with frames per unit. ``decode`` is pluggable: pass any
``mel [80, T] → audio`` callable (the HiFi-GAN runners of :mod:`emostream.models`); without one,
``decode`` raises.

Emotion labels map to prosody offsets (below) scaled by intensity, plus the model's emotion
embedding. The offsets are hand-set starting points, not measured: the v1 corpus is all
neutral, so the embedding has only learned "neutral" so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from emostream.models.acoustic import AcousticModel, Prosody, controls_tensor
from emostream.text.phonemes import G2P
from emostream.voices.base import EMOTIONS, Controls, Latent, VoiceInfo

# emotion → (pitch shift in semitones, pitch range scale, rate scale, energy scale)
EMOTION_PROSODY: dict[str, tuple[float, float, float, float]] = {
    "neutral": (0.0, 1.0, 1.0, 1.0),
    "happy": (2.0, 1.25, 1.05, 1.15),
    "angry": (1.0, 1.3, 1.08, 1.35),
    "sad": (-2.0, 0.7, 0.88, 0.8),
    "surprised": (3.0, 1.4, 1.0, 1.2),
    "disgusted": (-1.0, 0.9, 0.92, 1.0),
    "fearful": (1.5, 1.15, 1.1, 0.9),
}

Decoder = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]


def prosody_for(controls: Controls) -> Prosody:
    shift, rng, rate, energy = EMOTION_PROSODY.get(controls.emotion, EMOTION_PROSODY["neutral"])
    k = max(0.0, min(1.0, controls.intensity))
    return Prosody(
        rate=controls.speed * (1.0 + (rate - 1.0) * k),
        pitch_shift=controls.pitch_shift + shift * k,
        pitch_range=1.0 + (rng - 1.0) * k,
        energy=controls.energy * (1.0 + (energy - 1.0) * k),
    )


@dataclass
class AcousticVoice:
    """One speaker of the acoustic model (a stock speaker's or a cloned GE2E embedding)."""

    info: VoiceInfo
    model: AcousticModel
    speaker: npt.NDArray[np.float32]  # GE2E, 256-d
    g2p: G2P
    decoder: Decoder | None = None
    hop_length: int = 256
    context_frames: int = 14  # HiFi-GAN V1: chunked == one-shot from ~14 frames per side
    device: str = "cpu"

    def acoustic(self, text: str, controls: Controls) -> Latent:
        seq = self.g2p(text)

        def t(x: list[int]) -> torch.Tensor:
            return torch.tensor([x], dtype=torch.long, device=self.device)

        emotion = EMOTIONS.index(controls.emotion) if controls.emotion in EMOTIONS else 0
        with torch.no_grad():
            mel, dur = self.model.infer(
                t(seq.ids()),
                t(seq.tones),
                t(seq.langs),
                torch.from_numpy(self.speaker).view(1, -1).to(self.device),
                torch.tensor([emotion], device=self.device),
                torch.tensor([float(controls.intensity)], device=self.device),
                controls_tensor(prosody_for(controls)).to(self.device),
            )
        frames = mel[0].float().T.contiguous().cpu().numpy().astype(np.float32)
        return Latent(
            frames=frames, unit_frames=dur[0].cpu().numpy().astype(np.int64), units=seq.symbols
        )

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if self.decoder is None:
            raise RuntimeError(f"voice {self.info.id!r} has no vocoder attached")
        return self.decoder(frames)
