"""The pronunciations a word may be given, each checked against what the model can say.

* **pinyin** — for a word of hanzi: one syllable per character, its tone a digit 1-5 (5 is the
  neutral tone): ``hang2``, ``yin2 hang2`` (tone marks are read too: ``háng``; ``ü`` may be
  written ``v`` or ``u:``). A syllable must be one that Mandarin has (one of the 426 toneless
  syllables some character is read with, pypinyin's table), and the count must match the
  word's characters. The syllables reach the model as the Mandarin front end's own do
  (:meth:`emostream.text.phonemes.G2P._syllable`: initial and final units, the tone a feature).
* **ipa** — for an English word, between slashes: ``/wɪn/``. Each symbol must be one of the
  model's English units (:data:`ENGLISH_IPA`, espeak-ng's inventory); a few common spellings
  of the same sound are taken as that unit (``g`` → ``ɡ``, ``r`` → ``ɹ``, ``ʧ`` → ``tʃ``,
  ``ʤ`` → ``dʒ``, ``ɝ`` → ``ɜː``, ``:`` → ``ː``, ``'`` → ``ˈ``; tie bars, syllable dots
  and the syllabic mark are dropped). Stress marks move to just before their vowel, where
  espeak-ng (and so the training data) puts them; a word with no stress mark gets ``ˈ`` on
  its first vowel.
* **respelling** — for an English word: how to spell it so that it is read right
  (``Nguyen`` → ``win``): letters, spaces, apostrophes and hyphens, read by the English front
  end in the word's place.

:func:`read_inline` takes the part after ``|`` of an inline override (its form says its
kind: ``/.../`` IPA, letters and tone digits pinyin, letters alone a respelling);
:func:`make_pron` a dictionary entry's, whose field names its kind. Both raise
:class:`PronunciationError` with the reason.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

PINYIN, IPA, RESPELLING = "pinyin", "ipa", "respelling"
KINDS: tuple[str, ...] = (PINYIN, IPA, RESPELLING)
MAX_WORD_CHARS = 64  # a word (an override's display, a dictionary entry's word)
MAX_PRON_CHARS = 200  # its pronunciation

# espeak-ng IPA code points (NFC) that the teacher (Kokoro v1.0) also knows: the model's English
# units (emostream.text.phonemes builds its symbol table from this).
ENGLISH_IPA: tuple[str, ...] = tuple(
    "abcdefhijklmnopqrstuvwxyzæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝʤʧʰʲˈˌː\u0303βθχᵻ"
)
STRESS = frozenset("ˈˌ")
_VOWELS = frozenset("aeiouyæøœɐɑɒɔəɚɛɜɤɨɪɯʊʌᵻ")
# Spellings of a sound that the model has under another symbol (one code point → units).
_IPA_ALIASES = {
    "g": "ɡ", "r": "ɹ", "ʧ": "tʃ", "ʤ": "dʒ", "ɝ": "ɜː", ":": "ː", "'": "ˈ", "ˑ": "",
    "ɫ": "l", "ʍ": "w", ".": "", "‿": "", "\u0361": "", "\u035c": "", "\u0329": "",
    "\u030d": "", "ɘ": "ə", "ɵ": "ə", "ɞ": "ɜ",
}  # fmt: skip
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_RESPELLING = re.compile(r"[^\W\d_]+(?:[ '’\-]+[^\W\d_]+)*")
_SYLLABLE = re.compile(r"([^\W\d_]+)(\d*)")
_PINYIN_SEPARATORS = re.compile(r"[\s'’\-]+")


class PronunciationError(ValueError):
    """A pronunciation that cannot be said: ``reason`` says why (the caller names the span)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Pron:
    """A checked pronunciation. ``value``: pinyin as toned syllables joined by spaces (``ü``
    as ``v``: ``lv4``); IPA as the model's units, words parted by a space; a respelling as
    written."""

    kind: str
    value: str

    @property
    def written(self) -> str:
        """As a client writes it (IPA between slashes)."""
        return f"/{self.value}/" if self.kind == IPA else self.value

    @property
    def language(self) -> str:
        return "zh" if self.kind == PINYIN else "en"


