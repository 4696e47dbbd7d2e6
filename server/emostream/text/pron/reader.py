"""One utterance's pronunciation control: inline overrides, then dictionaries (sans-I/O).

:class:`PronunciationReader` sits in front of the text front end
(:class:`~emostream.text.frontend.TextFrontEnd`): each piece of text as sent goes through the
inline parser (:mod:`~emostream.text.pron.inline`, unless the start turned it off), and the
plain text it gives through the dictionaries' matcher (:mod:`~emostream.text.pron.lexicon`).
What comes out is plain text, overrides (each to become a pin in the segment:
:mod:`~emostream.text.pron.wire`) and problems. An override of a kind the voice does not take
(the Piper voice ``joe`` reads respellings only) is read as its word, with an
``unsupported_control`` problem naming it; a dictionary's entries of such a kind are left out
when the utterance starts (:meth:`PronunciationSetup.for_voice` says which).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from emostream.text.pron.inline import InlineParser, Override, Piece, Plain, Problem
from emostream.text.pron.lexicon import Lexicon, LexiconMatcher
from emostream.text.pron.spec import KINDS

UNSUPPORTED = "unsupported_control"


@dataclass(frozen=True)
class PronunciationSetup:
    """What an utterance reads: ``inline`` overrides (the start's ``pronunciation``),
    ``lexicon`` (its dictionaries, merged), ``kinds`` the voice takes, ``voice`` its id."""

    inline: bool = True
    lexicon: Lexicon | None = None
    kinds: frozenset[str] = field(default_factory=lambda: frozenset(KINDS))
    voice: str = ""

    def for_voice(self, voice: str, kinds: tuple[str, ...]) -> tuple[PronunciationSetup, list[str]]:
        """This setup for a voice that takes ``kinds``, and the kinds of dictionary entries
        left out because it does not take them (sorted)."""
        dropped: set[str] = set()
        lexicon = self.lexicon
        if lexicon is not None:
            kept = [e for e in lexicon.entries if e.pron.kind in kinds]
            dropped = {e.pron.kind for e in lexicon.entries} - set(kinds)
            lexicon = Lexicon(kept) if dropped else lexicon
        return replace(self, lexicon=lexicon, kinds=frozenset(kinds), voice=voice), sorted(dropped)


def shared_kinds(voices: Iterable[tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]]:
    """The voices of one utterance, ``(id, kinds it takes)`` each (several with a voice per
    language: any of them may speak an override), as one for :meth:`PronunciationSetup.for_voice`:
    the name to give in a problem (the voices that lack a kind, else the first) and the kinds
    every one of them takes, in :data:`KINDS` order."""
    given = dict(voices)
    kinds = tuple(k for k in KINDS if all(k in taken for taken in given.values()))
    taken_by_any = {k for taken in given.values() for k in taken}
    lacking = [vid for vid, taken in given.items() if not taken_by_any <= set(taken)]
    return ", ".join(lacking or list(given)[:1]), kinds


class PronunciationReader:
    """Feed it the text as sent; it gives :class:`Plain`, :class:`Override` and
    :class:`Problem` pieces in order (module docs)."""

    def __init__(self, setup: PronunciationSetup) -> None:
        self.setup = setup
        self._inline = InlineParser() if setup.inline else None
        lexicon = setup.lexicon
        self._matcher = LexiconMatcher(lexicon) if lexicon is not None and len(lexicon) else None
        self._taken = 0  # characters of the text as sent given out so far

    def feed(self, raw: str) -> list[Piece]:
        pieces: list[Piece] = self._inline.feed(raw) if self._inline else [Plain(raw, raw)]
        return self._placed(self._after_inline(pieces, final=False))

    def flush(self, *, final: bool = True) -> list[Piece]:
        """At a flush (``final`` False: an override still open stays held) or the end."""
        pieces: list[Piece] = self._inline.flush(final=final) if self._inline else []
        out = self._after_inline(pieces, final=final)
        if self._matcher is not None:
            out += self._matcher.release()
        return self._placed(out)

    def _placed(self, pieces: list[Piece]) -> list[Piece]:
        """``pieces`` with each problem of this reader's own placed in the text as sent."""
        out: list[Piece] = []
        for piece in pieces:
            if isinstance(piece, Problem):
                if piece.start < 0:
                    end = self._taken + len(piece.span)
                    piece = replace(piece, start=self._taken, end=end)
            else:
                self._taken += len(piece.raw)
            out.append(piece)
        return out

    @property
    def holding(self) -> bool:
        """Text is held: an override not yet closed, or a word that may be a dictionary's."""
        inline = self._inline is not None and self._inline.holding
        return inline or (self._matcher is not None and self._matcher.holding)

    def _after_inline(self, pieces: list[Piece], *, final: bool) -> list[Piece]:
        out: list[Piece] = []
        for piece in pieces:
            if isinstance(piece, Problem):
                out.append(piece)
                continue
            if self._matcher is not None:
                if isinstance(piece, Plain) and piece.raw == piece.text:
                    out += self._matcher.feed(piece.text)
                    continue
                out += self._matcher.release()  # an override or an escape: a barrier
                self._matcher.passed(piece.text if isinstance(piece, Plain) else piece.raw)
            if isinstance(piece, Override):
                out += self._checked(piece)
            else:
                out.append(piece)
        return out

    def _checked(self, piece: Override) -> list[Piece]:
        kind = piece.pin.pron.kind
        if kind in self.setup.kinds:
            return [piece]
        voice = self.setup.voice or "this voice"
        problem = Problem(UNSUPPORTED, f"voice {voice!r} does not take {kind} pronunciations: "
                          f"{piece.raw!r} is read as written", piece.raw, -1, -1)  # fmt: skip
        return [problem, Plain(piece.raw, piece.pin.display)]
