"""``GET /v1/voices`` as a catalogue (sans-I/O): each voice as an entry a person can choose
from, the query's filters, and the listing.

* Named stock voices (:mod:`emostream.voices.stock_voices`) carry language, gender, age, accent,
  a short description, tags, whether they are their language's default, and a sample's URL.
* The EmoStream model's corpus speakers (``en_blend00`` ...) are served but listed only with
  ``all=true`` (or ``tag=corpus``).
* Cloned voices are listed with the name given at upload (usable in place of the id).

``sample_rate`` is what the server sends when a request does not choose: 24 kHz for PCM, WAV,
MP3, FLAC (and the sample); Opus is 48 kHz unless asked otherwise. Every voice is resampled
to the rate asked (``sample_rates``); ``model_sample_rate`` is the rate the model makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from emostream.codec.encoders import RESPONSE_FORMATS
from emostream.codec.packetizer import SAMPLE_RATES
from emostream.voices.base import VoiceInfo
from emostream.voices.stock_voices import (
    CORPUS_DESCRIPTION,
    GENDERS,
    is_corpus_speaker,
    stock_voice,
)

SERVED_RATE = RESPONSE_FORMATS["wav"].default_rate  # PCM/WAV/MP3/FLAC unless asked
OFFERED_RATES = sorted(SAMPLE_RATES, reverse=True)
GENDER_CHOICES = tuple(GENDERS.values())
TYPES = ("stock", "cloned")
CORPUS_TAG = "corpus"
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


class BadQuery(ValueError):
    """A filter the listing cannot apply: ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


@dataclass(frozen=True)
class ListingQuery:
    """``GET /v1/voices``'s filters: ``language`` (``en`` matches ``en-US`` and ``en-GB``),
    ``gender``, ``tag`` (repeated or comma-separated: every one must match), ``type``
    (``stock`` or ``cloned``), ``all`` (the corpus speakers too)."""

    all: bool = False
    language: str | None = None
    gender: str | None = None
    tags: tuple[str, ...] = ()
    type: str | None = None

    @classmethod
    def parse(cls, params: Mapping[str, Sequence[str]]) -> ListingQuery:
        """From query parameters (each name to its values); raises :class:`BadQuery`."""

        def one(name: str) -> str | None:
            values = params.get(name) or []
            return values[-1].strip() if values else None

        flag = (one("all") or "").lower()
        if flag not in TRUE + FALSE:
            raise BadQuery("all", "'all' must be true or false")
        gender = (one("gender") or "").lower() or None
        if gender is not None and gender not in GENDER_CHOICES:
            raise BadQuery("gender", f"'gender' must be {' or '.join(GENDER_CHOICES)}")
        kind = (one("type") or "").lower() or None
        if kind is not None and kind not in TYPES:
            raise BadQuery("type", f"'type' must be {' or '.join(TYPES)}")
        tags = tuple(
            t.strip().lower() for v in params.get("tag") or [] for t in v.split(",") if t.strip()
        )
        language = (one("language") or one("lang") or "").lower() or None
        return cls(flag in TRUE, language, gender, tags, kind)

    def matches(self, entry: Mapping[str, Any]) -> bool:
        if entry.get("hidden") and not (self.all or CORPUS_TAG in self.tags):
            return False
        if self.type is not None and entry["type"] != self.type:
            return False
        if self.gender is not None and entry.get("gender") != self.gender:
            return False
        if self.language is not None and not any(
            lang.lower() == self.language or lang.lower().startswith(self.language + "-")
            for lang in entry.get("languages") or []
        ):
            return False
        return all(tag in (entry.get("tags") or []) for tag in self.tags)


def audio_fields(info: VoiceInfo | None, voice_id: str) -> dict[str, Any]:
    """Where a voice's sample is and the rates it is served at."""
    fields: dict[str, Any] = {
        "sample_url": f"/v1/voices/{voice_id}/sample",
        "sample_rate": SERVED_RATE,
        "sample_rates": OFFERED_RATES,
    }
    if info is not None:
        fields["model_sample_rate"] = info.sample_rate
        fields["controls"] = list(info.controls)
    return fields


def stock_entry(info: VoiceInfo, defaults: Mapping[str, str]) -> dict[str, Any]:
    """A stock voice as listed: a named one with its catalogue data, a corpus speaker
    (``hidden``: listed only on request) with what little is known."""
    entry: dict[str, Any] = {"id": info.id, "type": "stock", "model": info.model}
    named = stock_voice(info.id)
    if named is not None:
        entry.update(
            name=named.name, language=named.language, languages=list(named.languages),
            gender=named.gender, age=named.age, accent=named.accent,
            description=named.description, tags=list(named.all_tags),
        )  # fmt: skip
    else:
        corpus = is_corpus_speaker(info.id)
        entry.update(
            name=info.id, language=info.language, languages=[info.language], gender=None,
            age=None, accent=None,
            description=CORPUS_DESCRIPTION if corpus else info.description,
            tags=[CORPUS_TAG] if corpus else [],
        )  # fmt: skip
        if corpus:
            entry["hidden"] = True
    entry["default_for"] = sorted(lang for lang, vid in defaults.items() if vid == info.id)
    entry["default"] = bool(entry["default_for"])
    return {**entry, **audio_fields(info, info.id), "speakable": True}


def clone_entry(view: Mapping[str, Any], info: VoiceInfo | None, *, reason: str | None = None
                ) -> dict[str, Any]:  # fmt: skip
    """A cloned voice as listed: its record (``voice_view``), catalogue fields, and whether a
    model here speaks it (``info``; None: it cannot, for ``reason``)."""
    entry: dict[str, Any] = {
        **view,
        "language": "multi",
        "languages": ["en", "zh"],
        "gender": None,
        "age": None,
        "accent": None,
        "description": f"Cloned voice {view.get('name', '')!r}",
        "tags": ["cloned"],
        "default": False,
        "default_for": [],
        **audio_fields(info, str(view["id"])),
        "speakable": info is not None,
    }
    if info is not None:
        entry["model"] = info.model
    elif reason:
        entry["reason"] = reason
    return entry


def listing(entries: Iterable[dict[str, Any]], query: ListingQuery, *,
            defaults: Mapping[str, str], default: str) -> dict[str, Any]:  # fmt: skip
    """The body of ``GET /v1/voices``: the entries the query keeps, the default voice of each
    language and of the server, and how many corpus speakers were left out."""
    shown: list[dict[str, Any]] = []
    hidden = 0
    for entry in entries:
        if query.matches(entry):
            shown.append({k: v for k, v in entry.items() if k != "hidden"})
        elif entry.get("hidden") and not query.all:
            hidden += 1
    return {"voices": shown, "defaults": dict(defaults), "default": default, "hidden": hidden}


def served_defaults(language_defaults: Mapping[str, str], default: str,
                    default_info: VoiceInfo | None) -> dict[str, str]:  # fmt: skip
    """The default voice of each language on this server: the catalogue's that are loaded,
    with the server's own default (``EMOSTREAM_DEFAULT_VOICE``) for its language."""
    out = dict(language_defaults)
    if default_info is not None and default_info.language != "multi":
        out[default_info.language.split("-")[0].lower()] = default
    return out
