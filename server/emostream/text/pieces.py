"""Bounded pieces: a segment cut until each piece fits a model call (sans-I/O).

The segmenter (:mod:`emostream.text.splitter`) bounds a segment's *written* length, but a
voice's front end may read it out far longer: ``"9:05 "`` is "nine oh five", ``"1234567"``
seven words. A 300-character segment of digits became 1,474 acoustic-model units and 72 s of
audio in one call, whose self-attention over the frames took 1.6 GB (2026-12-07). Voices cut
such a segment with :func:`fit_pieces` before their model sees it, so a call's size (and
memory) is bounded whatever the text.

A piece is cut at the word boundary nearest the middle (after punctuation when one is as
near), else between two hanzi, else, in one unbroken run (a long number), in the middle of
it; each half is cut again until it fits. Ordinary text never reaches the bound. A word given
a pronunciation (a pin: :mod:`emostream.text.pron.wire`) is never cut.
"""

from __future__ import annotations

from collections.abc import Callable

from emostream.text.pron.wire import uncuttable

_PUNCT = set(",;:.!?，、；：。！？—…")


def fit_pieces(text: str, size: Callable[[str], int], limit: int) -> list[str]:
    """``text`` (stripped) as consecutive pieces, cut at spaces (dropped) or between two
    characters, each with ``size(piece) <= limit`` as far as cutting can take it (a single
    character is never cut). ``size``: the model units the voice makes of a text (its G2P);
    ``limit`` < 1: no bound."""
    text = text.strip()
    if limit < 1 or not text or size(text) <= limit:
        return [text] if text else []
    cut = best_cut(text)
    if cut is None:
        return [text]
    return fit_pieces(text[:cut], size, limit) + fit_pieces(text[cut:], size, limit)


def piece_limit(units: int, rate: float) -> int:
    """A bound of ``units`` a call at speaking ``rate`` 1 as the bound at ``rate`` (< 1 is
    slower: more frames a unit, so fewer units); never below 1."""
    return max(1, int(units * min(1.0, max(rate, 0.1))))


def best_cut(text: str) -> int | None:
    """Where to cut ``text`` in two (an index strictly inside it), or None for a single
    character: the space nearest the middle (a space after punctuation wins within a tenth of
    the length), else the boundary next to a hanzi nearest the middle, else the middle."""
    n = len(text)
    if n < 2:
        return None
    mid = n / 2
    inside = uncuttable(text)
    spaces = [i for i, ch in enumerate(text) if ch.isspace() and 0 < i < n - 1 and i not in inside]
    if spaces:
        slack = n / 10
        after_punct = [i for i in spaces if text[i - 1] in _PUNCT]
        best = min(spaces, key=lambda i: abs(i - mid))
        if after_punct:
            near = min(after_punct, key=lambda i: abs(i - mid))
            if abs(near - mid) <= abs(best - mid) + slack:
                best = near
        return best + 1
    hanzi = [i for i in range(1, n) if (_is_hanzi(text[i - 1]) or _is_hanzi(text[i]))
             and i not in inside]  # fmt: skip
    if hanzi:
        return min(hanzi, key=lambda i: abs(i - mid))
    free = [i for i in range(1, n) if i not in inside]
    return min(free, key=lambda i: abs(i - mid)) if free else None


def _is_hanzi(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff"
