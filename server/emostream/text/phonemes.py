"""Phoneme inventory and grapheme-to-phoneme front-end for the acoustic model.

One symbol table covers both languages:

* shared symbols: padding, the utterance start/end boundaries (``^``/``$``), the word boundary
  (a space) and punctuation;
* English: espeak-ng IPA, one symbol per Unicode code point (NFD), stress marks included, as
  produced by the espeak-ng bridge that ships with ``piper-tts``;
* Mandarin: pinyin initials and toneless finals (``zh:b``, ``zh:ang``...), the tone (1-5, 5 is
  neutral) carried by a separate feature on the final, from :mod:`emostream.text.zh.g2p`
  (number reading, context polyphones, tone sandhi, erhua); an erhua syllable adds ``zh:_r``
  after its final (teacher text ``ɻ``; the final's teacher IPA loses its -n/-i coda).

Every unit also knows its *teacher text*: the Kokoro-82M input characters it stands for. The
teacher corpus feeds Kokoro the concatenation of teacher texts, so Kokoro's per-token durations
sum exactly onto our units (see :mod:`train.teacher`). For Mandarin, the teacher text
is the IPA that ``misaki``'s legacy Chinese G2P (the one Kokoro v1.0 was trained with) gives
for the syllable, split between initial and final; tone arrows belong to the final.
"""

from __future__ import annotations

import logging
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from emostream.text.english import normalize_english
from emostream.text.espeak import install as install_isolated_espeak
from emostream.text.pron.spec import ENGLISH_IPA as SPEC_IPA
from emostream.text.pron.spec import IPA, PINYIN
from emostream.text.pron.wire import Pin, has_pins, split_wired
from emostream.text.zh.g2p import Latin, MandarinFrontEnd, Punct
from emostream.text.zh.types import split_toned
from emostream.text.zh.prepare import prepare as prepare_mandarin

log = logging.getLogger(__name__)

PAD, BOS, EOS, SPACE = "<pad>", "^", "$", " "

LANG_SHARED, LANG_EN, LANG_ZH = 0, 1, 2
NUM_LANGS = 3
NUM_TONES = 6  # 0 = none, 1..4 = Mandarin tones, 5 = neutral

PUNCTUATION: tuple[str, ...] = tuple(';:,.!?—…"()“”')

# espeak-ng IPA code points that the teacher (Kokoro v1.0) also knows (emostream.text.pron.spec:
# the inventory an IPA override is checked against).
ENGLISH_IPA: tuple[str, ...] = SPEC_IPA

ZH_INITIALS: tuple[str, ...] = (
    "b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h",
    "j", "q", "x", "zh", "ch", "sh", "r", "z", "c", "s",
)  # fmt: skip

# Finals in their canonical (not spelling) form: "iou" for -iu, "uei" for -ui, "v" for ü,
# "ii" for the apical vowel after z/c/s, "iii" after zh/ch/sh/r; syllabic nasals _m, _n, _ng.
ZH_FINALS: tuple[str, ...] = (
    "a", "o", "e", "ai", "ei", "ao", "ou", "an", "en", "ang", "eng", "ong", "er",
    "i", "ia", "ie", "iao", "iou", "ian", "in", "iang", "ing", "iong", "io",
    "u", "ua", "uo", "uai", "uei", "uan", "uen", "uang", "ueng",
    "v", "ve", "van", "vn", "ii", "iii", "_m", "_n", "_ng", "ê",
)  # fmt: skip

# Appended after the first release (ids of earlier symbols must not move).
ZH_APPENDED: tuple[str, ...] = ("_r",)  # erhua rhotic suffix
ERHUA = "_r"
_ERHUA_TEACHER = "ɻ"

_ZERO_INITIAL = {
    "yi": "i", "ya": "ia", "ye": "ie", "yao": "iao", "you": "iou", "yan": "ian", "yin": "in",
    "yang": "iang", "ying": "ing", "yong": "iong", "yo": "io",
    "wu": "u", "wa": "ua", "wo": "uo", "wai": "uai", "wei": "uei", "wan": "uan", "wen": "uen",
    "wang": "uang", "weng": "ueng",
    "yu": "v", "yue": "ve", "yuan": "van", "yun": "vn",
}  # fmt: skip
_SPELLING = {"iu": "iou", "ui": "uei", "un": "uen"}
_JQX_U = {"u": "v", "ue": "ve", "uan": "van", "un": "vn"}

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ZH_PUNCT = {
    "、": ",", "，": ",", "。": ".", "．": ".", "！": "!", "：": ":", "；": ";", "？": "?",
    "《": "“", "》": "”", "「": "“", "」": "”", "【": "“", "】": "”", "（": "(", "）": ")",
    "——": "—", "…": "…", "“": "“", "”": "”", "~": ",", "～": ",",
}  # fmt: skip


