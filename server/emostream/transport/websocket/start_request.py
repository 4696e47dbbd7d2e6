"""A validated ``start`` (or ``line``): what the protocol (:mod:`.protocol`) hands the I/O layer
to speak, with the voices its lookups found."""

from __future__ import annotations

from dataclasses import dataclass, field

from emostream.codec.packetizer import OutputFormat
from emostream.text.pron.reader import PronunciationSetup
from emostream.voices.base import Controls, Voice, VoiceInfo


@dataclass(frozen=True)
class StartRequest:
    voice: VoiceInfo
    controls: Controls
    fmt: OutputFormat
    timestamps: bool
    stream_id: str
    word_timestamps: bool = False  # asked for, and the voice can time words
    cache: bool = True  # the phrase cache may answer (and keep) this utterance
    mouth: bool = False  # ``mouth`` events asked for
    room: str | None = None  # published into this room too (transport.rooms)
    room_words: bool = False  # a room's listeners get words (the voice times them)
    # The voice the lookup found, spoken as it is (no second lookup); None where the lookup
    # gives only its info (tests, the schema's checks: nothing speaks there).
    spoken: Voice | None = field(default=None, compare=False, repr=False)
    # Inline overrides and dictionaries, for this voice (docs/protocol.md, "Pronunciation").
    pronunciation: PronunciationSetup = field(default_factory=PronunciationSetup, compare=False,
                                              repr=False)  # fmt: skip
    # Kinds of dictionary entry this voice does not read (left out; the client is told).
    dropped: tuple[str, ...] = ()
    # With ``voices``: the voice of each language (as given or filled in), its info and what
    # speaks (None where the lookup gave only the info); empty: ``voice`` speaks everything.
    languages: tuple[tuple[str, VoiceInfo], ...] = ()
    spoken_languages: tuple[tuple[str, Voice | None], ...] = field(
        default=(), compare=False, repr=False
    )

    @property
    def infos(self) -> tuple[VoiceInfo, ...]:
        """Every voice the utterance may speak with."""
        return (self.voice, *(info for _, info in self.languages))

    def voices_spoken(self) -> dict[str, Voice] | None:
        """The voice of each language to speak with (``{}`` without ``voices``); None where
        a lookup gave only a voice's info."""
        voices = {lang: v for lang, v in self.spoken_languages if v is not None}
        return voices if len(voices) == len(self.spoken_languages) else None

    @property
    def cut_languages(self) -> bool:
        """Two languages have two voices: the text is cut where its language changes."""
        return len({info.id for _, info in self.languages}) > 1
