"""Phrase-cache keys (sans-I/O): everything that changes an utterance's audio and events.

A key is a hash chain. :func:`phrase_params` hashes what is fixed for the utterance (scope,
voice and its speaker embedding, model version, controls, output format, which events were
asked for); :class:`KeyChain` then folds in each segment's normalised text in order:

    prefix_1 = H(params, segment_1), prefix_k = H(prefix_{k-1}, segment_k),
    key = H(prefix_n, end)

so "could a cached phrase start like this?" (:attr:`KeyChain.prefix`) can be asked segment by
segment before the input is complete, and the whole-utterance key exists only once it is.
With a voice per language each segment's link also holds the voice that speaks it
(:func:`voice_identity`: id, model and speaker embedding), so an utterance is found again only
when every segment would be spoken by the same voice.
The text is the segments as the server speaks them (after :func:`~emostream.text.normalize`
and the segmenter), so replies that differ only in how their text arrived (whole, token by
token) share a key when they split into the same segments.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from emostream.codec.packetizer import OutputFormat
from emostream.voices.base import Controls, SpeakerVoice, Voice

KEY_FORMAT = 1  # bump when the cached layout or the key's contents change


def speaker_identity(voice: Voice) -> str | None:
    """SHA-256 of the voice's speaker embedding (a :class:`~emostream.voices.base.SpeakerVoice`'s
    ``speaker``: the EmoStream voices, stock speakers, clones and inline references), or None
    for a voice with no embedding (the embedded Piper voice). A clone re-made with another
    embedding under the same id therefore gets other keys."""
    speaker = voice.speaker if isinstance(voice, SpeakerVoice) else None
    if not isinstance(speaker, np.ndarray):
        return None
    data = np.ascontiguousarray(speaker, dtype="<f4").tobytes()
    timbre = getattr(voice, "timbre", None)  # a refined clone's correction changes its sound
    if isinstance(timbre, np.ndarray):
        data += b"timbre" + np.ascontiguousarray(timbre, dtype="<f4").tobytes()
    return hashlib.sha256(data).hexdigest()


def voice_identity(voice: Voice) -> str:
    """What tells ``voice``'s sound apart in a key: its id, model and speaker embedding."""
    info = voice.info
    return json.dumps([info.id, info.model, info.sample_rate, voice.hop_length,
                       voice.context_frames, speaker_identity(voice)])  # fmt: skip


def phrase_params(
    voice: Voice,
    controls: Controls,
    fmt: OutputFormat,
    *,
    model_version: str,
    timestamps: bool,
    word_timestamps: bool,
    scope: str = "",
) -> bytes:
    """The digest of an utterance's fixed inputs (the chain's seed).

    ``model_version``: the voice family's weights and vocoder as loaded
    (:attr:`~emostream.voices.catalog.VoiceCatalog.versions`); ``scope``: who may share the
    entry (an API key's principal, or ``""`` for everyone)."""
    info = voice.info
    fields: dict[str, Any] = {
        "format": KEY_FORMAT,
        "scope": scope,
        "voice": [info.id, info.model, info.sample_rate, voice.hop_length, voice.context_frames],
        "speaker": speaker_identity(voice),
        "model_version": model_version,
        "controls": [
            controls.speed,
            controls.pitch_shift,
            controls.energy,
            controls.emotion,
            controls.intensity,
        ],
        "output": [fmt.codec, fmt.sample_rate, fmt.bitrate, fmt.complexity, fmt.application],
        "timestamps": timestamps,
        "word_timestamps": word_timestamps,
    }
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).digest()


class KeyChain:
    """Folds segments into the key as they arrive."""

    def __init__(self, params: bytes) -> None:
        self._state = params
        self.prefixes: list[str] = []  # hex, one per segment added

    def add(self, segment: str, voice: str = "") -> str:
        """Fold in the next segment (and, with a voice per language, the
        :func:`voice_identity` of the voice that speaks it); its prefix key (hex)."""
        data = self._state + b"\x1esegment\x1f" + segment.encode("utf-8", "surrogatepass")
        if voice:
            data += b"\x1evoice\x1f" + voice.encode("utf-8", "surrogatepass")
        self._state = hashlib.sha256(data).digest()
        self.prefixes.append(self._state.hex())
        return self.prefixes[-1]

    @property
    def prefix(self) -> str:
        """The prefix key of the segments so far (empty before the first)."""
        return self.prefixes[-1] if self.prefixes else ""

    @property
    def segments(self) -> int:
        return len(self.prefixes)

    def key(self) -> str:
        """The whole-utterance key: the segments so far, and nothing after them."""
        return hashlib.sha256(self._state + b"\x1eend").hexdigest()
