"""An override inside a segment, on its way to a voice (sans-I/O).

From the segmenter to a voice a segment is a ``str`` (queues, the phrase cache key, the engine
process's front end: :mod:`emostream.text.context`). A word given a pronunciation rides in it as
U+FDD2 ``display`` U+FDD3 ``tag`` ``value`` U+FDD4: the word as written (what captions show and
what the segmenter weighs), then the pronunciation's kind (``p`` pinyin, ``i`` IPA, ``r``
respelling) and its checked value (:class:`~emostream.text.pron.spec.Pron`). Like a segment's
context marks these are Unicode noncharacters, which
:func:`emostream.text.normalize.normalize` removes from client text: only the front end writes
them, and only for an override it has checked.

A segment with overrides is still cut only between them (:func:`display_map` tells where a cut
may fall), and everything shown to a client is :func:`display_text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emostream.text.pron.spec import IPA, PINYIN, RESPELLING, Pron

OPEN, MID, CLOSE = "\ufdd2", "\ufdd3", "\ufdd4"
_TAG = {PINYIN: "p", IPA: "i", RESPELLING: "r"}
_KIND = {v: k for k, v in _TAG.items()}
PIN_RE = re.compile("\ufdd2([^\ufdd2-\ufdd4]*)\ufdd3([pir])([^\ufdd2-\ufdd4]*)\ufdd4")


@dataclass(frozen=True)
class Pin:
    """A word and the pronunciation it is read with."""

    display: str
    pron: Pron

    def wire(self) -> str:
        return f"{OPEN}{self.display}{MID}{_TAG[self.pron.kind]}{self.pron.value}{CLOSE}"

    @property
    def written(self) -> str:
        """The override as a client writes it: ``{行|hang2}``."""
        return f"{{{self.display}|{self.pron.written}}}"


def has_pins(text: str) -> bool:
    return OPEN in text


def _pin(m: re.Match[str]) -> Pin:
    return Pin(m.group(1), Pron(_KIND[m.group(2)], m.group(3)))


def split_wired(text: str) -> list[str | Pin]:
    """``text`` as its plain stretches and its pins, in order (empty stretches left out)."""
    if OPEN not in text:
        return [text] if text else []
    out: list[str | Pin] = []
    pos = 0
    for m in PIN_RE.finditer(text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append(_pin(m))
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def display_text(text: str) -> str:
    """``text`` as written: every pin's display, no marks."""
    if OPEN not in text:
        return text
    return PIN_RE.sub(lambda m: m.group(1), text)


def respelled(text: str) -> str:
    """``text`` for a front end that reads respellings only: a respelling pin is its
    respelling, any other pin its display."""
    if OPEN not in text:
        return text
    return PIN_RE.sub(lambda m: m.group(3) if m.group(2) == "r" else m.group(1), text)


@dataclass(frozen=True)
class DisplayMap:
    """``display``: the text as written; for each boundary ``p`` of it (0..len): ``starts[p]``,
    where in the wired text a piece beginning at ``p`` begins (a pin's open mark for its first
    character), ``ends[p]``, where a piece ending at ``p`` ends (after a pin's close mark for
    its last character), and ``cuttable[p]``: ``p`` is not strictly inside a pin."""

    display: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    cuttable: tuple[bool, ...]


def display_map(text: str) -> DisplayMap:
    """See :class:`DisplayMap`."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = [0]
    cuttable: list[bool] = []
    pos = 0
    for m in PIN_RE.finditer(text) if OPEN in text else ():
        for i in range(pos, m.start()):
            chars.append(text[i])
            starts.append(i)
            ends.append(i + 1)
            cuttable.append(True)
        display = m.group(1)
        for k, ch in enumerate(display):
            chars.append(ch)
            starts.append(m.start() if k == 0 else m.start(1) + k)
            ends.append(m.end() if k == len(display) - 1 else m.start(1) + k + 1)
            cuttable.append(k == 0)
        pos = m.end()
    for i in range(pos, len(text)):
        chars.append(text[i])
        starts.append(i)
        ends.append(i + 1)
        cuttable.append(True)
    starts.append(len(text))
    cuttable.append(True)
    return DisplayMap("".join(chars), tuple(starts), tuple(ends), tuple(cuttable))


def uncuttable(text: str) -> frozenset[int]:
    """Indices ``i`` of the wired ``text`` where a cut (``text[:i]`` | ``text[i:]``) would fall
    inside a pin."""
    if OPEN not in text:
        return frozenset()
    return frozenset(i for m in PIN_RE.finditer(text) for i in range(m.start() + 1, m.end()))


def wired_slice(text: str, start: int, end: int) -> str:
    """The wired text of the display characters ``[start, end)`` of ``text``: a pin wholly
    inside keeps its pronunciation; of a pinyin pin partly inside, its characters there keep
    their syllables; any other pin partly inside is its display alone."""
    if OPEN not in text:
        return text[start:end]
    out: list[str] = []
    pos = 0  # display offset of the next character
    for piece in split_wired(text):
        if isinstance(piece, str):
            lo, hi = max(start, pos), min(end, pos + len(piece))
            if lo < hi:
                out.append(piece[lo - pos : hi - pos])
            pos += len(piece)
            continue
        n = len(piece.display)
        lo, hi = max(start, pos), min(end, pos + n)
        if lo < hi:
            if lo == pos and hi == pos + n:
                out.append(piece.wire())
            elif piece.pron.kind == PINYIN:
                syllables = piece.pron.value.split()
                part = piece.display[lo - pos : hi - pos]
                value = " ".join(syllables[lo - pos : hi - pos])
                out.append(Pin(part, Pron(PINYIN, value)).wire())
            else:
                out.append(piece.display[lo - pos : hi - pos])
        pos += n
    return "".join(out)
