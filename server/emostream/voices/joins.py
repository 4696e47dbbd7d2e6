"""A segment rendered with the words around it, cut to its own frames (sans-I/O).

A segment the segmenter cut between two words (:mod:`emostream.text.context`) is rendered
as ``before + text + after`` by the acoustic model, which is non-autoregressive and says how
many frames each unit takes, so the segment's own frames are known exactly: from the first
unit after ``before`` and its word space, to the word space after the segment's last unit.
Its last word is then said as inside the sentence, not as an utterance's end (no final
lengthening, no fall, no end silence), and the next segment starts as the sentence goes on
(no ``^`` lead, no new declination), so the two play as one sentence (measured on dev
sentences, 2026-12-07: Whisper heard every plain join as a comma and none of these; the
joined audio within 1% of the whole sentence's length, against +7% for plain joins).

:func:`locate` finds the units: the segment (and ``before``) are phonemised alone and their
units matched, stress marks aside, against the start of the rendered sequence; espeak may
phonemise a word differently in context ("that" unstressed) but not otherwise, and when the
match fails (espeak joined two words across the cut: "with the" as one unit run) that side
renders without its context, as a plain segment would. :func:`cut` keeps the frames and fades
the cut edges over a few frames (in the log-mel domain, toward silence), where the audio
would otherwise stop or start mid-sound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from emostream.text.context import Segment
from emostream.text.phonemes import BOS, EOS, SPACE, PhonemeSequence
from emostream.voices.base import Latent

STRESS = frozenset(("ˈ", "ˌ"))
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
    """The index in ``seq`` of the word space that follows ``prefix``'s units (``prefix``
    phonemised alone, matched against the start of ``seq``, stress marks aside); the length
    of ``seq`` when ``prefix`` is all of it but ``$``; None when they do not match there."""
    alone = [s for s in g2p(prefix).symbols if s not in STRESS and s not in (BOS, EOS)]
    symbols = seq.symbols
    j = 0
    for i, s in enumerate(symbols):
        if s in STRESS or s == BOS:
            continue
        if j == len(alone):
            if s == SPACE:
                return i
            return len(symbols) if s == EOS else None
        if s != alone[j]:
            return None
        j += 1
    return None


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
