"""Incremental text segmentation (sans-I/O).

Text arrives whole or token by token. :class:`Segmenter` buffers it and releases
segments at sentence boundaries (English and Chinese punctuation), at clause
boundaries when a sentence grows long, and — for the first segment of an
utterance — at the first clause boundary after a few words, so the first audio
comes early. ``flush()`` releases whatever is buffered.

With ``words`` (token streams: the WebSocket default) a segment may also end between two
words, where :mod:`emostream.text.breaks` finds a speaker could pause, once the words
arrived so far hold no sentence end: the first after ``first_min_chars``, later ones after
``schedule`` (growing, as ElevenLabs' ``chunk_length_schedule``), or :data:`GROWTH` times the
text already released if that is less (a sentence end still cuts at once). Text sent whole keeps its sentences, as without ``words``. A segment cut between
words carries the words after it, and the next segment the words before it, as context
(:mod:`emostream.text.context`), so that the join is not heard.

An English ``.`` is a boundary only when followed by whitespace and not part of a
number (``3.14``) or a common abbreviation (``Mr.``); at the end of the buffer it
stays pending until the next character (or a flush) decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from emostream.text.breaks import char_weight, find_break, left_context, weight
from emostream.text.context import Segment
from emostream.text.normalize import readable
from emostream.text.pron.wire import CLOSE as PIN_CLOSE
from emostream.text.pron.wire import OPEN as PIN_OPEN
from emostream.text.pron.wire import display_text

SENTENCE_END = set(".!?;。！？；…\n")
CLAUSE_END = set(",:，、：—")
CLOSERS = set("\"')]}”’」』）】")
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e",
    "no", "fig", "approx", "inc", "ltd", "co", "mt", "u.s", "a.m", "p.m",
}  # fmt: skip
_CJK_PUNCT = set("。！？；，、：…")
# Later segments' least length (weighted, a hanzi 3) before a cut that is not a sentence end,
# with ``words``: the second, third, fourth and every later one; and at most GROWTH times the
# text already released. While a segment's words arrive the listener has only the earlier
# segments to hear: a first segment of 12 characters (~0.7 s of speech) and a second of 80
# (16 words, 0.8 s at one word per 50 ms) left a 0.2 s gap. Three times what is queued keeps the
# next segment ahead of the listener while words come more than three times as fast as they
# are spoken (chat models stream 5-30 words a second; speech is ~3).
SCHEDULE = (80, 160, 250)
GROWTH = 3
# With ``words``, a break between two content words (strength 1) is taken only once the text
# has run this far past the least length with no better one.
WEAK_SLACK = (16, 40)  # the first segment, later ones
_WAIT = -1  # _punct_cut: a mark at the end of the buffer waits for the next character


@dataclass
class Segmenter:
    """Buffers text and yields speakable segments.

    first_min_chars: the first segment may end at a clause boundary (or, with ``words``,
        between two words) once it has this many characters (10 ≈ two or three English
        words, or 3–4 hanzi by weight).
    clause_min_chars: later segments end at a clause boundary only past this length
        (with ``words``: past ``schedule``'s length for that segment).
    max_chars: a segment with no boundary is cut at a space (or anywhere for CJK) here.
    words: also cut between words (module docs; :mod:`emostream.text.breaks`).
    """

    first_min_chars: int = 10
    clause_min_chars: int = 120
    max_chars: int = 300
    words: bool = False
    schedule: tuple[int, ...] = SCHEDULE
    _buf: str = ""
    _emitted: int = field(default=0)
    _before: str = ""  # the last segment ended between words: its last words (context)
    _released: int = 0  # weight of the segments released so far

    def feed(self, text: str) -> list[str]:
        """Add text; return the segments now complete."""
        self._buf += text
        return self._drain(final=False)

    def flush(self) -> list[str]:
        """Release everything buffered (on ``flush`` or ``end``)."""
        out = self._drain(final=True)
        rest, self._buf = self._buf, ""
        self._emit(out, rest)
        return out

    def reset(self) -> None:
        self._buf = ""
        self._emitted = 0
        self._before = ""
        self._released = 0

    @property
    def pending(self) -> str:
        return self._buf

    @property
    def emitted(self) -> int:
        return self._emitted

    # -- internals --------------------------------------------------------------
    def _min_chars(self) -> int:
        if self._emitted == 0:
            return self.first_min_chars
        if not self.words:
            return self.clause_min_chars
        planned = self.schedule[min(self._emitted - 1, len(self.schedule) - 1)]
        return min(planned, max(self.first_min_chars, GROWTH * self._released))

    def _drain(self, *, final: bool) -> list[str]:
        out: list[str] = []
        while True:
            cut = self._punct_cut(final=final)
            after = ""
            if cut is None and self.words and not final:
                found = find_break(self._buf, min_weight=self._min_chars(),
                                   slack=WEAK_SLACK[self._emitted > 0])  # fmt: skip
                if found is not None:
                    cut, after = found.at, self._buf[found.at : found.context_end]
            if cut is None or cut == _WAIT:
                break
            raw, self._buf = self._buf[:cut], self._buf[cut:]
            self._emit(out, raw, after=after)
        return out

    def _emit(self, out: list[str], raw: str, *, after: str = "") -> None:
        """``raw`` as a segment (with its context), or stray punctuation joined to the last
        one; ``after``: it ended between words, before these."""
        seg = raw.strip()
        if not _speakable(seg):
            if out and seg:  # stray punctuation joins the previous segment
                last = Segment.parse(out[-1])
                out[-1] = Segment(last.text + seg, last.before, last.after).wire()
            return
        lead = raw[: len(raw) - len(raw.lstrip())]
        before = self._before + lead if self._before else ""
        out.append(Segment(seg, before, after).wire())
        self._emitted += 1
        self._released += weight(seg)
        self._before = left_context(seg) if after else ""

    def _punct_cut(self, *, final: bool) -> int | None:
        """Where the buffer's first segment ends at punctuation (or at ``max_chars``); None
        when it holds no such end; :data:`_WAIT` when a mark at its end needs the next
        character to decide."""
        buf = self._buf
        min_clause = self._min_chars()
        last_space = -1
        before = 0  # _weight(buf[:i]), kept as the loop goes (one pass, not one per character)
        i = -1
        while i + 1 < len(buf):
            i += 1
            ch = buf[i]
            if ch == PIN_OPEN:  # a word given a pronunciation: whole, no cut inside it
                close = buf.find(PIN_CLOSE, i)
                upto = before + weight(buf[i : close + 1])
                i = close
                if upto >= self.max_chars:
                    return i + 1 if last_space <= 0 else last_space + 1
                before = upto
                continue
            upto = before + char_weight(ch)  # _weight(buf[: i + 1])
            if ch == " ":
                last_space = i
            if ch in SENTENCE_END or ch in CLAUSE_END:
                is_sentence = ch in SENTENCE_END
                if not is_sentence and before < min_clause:
                    before = upto
                    continue
                if ch in ".:" or (ch == "," and not _is_cjk_context(buf, i)):
                    # Needs the next character to decide (number, abbreviation, spacing).
                    if i + 1 >= len(buf):
                        return len(buf) if final else _WAIT
                    if not buf[i + 1].isspace() and buf[i + 1] not in CLOSERS:
                        before = upto
                        continue
                    if ch == "." and _is_abbreviation(buf[:i]):
                        before = upto
                        continue
                if is_sentence and before < 1:
                    before = upto
                    continue
                end = i + 1
                while end < len(buf) and (buf[end] in CLOSERS or buf[end] in SENTENCE_END):
                    end += 1
                if end >= len(buf) and not final and ch not in _CJK_PUNCT and ch != "\n":
                    # A closer or more punctuation may still come ("Really?!").
                    return _WAIT
                return end
            if upto >= self.max_chars:
                if _is_cjk_context(buf, i) or last_space <= 0:
                    return i + 1
                return last_space + 1
            before = upto
        return None


def _is_cjk_context(buf: str, i: int) -> bool:
    ch = buf[i]
    if ch in _CJK_PUNCT:
        return True
    prev = buf[i - 1] if i > 0 else ""
    if prev == PIN_CLOSE:  # after a pin: its word's last character
        prev = display_text(buf[buf.rfind(PIN_OPEN, 0, i) : i])[-1:]
    return bool(prev) and "\u3400" <= prev <= "\u9fff"


def _is_abbreviation(before: str) -> bool:
    word = before.rsplit(None, 1)[-1].lower() if before.strip() else ""
    word = word.lstrip("(\"'")
    if word in ABBREVIATIONS:
        return True
    # Single capital initial ("J. R. R. Tolkien") or a number ("No. 5" handled above).
    return len(word) == 1 and word.isalpha()


def _speakable(text: str) -> bool:
    """Holds a letter or digit some front end here reads (:func:`readable`: Latin, Chinese,
    Greek). Hangul, Cyrillic, Arabic, kana ... are letters too, but a segment of only those
    would be silence."""
    return any(ch.isalnum() and readable(ch) for ch in display_text(text))
