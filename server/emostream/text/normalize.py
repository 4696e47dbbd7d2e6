"""Text normalisation before segmentation and G2P (sans-I/O, pure functions).

Deliberately light: espeak-ng already reads English numbers, dates and most symbols,
so this module fixes what trips segmentation and phonemisers: control characters,
odd whitespace, full-width ASCII, ellipses, emoji (dropped: espeak would read their names)
and a few symbols espeak reads badly. Chat handles are read as words
(:mod:`emostream.text.handles`).
Mandarin numbers are read in context by :mod:`emostream.text.zh.g2p`.
"""

from __future__ import annotations

import re
import unicodedata

from emostream.text.handles import say_handles, say_mentions, split_joined

# Control characters, zero-width marks, and the noncharacters U+FDD0-U+FDEF, U+FFFE and U+FFFF
# (the segmenter marks a segment's context with two of them: emostream.text.context).
_CONTROL = re.compile(
    r"[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\ufeff\ufdd0-\ufdef\ufffe\uffff]"
)
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_ELLIPSIS = re.compile(r"\.{3,}|…+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# Emoji and pictographs (with their variation selectors, keycaps and tag characters): chat is
# full of them and espeak reads their names (😂😂😂 → "face with tears of joy" three times).
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0e\ufe0f\u20e3\U000e0020-\U000e007f]+"
)
_HEART = re.compile(r"(?<![A-Za-z0-9<])<3+(?!\d)")
_EMOJI_BEFORE_PUNCT = re.compile(rf"\s*{_EMOJI.pattern}(?=[!?.,;:，。！？；：、])")
_SYMBOLS = {
    "&": " and ",
    "@": " at ",
    "+": " plus ",
    "=": " equals ",
    "#": " number ",
    "~": " ",
    "*": " ",
    "_": " ",
    "|": ", ",
    "<": " ",
    ">": " ",
    "^": " ",
    "`": "",
}


_HASHTAG = re.compile(r"(?<![\w#])#([A-Za-z][A-Za-z0-9_]*)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ABOUT = re.compile(r"(?<![\w~])~(?=\d)")


def _hashtag(m: re.Match[str]) -> str:
    words = _CAMEL.sub(" ", m.group(1)).replace("_", " ").split()
    return "hashtag " + " ".join(split_joined(w) for w in words)  # #speedrunsunday too


def readable(ch: str) -> bool:
    """A character some front end here reads: ASCII, Latin with accents (café), Chinese
    characters (〇 too), Greek (espeak names the letters: π, Δ). Hangul, kana, Cyrillic,
    Arabic, Thai ... are not."""
    if ch.isascii():
        return True
    name = unicodedata.name(ch, "")
    return name.startswith(_READABLE) or name == "IDEOGRAPHIC NUMBER ZERO"


_READABLE = ("LATIN ", "CJK UNIFIED", "CJK COMPATIBILITY", "GREEK ")


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def normalize(text: str) -> str:
    """Clean ``text`` for speech. Keeps punctuation (it drives segmentation and prosody)."""
    text = _CONTROL.sub("", text)
    # NFKC folds full-width ASCII (Ａ１) to ASCII but keeps CJK punctuation (，。) as is.
    text = unicodedata.normalize("NFKC", text)
    # letters of scripts no front end reads: espeak spelled them out ("Japanese letter" five
    # times for こんにちは, "Arabic meem ..."), so a mixed line keeps only what can be said
    text = "".join(" " if ch.isalnum() and not readable(ch) else ch for ch in text)
    cjk = has_cjk(text)  # what follows neither adds nor removes hanzi
    text = _HEART.sub(" " if cjk else " love ", text)  # I <3 you
    text = _EMOJI_BEFORE_PUNCT.sub("", text)
    text = _EMOJI.sub(" ", text)
    text = _ELLIPSIS.sub("…", text)
    text = _NEWLINES.sub("\n", text)
    text = _SPACES.sub(" ", text)
    if not cjk:
        text = _HASHTAG.sub(_hashtag, text)  # #TeamBlue: hashtag Team Blue (not "number")
        text = say_handles(text)  # @nightowl99: night owl 99 (not "at nightowl99")
        text = _ABOUT.sub("about ", text)  # ~20 minutes: about 20
        text = "".join(_SYMBOLS.get(ch, ch) for ch in text)
        text = _SPACES.sub(" ", text)
    else:
        text = say_mentions(text)  # 感谢@nightowl99的: 感谢 night owl 99 的
    return text
