"""Text normalisation before segmentation and G2P (sans-I/O, pure functions).

Deliberately light: espeak-ng already reads English numbers, dates and most symbols,
so this module fixes what trips segmentation and phonemisers: control characters,
odd whitespace, full-width ASCII, ellipses and a few symbols espeak reads badly.
Mandarin digits are spelt out in hanzi (``digits_to_hanzi``) for models that read pinyin.
"""

from __future__ import annotations

import re
import unicodedata

_CONTROL = re.compile(r"[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\ufeff]")
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_ELLIPSIS = re.compile(r"\.{3,}|…+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
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
_HANZI_DIGITS = "零一二三四五六七八九"


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def normalize(text: str) -> str:
    """Clean ``text`` for speech. Keeps punctuation (it drives segmentation and prosody)."""
    text = _CONTROL.sub("", text)
    # NFKC folds full-width ASCII (Ａ１) to ASCII but keeps CJK punctuation (，。) as is.
    text = unicodedata.normalize("NFKC", text)
    text = _ELLIPSIS.sub("…", text)
    text = _NEWLINES.sub("\n", text)
    text = _SPACES.sub(" ", text)
    if not has_cjk(text):
        text = "".join(_SYMBOLS.get(ch, ch) for ch in text)
        text = _SPACES.sub(" ", text)
    return text


def digits_to_hanzi(number: str) -> str:
    """Read an integer string in Mandarin: ``"2026"`` → ``"两千零二十六"``-style reading.

    Handles up to 99,999,999; longer strings are read digit by digit.
    """
    if not number.isdigit():
        raise ValueError(f"not a digit string: {number!r}")
    value = int(number)
    if len(number) > 8 or (len(number) > 1 and number[0] == "0"):
        return "".join(_HANZI_DIGITS[int(d)] for d in number)
    if value == 0:
        return "零"

    def below_10k(n: int) -> str:
        units = ["", "十", "百", "千"]
        out: list[str] = []
        zero = False
        for i in range(3, -1, -1):
            d = (n // 10**i) % 10
            if d == 0:
                zero = bool(out)
                continue
            if zero:
                out.append("零")
                zero = False
            out.append(_HANZI_DIGITS[d] + units[i])
        return "".join(out)

    high, low = divmod(value, 10_000)
    text = ""
    if high:
        text = below_10k(high) + "万"
        if 0 < low < 1000:
            text += "零"
    if low:
        text += below_10k(low)
    if text.startswith("一十"):
        text = text[1:]
    return text


_ZH_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def spell_zh_numbers(text: str) -> str:
    """Replace Arabic numerals in Mandarin text with their hanzi reading."""

    def repl(m: re.Match[str]) -> str:
        whole, _, frac = m.group(0).partition(".")
        out = digits_to_hanzi(whole)
        if frac:
            out += "点" + "".join(_HANZI_DIGITS[int(d)] for d in frac)
        return out

    return _ZH_NUMBER.sub(repl, text)
