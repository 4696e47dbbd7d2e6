"""A voice per language (sans-I/O): which languages a voice speaks, which voice speaks each
language of an utterance, and the stock voice nearest in timbre to another.

A ``start`` (or a ``line``) may give ``voices``, ``{"en": "af_heart", "zh": "zf_xiaoxiao"}``:
each segment is spoken by the voice of its language
(:func:`emostream.text.languages.segment_language`). :func:`resolve` fills in the languages
``voices`` leaves out, in this order (docs/protocol.md, "A voice per language"):

1. the voice ``voices`` gives for the language;
2. the ``voice`` the request names, if it speaks the language;
3. a voice of ``voices`` that speaks it (a cloned voice speaks both);
4. the stock voice of the language nearest in timbre (:class:`TimbreIndex`: cosine of the
   speaker embeddings the model is conditioned on) to the voice given for another language,
   or to ``voice``;
5. ``voice`` (the server's default when the request names none), as without ``voices``.

A voice speaks the language of its :attr:`~emostream.voices.base.VoiceInfo.language` tag
(``en-US`` and ``en-GB``: ``en``; ``zh-CN``: ``zh``); ``multi`` (a cloned voice, an inline
reference clip) speaks every language here. The stock EmoStream speakers were each trained on
one language: one given for another language is refused (:class:`LanguageMismatch`), not
spoken with an accent the model never learned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from emostream.text.languages import LANGUAGES
from emostream.voices.base import SpeakerVoice, Voice, VoiceInfo

MULTI = "multi"  # VoiceInfo.language of a voice that speaks every language (clones)

T = TypeVar("T")


def languages_of(info: VoiceInfo) -> frozenset[str]:
    """The languages (:data:`~emostream.text.languages.LANGUAGES`) ``info``'s voice speaks."""
    if info.language == MULTI:
        return frozenset(LANGUAGES)
    return frozenset({info.language.split("-", 1)[0].lower()}) & frozenset(LANGUAGES)


def speaks(info: VoiceInfo, language: str) -> bool:
    return language in languages_of(info)


class LanguageMismatch(ValueError):
    """A voice given for a language it does not speak."""

    def __init__(self, voice: VoiceInfo, language: str) -> None:
        self.voice_id = voice.id
        self.language = language
        super().__init__(
            f"voice {voice.id!r} does not speak {language!r} (it speaks {voice.language}); "
            f"give a {language} voice or a cloned one"
        )


def resolve(
    asked: Mapping[str, T],
    *,
    voice: T,
    explicit: bool,
    info: Callable[[T], VoiceInfo],
    match: Callable[[T, str], T | None],
) -> dict[str, T]:
    """The voice of each language (module docs). ``asked``: ``voices`` as given (language ->
    voice; checked here: :class:`LanguageMismatch`); ``voice``: the request's voice (or the
    server's default: ``explicit`` False); ``info``: a voice's info; ``match``: the stock
    voice of a language nearest in timbre to a voice, or None."""
    for language, given in asked.items():
        if not speaks(info(given), language):
            raise LanguageMismatch(info(given), language)
    out: dict[str, T] = {}
    for language in LANGUAGES:
        out[language] = _voice_for(language, asked, voice, explicit, info, match)
    return out


def _voice_for(
    language: str,
    asked: Mapping[str, T],
    voice: T,
    explicit: bool,
    info: Callable[[T], VoiceInfo],
    match: Callable[[T, str], T | None],
) -> T:
    if language in asked:
        return asked[language]
    if explicit and speaks(info(voice), language):
        return voice
    for given in asked.values():
        if speaks(info(given), language):
            return given
    sources = [*asked.values(), voice] if not explicit else [voice, *asked.values()]
    for source in sources:
        found = match(source, language)
        if found is not None:
            return found
    return voice


class TimbreIndex:
    """The stock voices with a speaker embedding, by language: :meth:`nearest` is the one
    whose embedding is nearest (cosine) to another voice's, for a language that voice does
    not speak. Built once from the catalog's voices (stock voices do not change)."""

    def __init__(self, voices: Iterable[Voice]) -> None:
        by_language: dict[str, list[tuple[Voice, npt.NDArray[np.float32]]]] = {}
        for v in voices:
            speaker = v.speaker if isinstance(v, SpeakerVoice) else None
            if not isinstance(speaker, np.ndarray) or v.info.language == MULTI:
                continue
            for language in languages_of(v.info):
                by_language.setdefault(language, []).append((v, speaker))
        self._voices = {k: [v for v, _ in pairs] for k, pairs in by_language.items()}
        self._matrix = {k: _unit(np.stack([s for _, s in pairs]))
                        for k, pairs in by_language.items()}  # fmt: skip

    def nearest(self, voice: Voice, language: str) -> Voice | None:
        """The stock voice of ``language`` nearest in timbre to ``voice`` (None when ``voice``
        has no speaker embedding, or no stock voice speaks ``language``)."""
        speaker = voice.speaker if isinstance(voice, SpeakerVoice) else None
        matrix = self._matrix.get(language)
        if matrix is None or not isinstance(speaker, np.ndarray):
            return None
        if speaker.shape[-1] != matrix.shape[-1]:
            return None
        scores = matrix @ _unit(speaker.reshape(1, -1))[0]
        return self._voices[language][int(np.argmax(scores))]


def _unit(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    out: npt.NDArray[np.float32] = (x / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
