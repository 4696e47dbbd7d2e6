"""A segment rendered with the words around it, cut to its own frames (sans-I/O).

A segment the segmenter cut between two words (:mod:`emostream.text.context`) is rendered
as ``before + text + after``. The acoustic models here are non-autoregressive and say how many
frames each unit takes (FastSpeech 2 and VITS alike), so the segment's own frames are known
exactly: from the first unit after ``before`` and its word space, to the word space after the
segment's last unit. Its last word is then said as inside the sentence, not as an utterance's
end (no final lengthening, no fall, no end silence), and the next segment starts as the
sentence goes on (no ``^`` lead), so the two play as one sentence. Dev sentences, 2026-12-07
(af_heart, zf_xiaoxiao; not the benchmark's): Whisper wrote a comma at 6 of 10 joins of
segments rendered alone and at none rendered in context; the joined audio was 4.8% (English)
and 9.6% (Mandarin) longer than the whole sentence's, within 2% in context.

The rendered frames next to a cut edge are kept too, up to :data:`CONTEXT_FRAMES` a side
(``Latent.before``/``after``), as the decoder's context there: the segment's first and last
samples are decoded as inside the sentence, and the audio of two segments meets without a
click or a gap (sample steps at the seams no larger than elsewhere). Fading the cut edges
instead lost short words at the start of a segment ("start | with the" heard "start the").

:func:`locate` finds the units: the segment (and ``before``) are phonemised alone and their
units matched (:func:`word_space`), stress marks aside, against the start of the rendered
sequence; espeak may phonemise a word differently in context ("that" unstressed) but not
otherwise, and when the match fails (espeak read two words across the cut as one run: "not
a" as nɑːɾə) that side renders without its context, as a plain segment would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from emostream.text.context import Segment
from emostream.text.phonemes import BOS, EOS, SPACE, PhonemeSequence
from emostream.voices.base import Latent

STRESS = frozenset(("ˈ", "ˌ"))
MARKS = STRESS | {BOS, EOS}  # not matched (word_space)
# Rendered frames kept either side of a cut edge, as the decoder's context there (the light
# vocoder needs 29 a side to decode a chunk as the whole would, HiFi-GAN V1 14).
CONTEXT_FRAMES = 32


@dataclass(frozen=True)
class Span:
    """The units of a rendered sequence that are the segment's: ``[lo, hi)``. ``lo`` 0: no
    left context (from ``^``); ``hi`` the sequence's length: no right context (to ``$``)."""

    lo: int
    hi: int


def locate(g2p: Callable[[str], PhonemeSequence], segment: Segment
           ) -> tuple[PhonemeSequence, Span | None]:  # fmt: skip
    """The sequence to render for ``segment`` and the span of it to keep (None: the whole,
    no context). A side whose cut cannot be found is rendered without its context."""
    before, after = segment.before, segment.after
    while before.strip() or after.strip():
        seq = g2p(before + segment.text + after)
        n = len(seq.units)
        space = _end_of(g2p, before, seq) if before.strip() else -1
        if space is None or space == n:  # no word space after ``before``: not cut there
            before = ""
            continue
        hi = _end_of(g2p, before + segment.text, seq) if after.strip() else n
        if hi is None:
            after = ""
            continue
        lo = space + 1
        if hi == n:  # the segment's units end at ``$``: no right context
            return seq, Span(lo, n) if lo else None
        return seq, Span(lo, hi + 1)  # the word space after it kept
    return g2p(segment.text), None


def _end_of(g2p: Callable[[str], PhonemeSequence], prefix: str, seq: PhonemeSequence
            ) -> int | None:  # fmt: skip
    """:func:`word_space` of ``prefix`` phonemised alone in ``seq``."""
    return word_space(g2p(prefix).symbols, seq.symbols)


def word_space(alone: Sequence[str], full: Sequence[str], *, ignore: frozenset[str] = MARKS
               ) -> int | None:  # fmt: skip
    """The index in ``full`` of the word space (``" "``) right after ``alone``'s symbols,
    matched against the start of ``full`` with the symbols in ``ignore`` (stress marks, ``^``,
    ``$``; a VITS voice's pads) aside; the length of ``full`` when nothing but those follows;
    None when the two differ there (a word read otherwise, or joined to the next)."""
    want = [s for s in alone if s not in ignore]
    j = 0
    for i, s in enumerate(full):
        if s in ignore:
            continue
        if j == len(want):
            return i if s == SPACE else None
        if s != want[j]:
            return None
        j += 1
    return len(full) if j == len(want) else None


def cut(frames: npt.NDArray[np.float32], unit_frames: npt.NDArray[np.int64], span: Span) -> Latent:
    """``span``'s frames ``[C, T]`` and frame counts as a :class:`Latent` (units left for the
    caller), with up to :data:`CONTEXT_FRAMES` rendered frames either side of a cut edge as its
    decoder context (``before``/``after``)."""
    bounds = np.concatenate([[0], np.cumsum(unit_frames)])
    start, end = int(bounds[span.lo]), int(bounds[span.hi])
    before = frames[:, max(0, start - CONTEXT_FRAMES) : start] if span.lo > 0 else None
    after = frames[:, end : end + CONTEXT_FRAMES] if span.hi < len(unit_frames) else None
    return Latent(
        frames=np.ascontiguousarray(frames[:, start:end], dtype=np.float32),
        unit_frames=unit_frames[span.lo : span.hi].astype(np.int64),
        before=None if before is None else np.ascontiguousarray(before, dtype=np.float32),
        after=None if after is None else np.ascontiguousarray(after, dtype=np.float32),
    )
