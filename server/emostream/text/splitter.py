"""Incremental text segmentation (sans-I/O).

Text arrives whole or token by token. :class:`Segmenter` buffers it and releases
segments at sentence boundaries (English and Chinese punctuation), at clause
boundaries when a sentence grows long, and — for the first segment of an
utterance — at the first clause boundary after a few words, so the first audio
comes early. ``flush()`` releases whatever is buffered.

An English ``.`` is a boundary only when followed by whitespace and not part of a
number (``3.14``) or a common abbreviation (``Mr.``); at the end of the buffer it
stays pending until the next character (or a flush) decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from emostream.text.normalize import readable

SENTENCE_END = set(".!?;。！？；…\n")
CLAUSE_END = set(",:，、：—")
CLOSERS = set("\"')]}”’」』）】")
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e",
    "no", "fig", "approx", "inc", "ltd", "co", "mt", "u.s", "a.m", "p.m",
}  # fmt: skip
_CJK_PUNCT = set("。！？；，、：…")


@dataclass
class Segmenter:
    """Buffers text and yields speakable segments.

    first_min_chars: the first segment may end at a clause boundary once it has this
        many characters (10 ≈ two or three English words, or 3–4 hanzi by weight).
    clause_min_chars: later segments end at a clause boundary only past this length.
    max_chars: a segment with no boundary is cut at a space (or anywhere for CJK) here.
    """

    first_min_chars: int = 10
    clause_min_chars: int = 120
    max_chars: int = 300
    _buf: str = ""
    _emitted: int = field(default=0)

    def feed(self, text: str) -> list[str]:
        """Add text; return the segments now complete."""
        self._buf += text
        return self._drain(final=False)

    def flush(self) -> list[str]:
        """Release everything buffered (on ``flush`` or ``end``)."""
        out = self._drain(final=True)
        rest = self._buf.strip()
        self._buf = ""
        if _speakable(rest):
            out.append(rest)
            self._emitted += 1
        return out

    def reset(self) -> None:
        self._buf = ""
        self._emitted = 0

    @property
    def pending(self) -> str:
        return self._buf

    @property
    def emitted(self) -> int:
        return self._emitted

    # -- internals --------------------------------------------------------------
    def _drain(self, *, final: bool) -> list[str]:
        out: list[str] = []
        while True:
            cut = self._find_cut(final=final)
            if cut is None:
                break
            seg, self._buf = self._buf[:cut].strip(), self._buf[cut:]
            if _speakable(seg):
                out.append(seg)
                self._emitted += 1
            elif out and seg:
                out[-1] += seg  # stray punctuation joins the previous segment
        return out

    def _find_cut(self, *, final: bool) -> int | None:
        buf = self._buf
        min_clause = self.first_min_chars if self._emitted == 0 else self.clause_min_chars
        last_space = -1
        before = 0  # _weight(buf[:i]), kept as the loop goes (one pass, not one per character)
        for i, ch in enumerate(buf):
            upto = before + _char_weight(ch)  # _weight(buf[: i + 1])
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
                        return len(buf) if final else None
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
                    return None
                return end
            if upto >= self.max_chars:
                if _is_cjk_context(buf, i) or last_space <= 0:
                    return i + 1
                return last_space + 1
            before = upto
        return None


def _weight(text: str) -> int:
    """Length in 'English characters': a hanzi counts as three."""
    return sum(_char_weight(ch) for ch in text)


def _char_weight(ch: str) -> int:
    return 3 if "\u3400" <= ch <= "\u9fff" else 1


def _is_cjk_context(buf: str, i: int) -> bool:
    ch = buf[i]
    if ch in _CJK_PUNCT:
        return True
    return i > 0 and "\u3400" <= buf[i - 1] <= "\u9fff"


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
    return any(ch.isalnum() and readable(ch) for ch in text)