def is_han_word(word: str) -> bool:
    return bool(word) and all(_HAN.fullmatch(ch) for ch in word)


def check_word(word: str, kind: str | None = None) -> None:
    """Raise :class:`PronunciationError` unless ``word`` can take a pronunciation (of
    ``kind``): 1-64 characters, either all hanzi (pinyin) or English (no hanzi, a letter or
    digit, IPA or a respelling)."""
    if not word.strip():
        raise PronunciationError("the word is empty")
    if len(word) > MAX_WORD_CHARS:
        raise PronunciationError(f"the word is over {MAX_WORD_CHARS} characters")
    if word != word.strip() or "\n" in word:
        raise PronunciationError("the word starts or ends with a space, or holds a line break")
    if is_han_word(word):
        if kind not in (None, PINYIN):
            raise PronunciationError(f"a word of hanzi takes pinyin (tone digits), not {kind}")
        return
    if _HAN.search(word):
        raise PronunciationError("a word is either all hanzi (pinyin) or English (IPA or a "
                                 "respelling), not both")  # fmt: skip
    if not any(ch.isalnum() for ch in word):
        raise PronunciationError("the word has no letter or digit")
    if kind == PINYIN:
        raise PronunciationError("pinyin is for a word of hanzi; an English word takes IPA "
                                 "(/.../) or a respelling")  # fmt: skip


def read_inline(word: str, text: str) -> Pron:
    """The pronunciation ``text`` (after the ``|`` of ``{word|text}``) gives ``word``: IPA
    between slashes, pinyin for hanzi, else a respelling."""
    check_word(word)
    text = text.strip()
    if text.startswith("/"):
        return make_pron(IPA, word, text)
    return make_pron(PINYIN if is_han_word(word) else RESPELLING, word, text)


def make_pron(kind: str, word: str, text: str) -> Pron:
    """``text`` as a pronunciation of ``kind`` for ``word``, checked (module docs)."""
    if kind not in KINDS:
        raise PronunciationError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    check_word(word, kind)
    text = unicodedata.normalize("NFC", text.strip())
    if not text:
        raise PronunciationError(f"the {kind} is empty")
    if len(text) > MAX_PRON_CHARS:
        raise PronunciationError(f"the {kind} is over {MAX_PRON_CHARS} characters")
    if kind == PINYIN:
        syllables = pinyin_syllables(text)
        chars = len(word)
        if len(syllables) != chars:
            raise PronunciationError(
                f"{len(syllables)} pinyin syllable(s) for {chars} character(s): give one "
                "toned syllable per character"
            )
        return Pron(PINYIN, " ".join(syllables))
    if kind == IPA:
        return Pron(IPA, ipa_units(text))
    if not _RESPELLING.fullmatch(text):
        raise PronunciationError(
            f"a respelling is letters, spaces, apostrophes and hyphens ({text!r} is not; IPA "
            "goes between slashes, /.../, and pinyin is for a word of hanzi)"
        )
    return Pron(RESPELLING, text)


# -- pinyin ------------------------------------------------------------------------------
@cache
def pinyin_bases() -> frozenset[str]:
    """Every toneless syllable some character is read with (pypinyin's table; ``ü`` as
    ``v``): 426 syllables. Loaded at the first use (~0.15 s)."""
    from pypinyin import Style
    from pypinyin.pinyin_dict import pinyin_dict
    from pypinyin.style import convert

    readings = {r for v in pinyin_dict.values() for r in v.split(",")}
    bases = set()
    for reading in readings:
        toned = convert(reading, Style.TONE3, strict=True, neutral_tone_with_five=True)
        bases.add(re.sub(r"\d", "", toned).replace("ü", "v"))
    return frozenset(bases)