def zh_symbol(name: str) -> str:
    return f"zh:{name}"


class SymbolTable:
    """Fixed, ordered symbol inventory; ids are stable across versions (append only)."""

    def __init__(self) -> None:
        symbols: list[str] = [PAD, BOS, EOS, SPACE, *PUNCTUATION, *ENGLISH_IPA]
        symbols += [zh_symbol(s) for s in ZH_INITIALS + ZH_FINALS]
        symbols += [zh_symbol(s) for s in ZH_APPENDED]
        self.symbols: tuple[str, ...] = tuple(symbols)
        self._ids = {s: i for i, s in enumerate(self.symbols)}
        if len(self._ids) != len(self.symbols):
            raise AssertionError("duplicate symbols in the inventory")

    def __len__(self) -> int:
        return len(self.symbols)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._ids

    def id(self, symbol: str) -> int:
        return self._ids[symbol]


SYMBOLS = SymbolTable()


@dataclass(frozen=True)
class Unit:
    """One model input unit (a phoneme, boundary or punctuation mark)."""

    symbol: str
    lang: int = LANG_SHARED
    tone: int = 0
    teacher: str = ""  # Kokoro input characters this unit stands for ("" for ^ and $)


@dataclass
class PhonemeSequence:
    """A text segment as model units, with ``^``/``$`` at the ends."""

    text: str
    units: list[Unit]

    @property
    def symbols(self) -> list[str]:
        return [u.symbol for u in self.units]

    def ids(self, table: SymbolTable = SYMBOLS) -> list[int]:
        return [table.id(u.symbol) for u in self.units]

    @property
    def tones(self) -> list[int]:
        return [u.tone for u in self.units]

    @property
    def langs(self) -> list[int]:
        return [u.lang for u in self.units]

    @property
    def teacher_text(self) -> str:
        return "".join(u.teacher for u in self.units)

    def teacher_spans(self) -> list[tuple[int, int]]:
        """``[start, end)`` into ``teacher_text`` for each unit."""
        spans: list[tuple[int, int]] = []
        pos = 0
        for u in self.units:
            spans.append((pos, pos + len(u.teacher)))
            pos += len(u.teacher)
        return spans


def split_pinyin(syllable: str) -> tuple[str, str, int]:
    """``"zhong1"`` → ``("zh", "ong", 1)``; canonical finals (see :data:`ZH_FINALS`)."""
    m = re.fullmatch(r"([a-zêü]+)([1-5])?", syllable)
    if m is None:
        raise ValueError(f"not a pinyin syllable: {syllable!r}")
    base, tone = m.group(1).replace("ü", "v"), int(m.group(2) or 5)
    if base in _ZERO_INITIAL:
        return "", _ZERO_INITIAL[base], tone
    if base[0] in "yw" and len(base) > 1:  # rare spellings (e.g. "yv")
        base = base[1:]
    initial = ""
    for cand in ("zh", "ch", "sh"):
        if base.startswith(cand):
            initial = cand
            break
    else:
        if base[0] in "bpmfdtnlgkhjqxrzcs" and len(base) > 1:
            initial = base[0]
    final = base[len(initial) :]
    if initial in ("j", "q", "x") and final in _JQX_U:
        final = _JQX_U[final]
    final = _SPELLING.get(final, final) if initial else final
    if final == "i" and initial in ("z", "c", "s"):
        final = "ii"
    elif final == "i" and initial in ("zh", "ch", "sh", "r"):
        final = "iii"
    if final in ("m", "n", "ng"):
        final = "_" + final
    return initial, final, tone


