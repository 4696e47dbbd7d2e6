"""The voice catalogue's data: every named stock voice a person can pick, and the default voice
of each language. The one source of truth for both: ``GET /v1/voices``, the README's table
(``scripts/gen_voice_table.py``), the command line and the demo page (through the server) read
them from here.

Named voices are the 30 speakers the EmoStream model learned from Kokoro's own voices (ids
kept from Kokoro, whose first letter is the language and accent, ``a`` American English, ``b``
British English, ``z`` Mandarin, and second the gender, ``f`` female, ``m`` male) and the
embedded Piper voice ``joe``. The model's other 600 speakers (``en_blend*``, ``en_cross*``,
``zh_blend*``, ``zh_cross*``: mixtures of those voices made to widen the training corpus) are
corpus speakers: served, but listed only on request (``GET /v1/voices?all=true``).

Pitch, pitch movement, spectral centroid and pace were measured on each voice as served on CPU
(``bench/voice_traits.py``, ``bench/results/2026-12-07-cpu2-voice-traits.json``, one text of
about 4 s per voice); a description's words are read off them (:func:`pitch_word`,
:func:`tone_word`, :func:`intonation_word`, :func:`pace_word`), plus a note where a measured
fact is worth knowing. Style: every voice reads in the plain style of the distillation corpus
(emotion is a control, not a voice). Ages are not measured: every voice is an adult's, and
that is all ``age`` says.

Pure data and a few functions: imported by the command line, so nothing heavy here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emostream.text.pron.inline import written

# The default voice of each language: measured best as served on CPU (docs/voices.md,
# "Default voice": af_heart English WER 2.6 % against am_michael 3.4 % and joe 7.2 %;
# zf_xiaoxiao Mandarin CER 14.5 % against zm_yunxi 16.8 %). Settings.default_voice "auto" is
# the English one when it is loaded, else the first voice of FALLBACK_DEFAULTS.
LANGUAGE_DEFAULTS: dict[str, str] = {"en": "af_heart", "zh": "zf_xiaoxiao"}
FALLBACK_DEFAULTS: tuple[str, ...] = ("joe",)
# What a client names when its user named no voice, by the text's language (language_of): for
# English nothing (the server's default: af_heart unless its operator chose another), for
# another language that language's default (the server's own default reads English).
CLIENT_VOICES: dict[str, str] = {k: v for k, v in LANGUAGE_DEFAULTS.items() if k != "en"}
# The model's corpus speakers (not in the default listing).
CORPUS_PREFIXES: tuple[str, ...] = ("en_blend", "en_cross", "zh_blend", "zh_cross")
ACCENTS = {"a": ("en-US", "American"), "b": ("en-GB", "British"), "z": ("zh-CN", "Mandarin")}
GENDERS = {"f": "female", "m": "male"}


@dataclass(frozen=True)
class StockVoice:
    """One named voice of the catalogue: who it is and what it measured like as served."""

    id: str
    name: str  # a display name
    languages: tuple[str, ...]  # BCP 47 tags, the first its own
    gender: str  # female | male
    accent: str  # American | British | Mandarin
    model: str  # emostream-fs2 | piper-vits
    f0_hz: float  # median F0 (bench/voice_traits.py)
    f0_spread_st: float  # how much its pitch moves, semitones
    centroid_hz: float  # spectral centroid of its speech up to 8 kHz
    pace: float  # speech time over the median of its language's voices (>1: slower)
    note: str = ""  # a measured fact worth knowing, or where it comes from
    tags: tuple[str, ...] = ()  # beyond those derived (accent, gender, pitch, ...)
    age: str = "adult"

    @property
    def language(self) -> str:
        return self.languages[0]

    @property
    def pitch(self) -> str:
        return pitch_word(self.f0_hz, self.gender)

    @property
    def tone(self) -> str:
        return tone_word(self.centroid_hz)

    @property
    def intonation(self) -> str:
        return intonation_word(self.f0_spread_st)

    @property
    def description(self) -> str:
        """Timbre and style in one short line: pitch, tone, intonation and pace where they
        stand out, then its note."""
        words = [f"{self.pitch} pitch", f"{self.tone} tone"]
        if self.intonation:
            words.append(f"{self.intonation} intonation")
        if pace_word(self.pace):
            words.append(f"{pace_word(self.pace)} pace")
        line = ", ".join(words).capitalize() + "."
        return f"{line} {self.note}" if self.note else line

    @property
    def all_tags(self) -> tuple[str, ...]:
        """Accent, gender, pitch, tone, intonation and pace where they stand out, then its own."""
        derived = [self.accent.lower(), self.gender, f"{self.pitch}-pitch"]
        derived += [w for w in (self.tone, self.intonation, pace_word(self.pace)) if w]
        if self.id in LANGUAGE_DEFAULTS.values():
            derived.append("default")
        return tuple(dict.fromkeys([*derived, *self.tags]))


def pitch_word(f0_hz: float, gender: str) -> str:
    """``low``, ``mid`` or ``high`` for a median F0 among the catalogue's voices of that gender
    (measured: female 143-234 Hz, male 84-180 Hz; about a third of each below and above)."""
    low, high = (160.0, 200.0) if gender == "female" else (106.0, 135.0)
    return "low" if f0_hz < low else "high" if f0_hz >= high else "mid"


def tone_word(centroid_hz: float) -> str:
    """``warm`` (energy low in the spectrum), ``bright``, or ``balanced`` between (measured
    1010-2090 Hz)."""
    return "warm" if centroid_hz < 1350.0 else "bright" if centroid_hz >= 1800.0 else "balanced"


def intonation_word(spread_st: float) -> str:
    """``even`` or ``lively`` pitch movement where it stands out (measured 2.9-7.2 semitones),
    else empty."""
    return "even" if spread_st < 3.8 else "lively" if spread_st >= 6.0 else ""


def pace_word(pace: float) -> str:
    """``brisk`` or ``unhurried`` when a voice is 8 % faster or slower than its language's
    median, else empty."""
    return "brisk" if pace <= 0.92 else "unhurried" if pace >= 1.08 else ""


def _kokoro(voice_id: str, f0: float, spread: float, centroid: float, pace: float,
            note: str = "", *tags: str) -> StockVoice:  # fmt: skip
    language, accent = ACCENTS[voice_id[0]]
    return StockVoice(
        id=voice_id, name=voice_id.split("_", 1)[1].capitalize(), languages=(language,),
        gender=GENDERS[voice_id[1]], accent=accent, model="emostream-fs2", f0_hz=f0,
        f0_spread_st=spread, centroid_hz=centroid, pace=pace, note=note, tags=tags,
    )  # fmt: skip


# Measured 2026-12-07 (bench/results/2026-12-07-cpu2-voice-traits.json): F0 Hz, F0 spread
# semitones, spectral centroid Hz, pace. Quality figures: docs/voices.md, "Default voice".
# fmt: off
STOCK_VOICES: tuple[StockVoice, ...] = (
    _kokoro("af_heart", 187.8, 5.30, 1501, 0.899,
            "The English default: the clearest English voice measured (2.6 % WER)."),
    _kokoro("af_alloy", 142.6, 4.92, 1454, 1.068),
    _kokoro("af_aoede", 178.7, 5.29, 1035, 0.912),
    _kokoro("af_bella", 193.7, 2.95, 1327, 0.892),
    _kokoro("af_jessica", 194.8, 5.33, 1644, 1.041),
    _kokoro("af_kore", 147.3, 6.46, 1311, 0.968),
    _kokoro("af_nicole", 146.6, 6.05, 2090, 1.124,
            "Breathy, half-whispered (61 % of speech voiced; most voices 80-97 %).", "breathy"),
    _kokoro("af_nova", 170.1, 5.71, 1302, 1.000),
    _kokoro("af_sarah", 180.2, 5.56, 1837, 0.892),
    _kokoro("af_sky", 155.6, 5.16, 1366, 0.971),
    _kokoro("am_adam", 111.6, 4.36, 1684, 0.935),
    _kokoro("am_eric", 158.0, 6.13, 1371, 1.023),
    _kokoro("am_fenrir", 136.6, 5.94, 1688, 0.908),
    _kokoro("am_liam", 126.0, 6.00, 1660, 1.034),
    _kokoro("am_michael", 104.9, 5.29, 2006, 1.020, "3.4 % WER (af_heart 2.6 %)."),
    _kokoro("am_onyx", 84.4, 3.36, 1010, 1.038, "The deepest voice here."),
    _kokoro("am_puck", 107.0, 5.17, 1562, 0.874),
    _kokoro("am_santa", 179.6, 7.22, 1806, 1.063,
            "From Kokoro's Santa voice: the most pitch movement here."),
    _kokoro("bf_emma", 182.4, 3.13, 1866, 0.998),
    _kokoro("bf_isabella", 194.1, 3.67, 1598, 0.998),
    _kokoro("bf_lily", 173.1, 5.81, 1502, 1.164),
    _kokoro("bm_daniel", 121.2, 4.09, 1525, 1.088),
    _kokoro("bm_george", 139.6, 5.41, 1622, 1.158),
    _kokoro("bm_lewis", 92.7, 4.06, 1742, 1.009),
    _kokoro("zf_xiaoxiao", 233.6, 5.52, 1584, 1.023,
            "The Mandarin default: 14.5 % CER, the clearer of the two measured."),
    _kokoro("zf_xiaobei", 225.9, 5.20, 1475, 1.166),
    _kokoro("zf_xiaoni", 208.8, 5.47, 1735, 1.053,
            "Its Kokoro teacher voice was the least clear Mandarin voice tested (46 % CER)."),
    _kokoro("zm_yunxi", 163.4, 5.39, 1818, 0.898, "16.8 % CER (zf_xiaoxiao 14.5 %)."),
    _kokoro("zm_yunjian", 111.2, 4.63, 1990, 0.977),
    _kokoro("zm_yunyang", 104.5, 4.84, 1972, 0.894),
    StockVoice(
        id="joe", name="Joe", languages=("en-US",), gender="male", accent="American",
        model="piper-vits", f0_hz=109.5, f0_spread_st=5.01, centroid_hz=1375, pace=0.73,
        note="Piper en_US-joe-medium, embedded: speed only (no emotion or pitch); 7.2 % WER.",
        tags=("piper",),
    ),
)
# fmt: on


def client_voice(text: str) -> str | None:
    """The voice a client should name for ``text`` when its user named none (None: the
    server's default): :data:`CLIENT_VOICES` by :func:`language_of`."""
    return CLIENT_VOICES.get(language_of(text))


def stock_voice(voice_id: str) -> StockVoice | None:
    return _BY_ID.get(voice_id)


CORPUS_DESCRIPTION = (
    "Corpus speaker of the EmoStream model (a mix of Kokoro voices made for training); "
    "not described"
)


def describe(voice_id: str) -> str:
    """A stock voice's description: a named voice's, or the corpus speakers' one line."""
    named = stock_voice(voice_id)
    return named.description if named is not None else CORPUS_DESCRIPTION


def is_corpus_speaker(voice_id: str) -> bool:
    """A corpus speaker of the EmoStream model (listed only with ``all``)."""
    return voice_id.startswith(CORPUS_PREFIXES)


def language_of(text: str) -> str:
    """Which language's default voice should read ``text``: ``zh`` when it has at least as many
    Han characters as Latin-script words (a character is about a word spoken), else ``en``.
    Pronunciation overrides count as their words (``这是{Nguyen|/wɪn/}``: ``zh``)."""
    text = written(text)
    han = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    words = len(_LATIN_WORD.findall(text))
    return "zh" if han and han >= words else "en"


_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_BY_ID = {v.id: v for v in STOCK_VOICES}