def _tone_marked(syllable: str) -> str:
    """``háng`` → ``hang2`` (a syllable without a mark stays as it is)."""
    from pypinyin import Style
    from pypinyin.style import convert

    return str(convert(syllable, Style.TONE3, strict=True, neutral_tone_with_five=False))


def pinyin_syllables(text: str) -> list[str]:
    """``"yin2 hang2"``, ``"yin2hang2"``, ``"yín háng"`` → ``["yin2", "hang2"]``; raises
    :class:`PronunciationError` naming the syllable at fault."""
    text = text.lower().replace("u:", "ü")
    out: list[str] = []
    for chunk in _PINYIN_SEPARATORS.split(text):
        if not chunk:
            continue
        pos = 0
        for m in _SYLLABLE.finditer(chunk):
            if m.start() != pos:
                raise PronunciationError(f"{chunk!r} is not pinyin")
            pos = m.end()
            letters, digits = m.group(1), m.group(2)
            if not digits:  # a tone mark (háng) as its digit
                toned = _tone_marked(letters)
                if toned[-1:].isdigit():
                    letters, digits = toned[:-1], toned[-1]
            out.append(_syllable(letters, digits))
        if pos != len(chunk):
            raise PronunciationError(f"{chunk!r} is not pinyin")
    if not out:
        raise PronunciationError("no pinyin syllable")
    return out


def _syllable(letters: str, digits: str) -> str:
    written = letters + digits
    if not digits:
        raise PronunciationError(
            f"{written!r} has no tone: write a digit 1-5 after it (5: neutral), e.g. {letters}4"
        )
    if len(digits) > 1 or digits not in "12345":
        raise PronunciationError(f"tone {digits} of {written!r} is not 1-5 (5: neutral)")
    base = letters.replace("ü", "v")
    base = {"lue": "lve", "nue": "nve"}.get(base, base)
    if base not in pinyin_bases():
        raise PronunciationError(f"{letters!r} is not a Mandarin syllable")
    return base + digits


# -- IPA ---------------------------------------------------------------------------------
def ipa_units(text: str) -> str:
    """IPA between slashes (``/ˈwɪn/``) as the model's units (``wˈɪn``), words parted by a
    space; raises :class:`PronunciationError` naming a symbol the model lacks."""
    body = text.strip()
    if len(body) < 2 or not body.startswith("/") or not body.endswith("/"):
        raise PronunciationError(f"IPA goes between slashes: /.../ ({text!r})")
    body = unicodedata.normalize("NFC", body[1:-1])
    inventory = frozenset(ENGLISH_IPA)
    words: list[str] = []
    for word in body.split():
        units: list[str] = []
        for ch in word:
            mapped = _IPA_ALIASES.get(ch, ch)
            for unit in mapped:
                if unit not in inventory:
                    name = unicodedata.name(unit, "unnamed")
                    raise PronunciationError(
                        f"IPA symbol {unit!r} (U+{ord(unit):04X} {name}) is not among the "
                        "model's English sounds"
                    )
                units.append(unit)
        placed = _place_stress(units)
        if placed:
            words.append(placed)
    if not words:
        raise PronunciationError("the IPA has no sound")
    return " ".join(words)


def _place_stress(units: list[str]) -> str:
    """Each stress mark just before the next vowel (espeak-ng's place); ``ˈ`` on the first
    vowel of a word with none. A mark with no vowel after it is dropped."""
    out: list[str] = []
    pending = ""
    stressed = False
    for unit in units:
        if unit in STRESS:
            pending = "ˈ" if "ˈ" in (pending, unit) else unit
            stressed = True
            continue
        if unit in _VOWELS and pending:
            out.append(pending)
            pending = ""
        out.append(unit)
    if not stressed:
        first = next((i for i, u in enumerate(out) if u in _VOWELS), None)
        if first is not None:
            out.insert(first, "ˈ")
    return "".join(out)
