"""What the Mandarin front end produces: syllables, words, Latin runs and punctuation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Syllable:
    """One spoken syllable: toneless pinyin ``base`` (``"wan"``), surface ``tone`` (1-5)."""

    base: str
    tone: int
    char: str = ""
    erhua: bool = False
    late_neutral: bool = False  # neutral after third-tone sandhi (想想 xiang2 xiang5)
    frozen: bool = False  # no 一/不 sandhi
    pinned: bool = False  # a reading the client gave (a pinyin override): no rule changes it

    @property
    def plain(self) -> str:
        """Toned pinyin without the erhua marker (what ``pinyin_to_ipa`` understands)."""
        return f"{self.base}{self.tone}"

    def __str__(self) -> str:
        return f"{self.base}{'r' if self.erhua else ''}{self.tone}"


@dataclass
class Word:
    text: str
    syllables: list[Syllable] = field(default_factory=list)


@dataclass(frozen=True)
class Latin:
    text: str


@dataclass(frozen=True)
class Punct:
    mark: str


Segment = Word | Latin | Punct


def split_toned(syl: str) -> tuple[str, int]:
    """``"hao3"`` → ``("hao", 3)`` (ü written v)."""
    m = re.fullmatch(r"([a-zêü]+)([1-5])", syl)
    if m is None:
        raise ValueError(f"not a toned pinyin syllable: {syl!r}")
    return m.group(1).replace("ü", "v"), int(m.group(2))
