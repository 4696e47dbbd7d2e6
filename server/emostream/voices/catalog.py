"""The voices a server process can speak with, by id (stock voices of each family)."""

from __future__ import annotations

import logging

from emostream.config import Settings
from emostream.voices.base import Voice, VoiceInfo

log = logging.getLogger(__name__)


class VoiceCatalog:
    """Loaded voices by id. Lookups are cheap; loading happens once at start-up."""

    def __init__(self, voices: list[Voice] | None = None) -> None:
        self._voices: dict[str, Voice] = {}
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
    """Stock voices for ``settings``: the embedded Piper voice always (CPU)."""
    from emostream.voices.piper_voice import PiperVoice

    catalog = VoiceCatalog()
    catalog.add(PiperVoice.load_default(threads=settings.cpu_threads, voice_id="joe"))
    log.info("voices loaded: %s", ", ".join(i.id for i in catalog.infos()))
    return catalog
