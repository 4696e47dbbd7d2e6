"""A segment's language, and a segment cut where its language changes (sans-I/O).

An utterance with a voice per language (``voices`` in a ``start`` or a ``line``:
docs/protocol.md, "A voice per language") speaks each segment with its language's voice. The
segmenter (:mod:`emostream.text.splitter`) cuts at sentences and clauses whatever their
language, so :func:`split_languages` cuts each of its segments again where the language
changes, and :func:`segment_language` names the language of each piece. The two agree: a
piece with a Chinese character in it is Mandarin, any other English.

Where the language changes:

* a run of Chinese characters is Mandarin, a run of Latin letters English; digits, spaces,
  punctuation and symbols go with the run before them (a clause mark ends its run), except
  digits written against the Chinese character after them (``3个``) and an opening quote or
  bracket, which go with the run after;
* a short English run inside Mandarin stays Mandarin: at most :data:`MAX_EMBEDDED_WORDS`
  words with no punctuation between them and the Mandarin, when Mandarin is on both sides of
  them (``这个 bug 太离谱了``) or the Mandarin they touch has at least
  :data:`HANZI_PER_WORD` characters a word and is not itself inside English (``OK 我知道了``,
  ``nice 主播``; not ``I think 这个主播 is funny``). Mandarin speakers
  say such words inside Mandarin, and the Mandarin voices were trained on them; a voice
  change for one word inside a sentence is the worse sound. Any Chinese character inside
  English is cut out: the English voices never learned to read them (``I love 火锅``);
* a piece cut where no punctuation parts it from the next keeps the words around it as
  context (:mod:`emostream.text.context`: rendered, not spoken), so that it is said as
  inside its sentence, without the fall and pause of a sentence end.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from emostream.text.breaks import CONTEXT_WORDS, left_context, tokens
from emostream.text.context import Segment, spoken_text
from emostream.text.pron.wire import display_map, has_pins

LANGUAGES: tuple[str, ...] = ("en", "zh")
MAX_EMBEDDED_WORDS = 2
HANZI_PER_WORD = 2
# Marks that end a clause or a sentence: a language change after one needs no context.
_MARKS = frozenset(",;:.!?…—，、；：。！？")
_CLOSERS = frozenset("\"')]}”’」』）】》")
_OPENERS = frozenset("\"'([{“‘「『（【《")


def is_hanzi(ch: str) -> bool:
    """A Chinese character (the front end's ranges, ``〇`` too)."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or ch == "\u3007"


def char_language(ch: str) -> str | None:
    """``zh`` for a Chinese character, ``en`` for another letter (Latin, Greek: the English
    front end reads them), None for the rest (digits, spaces, punctuation, symbols)."""
    if is_hanzi(ch):
        return "zh"
    return "en" if ch.isalpha() else None


def segment_language(segment: str) -> str:
    """The language of a (wired) segment's spoken text: ``zh`` when it holds a Chinese
    character (a few English words inside Mandarin included), else ``en`` (digits alone too,
    as the front end reads them)."""
    return "zh" if any(is_hanzi(ch) for ch in spoken_text(segment)) else "en"


@dataclass
class _Run:
    lang: str
    text: str

    @property
    def words(self) -> int:
        return sum(1 for w in self.text.split() if any(ch.isalpha() for ch in w))

    @property
    def hanzi(self) -> int:
        return sum(1 for ch in self.text if is_hanzi(ch))

    @property
    def ends_clause(self) -> bool:
        tail = self.text.rstrip().rstrip("".join(_CLOSERS))
        return bool(tail) and tail[-1] in _MARKS


def language_runs(text: str) -> list[tuple[str, str]]:
    """``text`` as consecutive ``(language, piece)`` runs (their pieces joined are ``text``),
    cut where the language changes (module docs); one run when it does not."""
    letters = [(i, lang) for i, ch in enumerate(text) if (lang := char_language(ch))]
    if not letters:
        return [(segment_language(text), text)] if text else []
    runs: list[_Run] = []
    start = 0
    for (a, lang_a), (b, lang_b) in pairwise(letters):
        if lang_a == lang_b:
            continue
        cut = _cut(text, a + 1, b, lang_b)
        runs.append(_Run(lang_a, text[start:cut]))
        start = cut
    runs.append(_Run(letters[-1][1], text[start:]))
    for k, run in enumerate(runs):  # decided on the runs as found, then relabelled
        run.lang = "zh" if _embedded(runs, k) else run.lang
    merged: list[_Run] = []
    for run in runs:
        if merged and merged[-1].lang == run.lang:
            merged[-1].text += run.text
        else:
            merged.append(run)
    return [(r.lang, r.text) for r in merged]


def _cut(text: str, lo: int, hi: int, next_lang: str) -> int:
    """Where the run ending before ``lo`` gives way to the one starting at ``hi``: the
    characters between go with the first, but for digits against a Chinese character and
    opening quotes or brackets, which go with the second."""
    cut = hi
    while cut > lo and text[cut - 1] in _OPENERS:
        cut -= 1
    if next_lang == "zh" and cut == hi:
        while cut > lo and text[cut - 1].isdigit():
            cut -= 1
    return cut


def _embedded(runs: list[_Run], k: int) -> bool:
    """An English run short enough, and close enough to Mandarin, to be read inside it."""
    run = runs[k]
    if run.lang != "en" or run.words > MAX_EMBEDDED_WORDS:
        return False
    left = runs[k - 1] if k > 0 and not runs[k - 1].ends_clause else None
    right = runs[k + 1] if k + 1 < len(runs) and not run.ends_clause else None
    if left is not None and right is not None:
        return True
    if left is not None:  # English after the Mandarin before it: that Mandarin is inside English
        inside = k > 1 and not runs[k - 2].ends_clause
        touching = left
    elif right is not None:
        inside = k + 2 < len(runs) and not right.ends_clause
        touching = right
    else:
        return False
    return not inside and touching.hanzi >= HANZI_PER_WORD * max(run.words, 1)


def right_context(text: str) -> str:
    """The first :data:`~emostream.text.breaks.CONTEXT_WORDS` words of ``text``, up to a
    mark: a piece's right context when the piece after it is cut off."""
    end = 0
    for tok in [t for t in tokens(text) if t.is_word][:CONTEXT_WORDS]:
        end = tok.end
        if tok.text[-1] in _MARKS or tok.text[-1] in _CLOSERS:
            break
    return text[:end]


def split_languages(wired: str) -> list[str]:
    """A (wired) segment as wired segments of one language each (:func:`language_runs`):
    ``[wired]`` when its language does not change. The first piece keeps the segment's left
    context, the last its right context; a cut with no punctuation gives the pieces on its
    two sides the words across it as context."""
    segment = Segment.parse(wired)
    runs = [(lang, piece) for lang, piece in _wired_runs(segment.text) if piece.strip()]
    if len(runs) <= 1:
        return [wired]
    texts = [piece.strip() for _, piece in runs]
    gaps = [_between(runs[k][1], runs[k + 1][1]) for k in range(len(runs) - 1)]
    out: list[str] = []
    for k, text in enumerate(texts):
        before, after = "", ""
        if k == 0:
            before = segment.before
        elif not _Run("", texts[k - 1]).ends_clause:
            before = left_context(texts[k - 1]) + gaps[k - 1]
        if k == len(texts) - 1:
            after = segment.after
        elif not _Run("", text).ends_clause:
            after = gaps[k] + right_context(texts[k + 1])
        out.append(Segment(text, before, after).wire())
    return out


def _wired_runs(text: str) -> list[tuple[str, str]]:
    """:func:`language_runs` of a segment's text that may hold words given a pronunciation
    (pins, :mod:`emostream.text.pron.wire`): the languages are those of the text as written
    (a pin is its display: its pinyin or IPA is not English), and no cut falls inside a pin
    (a cut there moves to the pin's start, so the pin goes whole with the run after it)."""
    if not has_pins(text):
        return language_runs(text)
    shown = display_map(text)
    pieces: list[tuple[str, str]] = []
    lo = 0
    runs = language_runs(shown.display)
    for k, (lang, piece) in enumerate(runs):
        hi = lo + len(piece)
        if k == len(runs) - 1:
            hi = len(shown.display)
        while not shown.cuttable[hi]:
            hi -= 1
        start = 0 if not pieces else shown.starts[lo]
        if hi > lo:
            wired = text[start : shown.ends[hi] if hi < len(shown.display) else len(text)]
            if pieces and pieces[-1][0] == lang:
                pieces[-1] = (lang, pieces[-1][1] + wired)
            else:
                pieces.append((lang, wired))
            lo = hi
    return pieces


def _between(piece: str, following: str) -> str:
    """The whitespace between two consecutive pieces (stripped from both)."""
    return piece[len(piece.rstrip()) :] + following[: len(following) - len(following.lstrip())]