class G2P:
    """Text → :class:`PhonemeSequence`. English by espeak-ng; Mandarin by pypinyin + jieba.

    Heavy resources (espeak-ng data, the jieba dictionary) load lazily on first use.
    ``english_voice`` is the espeak-ng voice name used for Latin-script text.
    """

    def __init__(self, *, english_voice: str = "en-us", table: SymbolTable = SYMBOLS) -> None:
        self.english_voice = english_voice
        self.table = table
        self._zh = MandarinFrontEnd()

    # -- resources -------------------------------------------------------------------
    @cached_property
    def _espeak(self) -> Any:
        install_isolated_espeak()  # espeak-ng in a child process: a crash costs one call
        from piper.phonemize_espeak import EspeakPhonemizer

        return EspeakPhonemizer()

    @cached_property
    def _pinyin_to_ipa(self) -> Callable[[str], list[str]]:
        with warnings.catch_warnings():  # misaki.zh imports jieba (pkg_resources)
            warnings.simplefilter("ignore")
            from misaki.transcription import pinyin_to_ipa
            from misaki.zh import ZHG2P

        @lru_cache(maxsize=4096)  # ~1,300 toned syllables; misaki's lookup dominates G2P time
        def cached(syllable: str) -> tuple[str, ...]:
            return tuple(ZHG2P.retone(p) for p in pinyin_to_ipa(syllable)[0])

        def convert(syllable: str) -> list[str]:
            return list(cached(syllable))

        return convert

    # -- front-end -------------------------------------------------------------------
    def __call__(self, text: str) -> PhonemeSequence:
        units: list[Unit] = [Unit(BOS)]
        for body in self._bodies(text):
            if not body:
                continue
            if units[-1].symbol not in (BOS, SPACE) and body[0].symbol not in _NO_SPACE_BEFORE:
                units.append(Unit(SPACE, teacher=" "))
            units.extend(body)
        while units[-1].symbol == SPACE:
            units.pop()
        units.append(Unit(EOS))
        return PhonemeSequence(text=text, units=units)

    def _bodies(self, text: str) -> Iterator[list[Unit]]:
        """The units of each script run of ``text``, in order. Words given a pronunciation
        (pins, :mod:`emostream.text.pron.wire`): an IPA pin is its units, read apart from the
        text around it; a respelling is read in its word's place; a pinyin pin's syllables are
        the readings the Mandarin front end gives its characters."""
        if not has_pins(text):
            for is_zh, chunk in _script_runs(prepare_mandarin(text)):
                yield self._mandarin(chunk) if is_zh else self._english(chunk)
            return
        stretch: list[str | Pin] = []
        for piece in [*split_wired(text), None]:
            if piece is None or (isinstance(piece, Pin) and piece.pron.kind == IPA):
                yield from self._pinned(stretch)
                stretch = []
                if piece is not None:
                    yield self._ipa(piece.pron.value)
            else:
                stretch.append(piece)

    def _pinned(self, pieces: list[str | Pin]) -> Iterator[list[Unit]]:
        """Text with pinyin and respelling pins: prepared stretch by stretch (so that the
        pinned characters' offsets are known), then read as any text."""
        prepared = ""
        forced: dict[int, tuple[str, int]] = {}
        for piece in pieces:
            if isinstance(piece, str):
                prepared += prepare_mandarin(piece)
            elif piece.pron.kind == PINYIN:
                for k, syllable in enumerate(piece.pron.value.split()):
                    forced[len(prepared) + k] = split_toned(syllable)
                prepared += piece.display
            else:  # a respelling, in its word's place
                prepared += piece.pron.value
        pos = 0
        for is_zh, chunk in _script_runs(prepared):
            here = {i - pos: r for i, r in forced.items() if pos <= i < pos + len(chunk)}
            yield self._mandarin(chunk, here) if is_zh else self._english(chunk)
            pos += len(chunk)

    def _ipa(self, value: str) -> list[Unit]:
        """An IPA pin's units (checked against the inventory when it was read)."""
        out: list[Unit] = []
        for ch in value:
            if ch == SPACE:
                if out and out[-1].symbol != SPACE:
                    out.append(Unit(SPACE, teacher=" "))
            elif ch in self.table:
                out.append(Unit(ch, lang=LANG_EN, teacher=ch))
        return out

    def _english(self, text: str) -> list[Unit]:
        if not re.search(r"[A-Za-z0-9]", text):
            return [self._punct(c) for c in text if c in PUNCTUATION]
        out: list[Unit] = []
        for sentence in self._espeak.phonemize(self.english_voice, normalize_english(text)):
            if out and out[-1].symbol != SPACE:
                out.append(Unit(SPACE, teacher=" "))
            for ch in sentence:
                ch = unicodedata.normalize("NFC", ch) if ch not in self.table else ch
                if ch == SPACE:
                    if out and out[-1].symbol != SPACE:
                        out.append(Unit(SPACE, teacher=" "))
                elif ch in PUNCTUATION:
                    out.append(self._punct(ch))
                elif ch in self.table:
                    out.append(Unit(ch, lang=LANG_EN, teacher=ch))
                else:
                    log.debug("dropping espeak symbol %r", ch)
        return out

    @staticmethod
    def _punct(ch: str) -> Unit:
        return Unit(ch, teacher=ch)

    def _mandarin(self, text: str, forced: dict[int, tuple[str, int]] | None = None) -> list[Unit]:
        """``forced``: readings (toneless pinyin, tone) the characters at these offsets of
        ``text`` must have (pinyin pins)."""
        if forced and "——" in text:  # the one mark below that shortens the text
            forced = {i - text.count("——", 0, i): r for i, r in forced.items()}
        for src, dst in _ZH_PUNCT.items():
            text = text.replace(src, dst)
        out: list[Unit] = []
        for seg in self._zh(text, forced):
            if isinstance(seg, Punct):
                if seg.mark in PUNCTUATION:
                    out.append(self._punct(seg.mark))
            elif isinstance(seg, Latin):
                out.extend(self._english(seg.text))
            else:
                if out and out[-1].symbol != SPACE:
                    out.append(Unit(SPACE, teacher=" "))
                for syl in seg.syllables:
                    out.extend(self._syllable(syl.plain, erhua=syl.erhua))
        return out

    def _syllable(self, syl: str, *, erhua: bool = False) -> list[Unit]:
        try:
            initial, final, tone = split_pinyin(syl)
        except ValueError:
            log.debug("not pinyin: %r", syl)
            return [self._punct(c) for c in syl if c in PUNCTUATION]
        ipa = [_kokoro_chars(p) for p in self._pinyin_to_ipa(syl)]
        units: list[Unit] = []
        if initial:
            units.append(Unit(zh_symbol(initial), lang=LANG_ZH, teacher=ipa[0]))
            ipa = ipa[1:]
        if zh_symbol(final) not in self.table:
            log.warning("unknown Mandarin final %r in %r", final, syl)
            return units
        final_ipa = "".join(ipa)
        if erhua:  # the rhotic replaces an -n / -i coda (wanr [waɻ], kuair [kʰwaɻ])
            final_ipa = re.sub(r"(?<=.)(n|i)(?=[→↗↓↘]?$)", "", final_ipa)
        units.append(Unit(zh_symbol(final), lang=LANG_ZH, tone=tone, teacher=final_ipa))
        if erhua:
            units.append(Unit(zh_symbol(ERHUA), lang=LANG_ZH, tone=tone, teacher=_ERHUA_TEACHER))
        return [u for u in units if u.teacher]


_NO_SPACE_BEFORE = frozenset((SPACE, *";:,.!?…)”"))

_KOKORO_EXTRA = set("ʣʥʦʨꭧ→↓↗↘ᵊᵝAIOQSTWY")


def _kokoro_chars(ipa: str) -> str:
    allowed = set(ENGLISH_IPA) | _KOKORO_EXTRA
    return "".join(c for c in ipa if c in allowed)


_ZH_CHARS = r"\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
_RUNS = re.compile(rf"([{_ZH_CHARS}0-9]+)|([^{_ZH_CHARS}]+)")


def _script_runs(text: str) -> Iterable[tuple[bool, str]]:
    """Split into (is_mandarin, chunk) runs; punctuation sticks to the run before it."""
    runs: list[tuple[bool, str]] = []
    for m in _RUNS.finditer(text):
        zh = m.group(1) is not None
        chunk = m.group(0)
        if zh and not _CJK.search(chunk):
            zh = bool(runs and runs[-1][0])  # digits/full-width only: follow context
        if runs and runs[-1][0] == zh:
            runs[-1] = (zh, runs[-1][1] + chunk)
        else:
            runs.append((zh, chunk))
    return runs
