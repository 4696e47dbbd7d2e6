"""The inline syntax ``{word|pronunciation}``, read from text as it streams in (sans-I/O).

``{行|hang2}``, ``{银行|yin2 hang2}`` (pinyin, a toned syllable per hanzi), ``{Nguyen|/wɪn/}``
(IPA between slashes), ``{Nguyen|win}`` (a respelling): the word is spoken as given, and shown
as the word (captions, word timestamps). Only that form is an override: braces without a ``|``
inside (``{like this}``, JSON) are text, read as before. ``\\{`` is a literal ``{`` and ``\\\\``
a literal backslash, so ``\\{a|b}`` is spoken as the text ``{a|b}``; any other backslash is
itself.

:class:`InlineParser` takes the text piece by piece (tokens of a language model's reply) and
gives back :class:`Plain` stretches and :class:`Override` words as soon as they are decided. An
override split across pieces (``{行|`` then ``hang2}``) is held until its ``}`` comes, so it is
never spoken half-read; so is a ``{`` until the text shows it opens none (a line break, another
``{``, a ``}`` with no ``|`` before it, or more characters than an override may have). An
override that cannot be said (``{行|hang7}``) is read as its word, and a :class:`Problem` names
it (offsets into the text as sent).
"""

from __future__ import annotations

from dataclasses import dataclass

from emostream.text.pron.spec import MAX_PRON_CHARS, MAX_WORD_CHARS, PronunciationError, read_inline
from emostream.text.pron.wire import Pin

ESCAPABLE = "{\\"
# The longest override: {, the word, |, the pronunciation, } (and spaces around them).
MAX_OVERRIDE_CHARS = MAX_WORD_CHARS + MAX_PRON_CHARS + 8
BAD = "bad_pronunciation"


@dataclass(frozen=True)
class Plain:
    """Text as sent (``raw``) and as read (``text``: an escape resolved)."""

    raw: str
    text: str


@dataclass(frozen=True)
class Override:
    """A word with its pronunciation; ``raw``: as sent (``{行|hang2}``, or the dictionary
    word it matched)."""

    raw: str
    pin: Pin


@dataclass(frozen=True)
class Problem:
    """An override that is not applied: ``code`` (``bad_pronunciation``, or
    ``unsupported_control`` for a kind the voice does not take), a message naming it, and
    where it is in the text as sent (code points)."""

    code: str
    message: str
    span: str
    start: int
    end: int


Piece = Plain | Override | Problem


class InlineParser:
    """One utterance's inline overrides (module docs): :meth:`feed` each piece of text as
    sent, :meth:`flush` at a flush (a held override stays held) or at the end."""

    def __init__(self) -> None:
        self._held = ""  # an escape or an override not yet decided
        self._taken = 0  # characters of the text as sent before ``_held``

    def feed(self, raw: str) -> list[Piece]:
        return self._read(self._held + raw, final=False)

    def flush(self, *, final: bool = True) -> list[Piece]:
        """What is held, as text, when ``final`` (the end); else nothing moves."""
        if not final or not self._held:
            return []
        return self._read(self._held, final=True)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def _read(self, buf: str, *, final: bool) -> list[Piece]:
        self._held = ""
        out: list[Piece] = []
        start = 0  # of the plain stretch being gathered
        i = 0
        n = len(buf)
        while i < n:
            ch = buf[i]
            if ch == "\\":
                if i + 1 >= n and not final:
                    self._plain(out, buf[start:i])
                    self._held = buf[i:]
                    return out
                if i + 1 < n and buf[i + 1] in ESCAPABLE:
                    self._plain(out, buf[start:i])
                    self._emit(out, Plain(buf[i : i + 2], buf[i + 1]))
                    i += 2
                    start = i
                    continue
                i += 1
                continue
            if ch != "{":
                i += 1
                continue
            end = _override_end(buf, i)
            if end is None and not final:  # undecided: hold from the brace
                self._plain(out, buf[start:i])
                self._held = buf[i:]
                return out
            if end is None or end < 0:  # not an override: the brace is text
                if end is None and "|" in buf[i:]:
                    self._plain(out, buf[start:i])
                    out.append(self._problem(buf[i:], "no closing } (read as written)", 0))
                    self._emit(out, Plain(buf[i:], buf[i:]))
                    return out
                i += 1
                continue
            self._plain(out, buf[start:i])
            self._override(out, buf[i:end])
            i = start = end
        self._plain(out, buf[start:])
        return out

    def _plain(self, out: list[Piece], raw: str) -> None:
        if raw:
            self._emit(out, Plain(raw, raw))

    def _emit(self, out: list[Piece], piece: Plain | Override) -> None:
        out.append(piece)
        self._taken += len(piece.raw)

    def _override(self, out: list[Piece], raw: str) -> None:
        body = raw[1:-1]
        word, spec = (part.strip() for part in body.split("|", 1))
        try:
            if "|" in spec:
                raise PronunciationError("one | per override")
            pin = Pin(word, read_inline(word, spec))
        except PronunciationError as exc:
            out.append(self._problem(raw, exc.reason, 0))
            self._emit(out, Plain(raw, word))
            return
        self._emit(out, Override(raw, pin))

    def _problem(self, raw: str, reason: str, at: int) -> Problem:
        start = self._taken + at
        return Problem(BAD, f"pronunciation {raw!r}: {reason}", raw, start, start + len(raw))


def _override_end(buf: str, i: int) -> int | None:
    """After the ``{`` at ``i``: the end of the override it opens (past its ``}``), -1 when it
    opens none, None when the text so far does not say."""
    bar = False
    for j in range(i + 1, min(len(buf), i + MAX_OVERRIDE_CHARS)):
        ch = buf[j]
        if ch in "{\n":
            return -1
        if ch == "}":
            return j + 1 if bar else -1
        if ch == "|":
            bar = True
        elif not bar and j - i > MAX_WORD_CHARS + 2:
            return -1  # too long a word
    return None if len(buf) < i + MAX_OVERRIDE_CHARS else -1


def written(text: str) -> str:
    """A whole text as written: each override its word, escapes resolved (what is shown, and
    what a client weighs to pick a voice by the text's language)."""
    if "{" not in text and "\\" not in text:
        return text
    parser = InlineParser()
    pieces = parser.feed(text) + parser.flush()
    return "".join(
        p.text if isinstance(p, Plain) else p.pin.display if isinstance(p, Override) else ""
        for p in pieces
    )
