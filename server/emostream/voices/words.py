"""Word timestamps: which of a segment's model units speak which written word.

A voice's acoustic stage gives a duration per model unit (phoneme, boundary, punctuation); a
caption needs the words as the user wrote them. :func:`align_words` joins the two:

1. :func:`written_words` cuts the segment text into words with character offsets: a run of
   letters and digits (joined by ``'`` ``-`` ``.`` ``,`` ``:`` ``/`` inside it, with a leading
   currency sign and a trailing ``%``), and every hanzi on its own (Mandarin is timed per
   character);
2. each word is spoken alone by the voice's own front end (``spoken``), which gives the units
   that word would have; the concatenation is matched against the segment's real unit sequence
   (:class:`difflib.SequenceMatcher`, boundaries and punctuation left out of both sides). Units
   that match take their word; units in a changed stretch are shared out in order, in
   proportion; leftover units join the word before them, or the word after them when a word
   boundary precedes them.

The matching copes with what context changes: espeak joining words (``out of`` → ``ˌaʊɾəv``),
stress moving, numbers read differently in a sentence (``in 2026``), erhua (儿 becomes the
``zh:_r`` of the syllable before it), polyphones and tone sandhi (tones are not units). Word
ranges come out in order and never overlap; a word with no unit of its own gets an empty range
at the point between its neighbours.
"""

from __future__ import annotations

import difflib
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from emostream.text.pron.wire import display_text, has_pins, wired_slice

log = logging.getLogger(__name__)

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_ALNUM = rf"(?:(?![{_HAN}])[^\W_])"
_WORD = re.compile(
    rf"[{_HAN}]|[$€£¥]?{_ALNUM}+(?:['’\-.,:/]{_ALNUM}+)*%?",
)
# Units that are not part of any word: padding, utterance boundaries, the word boundary.
_NOT_SPOKEN = frozenset(("^", "$", "_", "<pad>", " "))


@dataclass(frozen=True)
class WrittenWord:
    """A word of the segment text: ``text == segment[start:end]``."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class WordUnits:
    """A written word and the model units that speak it: ``units[lo:hi]`` (``lo == hi`` when
    none of the units is its own)."""

    word: WrittenWord
    lo: int
    hi: int


def written_words(text: str) -> list[WrittenWord]:
    """The words of ``text`` in order, with their ``[start, end)`` character offsets."""
    return [WrittenWord(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]


def is_spoken(unit: str) -> bool:
    """True for a unit that sounds as part of a word (not padding, a boundary or punctuation)."""
    if unit in _NOT_SPOKEN:
        return False
    if unit.startswith("zh:"):
        return True
    # IPA letters, stress and length marks (Lm), combining marks (the nasal tilde).
    return any(ch.isalpha() or unicodedata.category(ch).startswith("M") for ch in unit)


def align_words(
    text: str, units: Sequence[str], spoken: Callable[[str], Sequence[str]]
) -> list[WordUnits]:
    """Unit ranges for the words of ``text`` (see the module docstring).

    ``units``: the segment's model units, in order (one duration each); ``spoken``: the units
    the same voice gives one word said alone."""
    words = written_words(text)
    if not words:
        return []
    a_idx = [i for i, u in enumerate(units) if is_spoken(u)]
    a = [units[i] for i in a_idx]
    b: list[str] = []
    b_owner: list[int] = []
    for k, w in enumerate(words):
        for sym in spoken(w.text):
            if is_spoken(sym):
                b.append(sym)
                b_owner.append(k)
    if not a:
        return [WordUnits(w, 0, 0) for w in words]
    if not b:
        owners = _proportional(words, len(a))
    else:
        owners = _match(units, a_idx, a, b, b_owner)
    return _ranges(words, owners, a_idx)


def _match(
    units: Sequence[str], a_idx: list[int], a: list[str], b: list[str], b_owner: list[int]
) -> list[int]:
    """The word index of every spoken unit ``a[i]``, non-decreasing."""
    owner = [-1] * len(a)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                owner[i1 + d] = b_owner[j1 + d]
        elif tag == "replace":
            for i in range(i1, i2):
                owner[i] = b_owner[j1 + (i - i1) * (j2 - j1) // (i2 - i1)]
        elif tag == "delete":  # units the words said alone do not have
            left = b_owner[j1 - 1] if j1 > 0 else b_owner[0]
            right = b_owner[j1] if j1 < len(b) else b_owner[-1]
            # A word boundary just before the stretch: it starts the next word.
            starts_word = i1 == 0 or any(
                not is_spoken(u) for u in units[a_idx[i1 - 1] + 1 : a_idx[i1]]
            )
            for i in range(i1, i2):
                owner[i] = right if starts_word else left
    for i in range(1, len(owner)):  # keep the order whatever the matcher did
        owner[i] = max(owner[i], owner[i - 1])
    return owner


def _proportional(words: Sequence[WrittenWord], n: int) -> list[int]:
    """Share ``n`` units among ``words`` by written length (when no word could be spoken)."""
    total = sum(len(w.text) for w in words)
    owner: list[int] = []
    acc = 0
    for k, w in enumerate(words):
        acc += len(w.text)
        owner += [k] * (round(n * acc / total) - len(owner))
    return owner


def _ranges(words: Sequence[WrittenWord], owner: list[int], a_idx: list[int]) -> list[WordUnits]:
    lo: list[int | None] = [None] * len(words)
    hi: list[int | None] = [None] * len(words)
    for i, k in enumerate(owner):
        if lo[k] is None:
            lo[k] = a_idx[i]
        hi[k] = a_idx[i] + 1
    out: list[WordUnits] = []
    prev_end = a_idx[0]
    for k, w in enumerate(words):
        start, end = lo[k], hi[k]
        if start is None or end is None:  # no unit of its own: the point after the word before
            start = end = prev_end
        out.append(WordUnits(w, start, end))
        prev_end = end
    return out


def proportional_words(text: str, units: Sequence[str]) -> list[WordUnits]:
    """A coarse fallback: the spoken units shared among the words by written length."""
    words = written_words(text)
    a_idx = [i for i, u in enumerate(units) if is_spoken(u)]
    if not words:
        return []
    if not a_idx:
        return [WordUnits(w, 0, 0) for w in words]
    return _ranges(words, _proportional(words, len(a_idx)), a_idx)


def safe_align(
    text: str, units: Sequence[str], spoken: Callable[[str], Sequence[str]]
) -> list[WordUnits]:
    """:func:`align_words`, falling back to :func:`proportional_words` if the front end fails
    on a word (logged): captions stay in step even then.

    A word given a pronunciation (a pin, :mod:`emostream.text.pron.wire`) is timed as written
    (the words and offsets are those of the display text) and said alone as pronounced (so
    ``{Nguyen|/wɪn/}`` matches the units of wɪn)."""
    if has_pins(text):
        display = display_text(text)
        said: dict[str, str] = {}
        for w in written_words(display):
            said.setdefault(w.text, wired_slice(text, w.start, w.end))
        return safe_align(display, units, lambda word: spoken(said.get(word, word)))
    try:
        return align_words(text, units, spoken)
    except Exception:  # a front-end failure must not cut the audio
        log.exception("word alignment failed for %r; sharing the units by length", text[:80])
        return proportional_words(text, units)
