"""The voices a server process can speak with, by id (stock voices of each family)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from emostream.config import Settings
from emostream.voices.base import Voice, VoiceInfo
from emostream.voices.stock_voices import FALLBACK_DEFAULTS, LANGUAGE_DEFAULTS

if TYPE_CHECKING:
    from emostream.voices.acoustic import AcousticFamily, Decoder

log = logging.getLogger(__name__)


# Settings.default_voice "auto": the first of these that is loaded: the English default of the
# catalogue (af_heart, by measurement: emostream.voices.stock_voices), else joe.
AUTO_DEFAULTS = (LANGUAGE_DEFAULTS["en"], *FALLBACK_DEFAULTS)


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

    def default_for(self, setting: str) -> str:
        """The default voice ``setting`` (``Settings.default_voice``) names here: ``auto``
        is the first of :data:`AUTO_DEFAULTS` loaded; a named voice must be loaded. Raises
        RuntimeError otherwise."""
        wanted = AUTO_DEFAULTS if setting == "auto" else (setting,)
        for voice_id in wanted:
            if voice_id in self._voices:
                return voice_id
        known = ", ".join(i.id for i in self.infos()[:8]) or "none"
        raise RuntimeError(
            f"default voice {setting!r} is not loaded (voices: {known}); "
            "set EMOSTREAM_DEFAULT_VOICE"
        )

    def language_defaults(self) -> dict[str, str]:
        """The default voice of each language (``en``, ``zh``) among those loaded: the
        catalogue's (:data:`~emostream.voices.stock_voices.LANGUAGE_DEFAULTS`)."""
        return {lang: vid for lang, vid in LANGUAGE_DEFAULTS.items() if vid in self._voices}

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
    ``settings.embedded_voice`` is off, and the EmoStream acoustic model's speakers unless
    ``settings.acoustic`` is off. Raises RuntimeError when ``settings.default_voice`` does
    not name one of them (:meth:`VoiceCatalog.default_for`)."""
    catalog = VoiceCatalog()
    if settings.embedded_voice:
        from emostream.voices.piper_voice import PiperVoice

        catalog.add(PiperVoice.load_default(threads=settings.cpu_threads, voice_id="joe"))
    family = load_acoustic_family(settings)
    if family is not None:
        catalog.family = family
        for voice in family.stock_voices():
            catalog.add(voice)
    catalog.default_for(settings.default_voice)  # fails start-up when it is not loaded
    log.info(
        "voices loaded: %d (%s ...)", len(catalog), ", ".join(i.id for i in catalog.infos()[:4])
    )
    return catalog


def vocoder_choice(settings: Settings, models_dir: Path | None = None) -> str:
    """``lite`` or ``v1`` for ``settings``. ``auto``: v1 on cuda; on cpu the light vocoder
    when ``models_dir`` holds it, else v1 (which needs torch)."""
    choice = settings.vocoder
    if choice not in ("auto", "lite", "v1"):
        raise RuntimeError(f"unknown vocoder {choice!r}: use auto, lite or v1")
    if choice != "auto":
        return choice
    if settings.device == "cuda":
        return "v1"
    return "lite" if models_dir is not None and (models_dir / LITE_VOCODER).is_file() else "v1"


def _torch_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:  # a stub module without a spec (tests that hide torch)
        return False


def load_acoustic_family(settings: Settings) -> AcousticFamily | None:
    """The shipped EmoStream model, or None (with the reason logged) when it is switched off or
    not found. On cpu: ONNX Runtime for the acoustic model and (``vocoder=lite``, the default)
    the light vocoder, no torch needed; ``vocoder=v1`` decodes with HiFi-GAN V1 in torch. On
    cuda: the torch model, batched on the GPU, and mel windows go to the GPU engine."""
    if settings.acoustic == "off":
        return None
    from emostream.voices.acoustic import AcousticFamily, find_models_dir

    models_dir = find_models_dir(settings.models_dir)
    if models_dir is None:
        if settings.acoustic == "on":
            raise RuntimeError("EmoStream acoustic model not found (models_dir)")
        log.info("EmoStream acoustic voices off: no model under models/")
        return None
    vocoder = vocoder_choice(settings, models_dir)
    context = LITE_CONTEXT if vocoder == "lite" else V1_CONTEXT
    if vocoder == "v1" and settings.acoustic == "auto" and not _torch_installed():
        log.warning("EmoStream acoustic voices off: no light vocoder under %s and no torch for "
                    "HiFi-GAN V1 (the [gpu] extra)", models_dir)  # fmt: skip
        return None
    key = VOCODER_KEYS[vocoder]
    if settings.device == "cuda":
        # Mel windows go to the batched GPU engine (GpuRunner); no per-voice decoder.
        return AcousticFamily(models_dir, decoder=None, backend="torch", device="cuda",
                              context_frames=context, vocoder_key=key,
                              clone_gain=settings.clone_gain)  # fmt: skip
    decode = lite_decoder(models_dir, settings) if vocoder == "lite" else v1_decoder(settings)
    return AcousticFamily(models_dir, decoder=decode, backend="onnx", context_frames=context,
                          threads=settings.cpu_threads, vocoder_key=key,
                          clone_gain=settings.clone_gain)  # fmt: skip


LITE_VOCODER = "vocoder/emostream-lite-vocoder-v0.2.onnx"
LITE_CONTEXT = 29  # frames each side: chunked == one-shot (lite_vocoder.CONTEXT_FRAMES)
V1_CONTEXT = 14  # HiFi-GAN V1 (hifigan.CONTEXT_FRAMES)
# The vocoders' names as batched stages (emostream.voices.base.BatchedStage): one engine
# process batches every front end's windows for the same key.
VOCODER_KEYS = {"lite": Path(LITE_VOCODER).stem, "v1": "hifigan-v1-universal"}


def lite_decoder(models_dir: Path, settings: Settings) -> Decoder:
    """The light vocoder in ONNX Runtime: ``mel [80, T] -> audio [T * 256]``."""
    from emostream.networks.lite_vocoder_onnx import OnnxLiteVocoder

    path = models_dir / LITE_VOCODER
    if not path.is_file():
        raise RuntimeError(f"light vocoder not found: {path} (or set EMOSTREAM_VOCODER=v1)")
    return OnnxLiteVocoder(path, threads=max(1, settings.cpu_threads))


def v1_decoder(settings: Settings) -> Decoder:
    """HiFi-GAN V1 universal in torch on CPU (slower than real time on 2 cores)."""
    try:
        import torch

        from emostream.networks.hifigan import HifiGan
    except ImportError as exc:
        raise RuntimeError("EMOSTREAM_VOCODER=v1 needs the [gpu] extra (torch)") from exc
    torch.set_num_threads(max(1, settings.cpu_threads))
    vocoder = HifiGan.load("universal", checkpoint=settings.vocoder_checkpoint or None)

    def decode(mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        with torch.inference_mode():
            audio = vocoder(torch.from_numpy(np.ascontiguousarray(mel))[None])
        out: npt.NDArray[np.float32] = audio.reshape(-1).numpy()
        return out

    return decode
