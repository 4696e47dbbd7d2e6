"""The voices a server process can speak with, by id (stock voices of each family)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.voices.base import Voice, VoiceInfo

if TYPE_CHECKING:
    from emostream.voices.acoustic import AcousticFamily

log = logging.getLogger(__name__)


class VoiceCatalog:
    """Loaded voices by id. Lookups are cheap; loading happens once at start-up."""

    def __init__(self, voices: list[Voice] | None = None) -> None:
        self._voices: dict[str, Voice] = {}
        self.family: AcousticFamily | None = None  # speaks any GE2E embedding (clones)
        for voice in voices or []:
            self.add(voice)

    def add(self, voice: Voice) -> None:
        if voice.info.id in self._voices:
            raise ValueError(f"duplicate voice id {voice.info.id!r}")
        self._voices[voice.info.id] = voice

    def get(self, voice_id: str) -> Voice | None:
        return self._voices.get(voice_id)

    def info(self, voice_id: str) -> VoiceInfo | None:
        voice = self._voices.get(voice_id)
        return voice.info if voice is not None else None

    def infos(self) -> list[VoiceInfo]:
        return [v.info for v in self._voices.values()]

    def __contains__(self, voice_id: object) -> bool:
        return voice_id in self._voices

    def __len__(self) -> int:
        return len(self._voices)


def load_catalog(settings: Settings) -> VoiceCatalog:
    """Stock voices for ``settings``: the embedded Piper voice (CPU) unless
    ``settings.embedded_voice`` is off, and the EmoStream acoustic model's speakers when
    ``settings.acoustic`` allows and torch is installed. Raises RuntimeError when
    ``settings.default_voice`` is not among them."""
    catalog = VoiceCatalog()
    if settings.embedded_voice:
        from emostream.voices.piper_voice import PiperVoice

        catalog.add(PiperVoice.load_default(threads=settings.cpu_threads, voice_id="joe"))
    family = load_acoustic_family(settings)
    if family is not None:
        catalog.family = family
        for voice in family.stock_voices():
            catalog.add(voice)
    if settings.default_voice not in catalog:
        known = ", ".join(i.id for i in catalog.infos()) or "none"
        raise RuntimeError(
            f"default voice {settings.default_voice!r} is not loaded (voices: {known}); "
            "set EMOSTREAM_DEFAULT_VOICE"
        )
    log.info(
        "voices loaded: %d (%s ...)", len(catalog), ", ".join(i.id for i in catalog.infos()[:4])
    )
    return catalog


def load_acoustic_family(settings: Settings) -> AcousticFamily | None:
    """The shipped EmoStream model, or None (with the reason logged) when it cannot load."""
    if settings.acoustic == "off":
        return None
    try:
        import torch

        from emostream.voices.acoustic import AcousticFamily, find_models_dir
    except ImportError as exc:
        if settings.acoustic == "on":
            raise RuntimeError("EMOSTREAM_ACOUSTIC=on needs the [gpu] extra (torch)") from exc
        log.info("EmoStream acoustic voices off: torch is not installed ([gpu] extra)")
        return None
    models_dir = find_models_dir(settings.models_dir)
    if models_dir is None:
        if settings.acoustic == "on":
            raise RuntimeError("EmoStream acoustic checkpoint not found (models_dir)")
        log.info("EmoStream acoustic voices off: no checkpoint under models/")
        return None
    if settings.device == "cuda":
        # Mel windows go to the batched GPU engine (GpuRunner); no per-voice decoder.
        return AcousticFamily(models_dir, decoder=None, device="cuda")
    from emostream.models.hifigan import HifiGan

    torch.set_num_threads(max(1, settings.cpu_threads))
    vocoder = HifiGan.load("universal", checkpoint=settings.vocoder_checkpoint or None)

    def decode(mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        with torch.inference_mode():
            audio = vocoder(torch.from_numpy(np.ascontiguousarray(mel))[None])
        out: npt.NDArray[np.float32] = audio.reshape(-1).numpy()
        return out

    return AcousticFamily(models_dir, decoder=decode, device="cpu")
