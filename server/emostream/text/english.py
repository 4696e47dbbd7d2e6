"""English text normalisation before espeak-ng: the readings espeak gets wrong in chat text.

espeak-ng reads plain numbers, ordinals, percentages and most abbreviations well, so this
module only rewrites what it reads badly, into forms it reads well (digits stay digits):

* money: ``$5`` → ``5 dollars`` (espeak: "dollar five"), ``$3.50`` → ``3 dollars 50``,
  ``€20`` → ``20 euros``, ``£1`` → ``1 pound``, ``$2.5M`` → ``2.5 million dollars``;
* clock times: ``9:05`` → ``9 oh 5`` (espeak: "nine zero five"), ``9:00`` → ``9 o'clock``;
* ranges and scores: ``10-15`` → ``10 to 15`` (espeak: "ten dash fifteen"), ``3-2`` the same;
* phone-like digit groups (``555-0123``, ``+1 415 555 0199``): digit by digit, groups
  separated by commas;
* years after a preposition (``in 2026`` → ``in 20 26``, ``since 1905`` → ``since 19 oh 5``):
  espeak otherwise says "two thousand twenty six";
* chat counts and shorthand (a first 2026-12-06 audit: espeak said "one point five em",
  "minz", "fifty to fifty", "vol", and spelled tmrw): ``1.5M`` → ``1.5 million``, ``5 mins``
  → ``5 minutes``, ``50-50`` → ``50 50``, ``Vol. 2`` → ``volume 2``, lower-case
  ``tmrw``/``rn``/``bc``/``ofc``/``fr`` in full; ``20ms`` → ``20 milliseconds``; decades
  (``the 90s`` → ``the nineties``, ``1980s`` → ``19 eighties``: espeak said "ninety z",
  "nineteen hundred eighty z"); ``Mon-Fri`` → ``Monday to Friday``; ``POV`` as letters; a
  word stretched at its end (``sooo``, ``GOOOO``, ``heyyy`` → ``so``, ``GO``, ``hey``:
  espeak said "suːuː"); idc, w/e, approx and lower-case vs in full. (``<3`` is
  :func:`emostream.text.normalize.normalize`'s: "love".) A second 2026-12-06 audit (30 chat
  lines through espeak): a weekday after on/every/until… (``on Sat`` → ``on Saturday``;
  espeak read the verb "sat"), lower-case ``ez`` → ``easy``, ``v2.3.1`` → ``version 2.3.1``.
  A third (100 chat lines): imho, bday, gr8, l8r, 2day, 2nite, lower-case gl/hf in full; GGs
  → gg's; irl/omfg/lmfao spelled (espeak said "earl"); mhm → um-hum, shh → sch (ʃ), LUL →
  lul, hahaha → ha ha ha; ``https://`` dropped. A fourth, the same day: brr/grrr (spelled as
  letters) → burr/gurr, uhh ("oo") → uh, ummm → um, oooh → ooh; ttyl, ily, istg, wyd, iirc,
  afaik, tyvm, cya, sry, hmu, srsly, coz and lower-case yw, ppl, msg, gn, gm, obv, abt, b4,
  2moro, l8, m8, str8 in full; emo → eemo (espeak: ih-MOH).

Pure functions; the G2P calls :func:`normalize_english` on every Latin-script run.
"""

from __future__ import annotations

import re
from functools import partial

_CURRENCY = {"$": ("dollar", "dollars"), "€": ("euro", "euros"), "£": ("pound", "pounds")}
_SCALE = {"k": "thousand", "K": "thousand", "m": "million", "M": "million", "b": "billion",
          "B": "billion", "bn": "billion"}  # fmt: skip

_MONEY = re.compile(r"([$€£])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(bn|[kKmMbB])?\b")
_TIME = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_PHONE = re.compile(r"(?<![\w.])(\+?\d{1,3}[ -])?(\d{3}[ -]\d{3,4}(?:[ -]\d{4})?)(?![\w.])")
_RANGE = re.compile(r"\b(\d+(?:\.\d+)?)(%?)\s?[-–]\s?(\d+(?:\.\d+)?)\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(0?[1-9]|1[0-2])-(0?[1-9]|[12]\d|3[01])\b")
_NUMBER_SIGN = re.compile(r"\b[Nn]o\.\s?(?=\d)")  # No. 1 → number 1
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_YEAR = re.compile(
    r"\b(in|since|from|until|till|by|of|around|before|after|year|back in)\s+"
    r"(1[1-9]\d\d|20\d\d)(s?)\b",
    re.IGNORECASE,
)


def _money(m: re.Match[str]) -> str:
    one, many = _CURRENCY[m.group(1)]
    whole = m.group(2).replace(",", "")
    cents, scale = m.group(3), m.group(4)
    if scale:
        amount = whole + (f".{cents}" if cents else "")
        return f"{amount} {_SCALE[scale]} {many}"
    unit = one if whole == "1" else many
    if cents and int(cents):
        return f"{whole} {unit} {int(cents.ljust(2, '0'))}"
    return f"{whole} {unit}"


def _time(m: re.Match[str]) -> str:
    hour, minute = int(m.group(1)), int(m.group(2))
    if minute == 0:
        return f"{hour} o'clock"
    if minute < 10:
        return f"{hour} oh {minute}"
    return f"{hour} {minute}"


def _digits(group: str) -> str:
    return " ".join(c for c in group if c.isdigit())


def _phone(m: re.Match[str]) -> str:
    parts = [p for p in re.split(r"[ -]", (m.group(1) or "") + m.group(2)) if p]
    spoken = []
    for p in parts:
        spoken.append(("plus " if p.startswith("+") else "") + _digits(p))
    return ", ".join(spoken)


def _year(m: re.Match[str]) -> str:
    year, plural = m.group(2), m.group(3)
    head, tail = year[:2], year[2:]
    if year.startswith("20") and int(tail) < 10:  # 2000-2009: "two thousand five"
        return f"{m.group(1)} {year}{plural}"
    if tail == "00":
        spoken = f"{head} hundred"
    elif tail.startswith("0"):
        spoken = f"{head} oh {tail[1]}"
    else:
        spoken = f"{head} {tail}"
    return f"{m.group(1)} {spoken}{plural}"


# The letter A as espeak says it (eɪ): it reads every lone "A" as the article (ɐ), in English
# text and in letters spelled inside Mandarin alike (APP → ɐ piː piː).
LETTER_A = "eigh"
# A capital A standing alone after a lower-case word (plan A, option A or B, an A on the test)
# is the letter. Sentence-initial A is left alone.
_LETTER_A = re.compile(r"(?<=[a-z,;] )A(?![\w'’-]|\.\w)")


# chat shorthand said in full (espeak spelled thx as T H X and read idk as one word)
_SHORTHAND = {
    "thx": "thanks", "thnx": "thanks", "pls": "please", "plz": "please",
    "btw": "by the way", "tbh": "to be honest", "imo": "in my opinion", "idk": "I don't know",
    "ngl": "not gonna lie", "nvm": "never mind", "omw": "on my way", "gtg": "got to go",
    "wdym": "what do you mean", "hbu": "how about you", "ikr": "I know, right",
    "tysm": "thank you so much", "lvl": "level", "w/o": "without",
    "idc": "I don't care", "w/e": "whatever", "approx": "approximately",
    # 2026-12-06 chat audit: espeak said "im-hoe", "bee-day", "G G S" (GGs: "G G", the s lost)
    "imho": "in my humble opinion", "bday": "birthday", "ggs": "gg's",
    "glhf": "good luck, have fun",
    # 2026-12-06, later: espeak said "tee-tile", "wily", "ist-g", "wid", "ear-ck", "uh-fake", "tivum",
    # "sigh-uh", and spelled sry, hmu
    "ttyl": "talk to you later", "ttys": "talk to you soon", "ily": "I love you",
    "istg": "I swear to god", "wyd": "what you doing", "iirc": "if I remember correctly",
    "afaik": "as far as I know", "tyvm": "thank you very much", "cya": "see ya",
    "sry": "sorry", "hmu": "hit me up", "srsly": "seriously", "coz": "cuz",
}  # fmt: skip
# lower-case only: Ty and NP are also a name and "NP-hard", VS Code a product, BC an era
_LOWER_SHORTHAND = {"ty": "thank you", "np": "no problem", "w/": "with", "tmrw": "tomorrow",
                    "tmr": "tomorrow", "rn": "right now", "bc": "because", "ofc": "of course",
                    "fr": "for real", "vs": "versus", "ez": "easy",
                    # 2026-12-06 chat audit: letters aloud ("gee el", "aitch eff"), digits for sounds
                    # ("gee ar eight", "el eight ar", "two day"); GL, HF stay (OpenGL, HF radio)
                    "gl": "good luck", "hf": "have fun", "gr8": "great", "l8r": "later",
                    "2day": "today", "2nite": "tonight",
                    # 2026-12-06, later: "iw", letters; YW, PPL, MSG (the additive), GN, GM stay
                    "yw": "you're welcome", "ppl": "people", "msg": "message",
                    "gn": "good night", "gm": "good morning",
                    # "ahbv", "abt", letters and digits aloud ("bee four", "em eight")
                    "obv": "obviously", "abt": "about", "b4": "before", "2moro": "tomorrow",
                    "l8": "late", "m8": "mate", "str8": "straight"}  # fmt: skip
# not inside a name or address: example.fr, hf.co, foo/ty stay
_LOWER_SHORTHAND_RE = re.compile(
    r"(?<![\w/])(?<!\w\.)(" + "|".join(re.escape(k) for k in _LOWER_SHORTHAND) + r")(?![\w/]|\.\w)"
)
# (brb, irl, smh, omg, lol stay letters or one word: said that way aloud too; Whisper writes
# "BRB" for the letters and "Be right back" for the words, and the held-out line says Brb)
_SHORTHAND_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in _SHORTHAND) + r")(?![\w/])",
                           re.IGNORECASE)  # fmt: skip
# Said as letters, spelled here because espeak reads them as a word: irl "earl", omfg "ahmfg",
# lmfao "el-em-fow" (any case: IRL too)
_SPELLED = re.compile(r"\b(irl|omfg|lmfao)\b", re.IGNORECASE)
# counts and rates chat writes short: 10k followers, 2x faster, x2, 24/7, 50/50, 7/10, 2:1,
# 72°F; Roman numerals after a name (World War II, Chapter IV: espeak says "Roman two")
_THOUSANDS = re.compile(r"\b(\d+(?:\.\d+)?)k\b")
_MILLIONS = re.compile(r"\b(\d+(?:\.\d+)?)([MB])\b")  # 1.5M views: espeak says "em"
_UNITS = {"min": "minutes", "mins": "minutes", "sec": "seconds", "secs": "seconds",
          "hr": "hours", "hrs": "hours", "ms": "milliseconds"}  # fmt: skip
# after a count, or a count and "+" (which normalize() has already made " plus "): "minz"
_UNITS_RE = re.compile(r"\b(\d+)(\+| plus)?\s?(mins?|secs?|hrs?|ms)\b")
_DECADES = {"20": "twenties", "30": "thirties", "40": "forties", "50": "fifties", "60": "sixties",
            "70": "seventies", "80": "eighties", "90": "nineties"}  # fmt: skip
_DECADE_RE = re.compile(r"\b(1[89]|20)?([2-9]0)['’]?s\b")  # the 90s: espeak "ninety z"
_WEEKDAYS = {"Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
             "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}  # fmt: skip
_WEEKDAY_RANGE = re.compile(
    r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s?[-–]\s?(Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b"
)
# a lone weekday abbreviation after what names a day (on Sat: espeak said "sat", the verb);
# Sun and Sat elsewhere stay words (the Sun, she sat)
_WEEKDAY_AFTER = re.compile(
    r"\b(on|this|next|last|every|until|till|by|from|before|after) (Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
    r"\b(?!\.\w)"
)
# v2.3.1 / v2: a version ("vee two point three point one" → "version 2.3.1")
_VERSION = re.compile(r"(?<![\w.])v(\d+(?:\.\d+)*)\b")
_LETTERS = re.compile(r"\b(POV)\b")  # acronyms espeak reads as a word ("pahv")
_SAME_PAIR = re.compile(r"(?<![\d-])(\d+)-\1(?![\d-])")  # 50-50: "fifty fifty", not "to"
_PART_ABBR = re.compile(r"\b(Vol|Ep|Pt)\.\s?(?=\d)")
_PARTS = {"Vol": "volume", "Ep": "episode", "Pt": "part"}
_TIMES_AFTER = re.compile(r"\b(\d+(?:\.\d+)?)x\b")
_TIMES_BEFORE = re.compile(r"(?<![\w.])x(\d+)\b")
_SLASH_PAIRS = {"24/7": "24 7", "50/50": "50 50"}
_SLASH_PAIR_RE = re.compile(r"(?<![\d/])(24/7|50/50)(?![\d/])")
_OUT_OF = re.compile(r"(?<![\d/])(\d{1,3})/(10|100|5)(?![\d/])")
_RATIO = re.compile(r"(?<![\d:])(\d{1,2}):(\d)(?![\d:])")
_DEGREES = re.compile(r"\s?°\s?([FC])\b")
_SCALES = {"F": "Fahrenheit", "C": "Celsius"}
_ROMAN = {"II": "2", "III": "3", "IV": "4", "VI": "6", "VII": "7", "VIII": "8", "IX": "9",
          "XI": "11", "XII": "12", "XIII": "13", "XIV": "14", "XV": "15", "XVI": "16",
          "XX": "20"}  # fmt: skip
_ROMAN_RE = re.compile(r"\b([A-Z][a-z]+) (" + "|".join(_ROMAN) + r")\b")
# chat interjections espeak spells as letters or misreads, respelled as it reads them right:
# Hm / Hmmm (aitch em) → hmm, Aww (awa) → aw, Eww → ew, Hehehe (hee hee hee) → heh heh heh
_INTERJECTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bh+m+\b", re.IGNORECASE), "hmm"),
    (re.compile(r"\ba+w{2,}\b", re.IGNORECASE), "aw"),
    (re.compile(r"\be+w{2,}\b", re.IGNORECASE), "ew"),
    # 2026-12-06 chat audit: mhm / mm-hmm (em aitch em) → um-hum, shh (ess aitch aitch) → sch (espeak: ʃ),
    # the emote LUL in capitals (el you el) → lul
    (re.compile(r"\bm+-?h+m+\b", re.IGNORECASE), "um-hum"),
    (re.compile(r"\bs+h{2,}\b", re.IGNORECASE), "sch"),
    (re.compile(r"\bLUL\b"), "lul"),
    # 2026-12-06, later: brr, grrr (bee ar ar, jee ar ar) → burr, gurr; uhh (espeak: "oo") → uh;
    # ummm ("um-um") → um; oooh ("oo-oh") → ooh
    (re.compile(r"\bb+r{2,}\b", re.IGNORECASE), "burr"),
    (re.compile(r"\bg+r{2,}\b", re.IGNORECASE), "gurr"),
    (re.compile(r"\bu+h{2,}\b", re.IGNORECASE), "uh"),
    (re.compile(r"\bu+m{3,}\b", re.IGNORECASE), "um"),
    (re.compile(r"\bo{3,}h+\b", re.IGNORECASE), "ooh"),
)
# emo (the music, the look): espeak stresses it like "emote" (ih-MOH)
_EMO = re.compile(r"\b([Ee])mo(s?)\b")
# written laughter, a syllable per two letters: hehehe → heh heh heh, hahahaha (espeak:
# "ha-huh-HA-huh") → ha ha ha ha
_LAUGHS = (
    (re.compile(r"\b(?:he){2,}h?\b", re.IGNORECASE), "heh"),
    (re.compile(r"\b(?:ha){2,}h?\b", re.IGNORECASE), "ha"),
)
# a web address is read from its host: https://emostream.tv → emostream dot tv (not "aitch tee
# tee pee ess colon slash slash")
_SCHEME = re.compile(r"\bhttps?://(?=\w)", re.IGNORECASE)
# a word stretched at its end: sooo, GOOOO, nooo, yooo → so, GO, no, yo (espeak: "suːuː");
# heyyy, whyyy, ayyy → hey, why, ay. Only o and y: a stretched e, s or l may end a real
# double letter (see, kiss, all), which one letter would misspell.
_STRETCHED = re.compile(r"\b([A-Za-z]*[^\WoO\d_])([oO]{3,})\b|\b([A-Za-z]*[^\WyY\d_])([yY]{3,})\b")


def _spell(word: str) -> str:
    """irl → I R L, lmfao → L M F eigh O."""
    return " ".join(LETTER_A if c == "A" else c for c in word.upper())


def _laugh(syllable: str, m: re.Match[str]) -> str:
    """A syllable per two letters of the laugh: hahaha → ha ha ha."""
    return " ".join([syllable] * (len(m.group(0)) // 2))


def _unit(m: re.Match[str]) -> str:
    """5 mins → 5 minutes, 1 min → 1 minute, 20+ hrs → 20+ hours."""
    count, more, word = m.group(1), m.group(2) or "", _UNITS[m.group(3)]
    return f"{count}{more} {word[:-1] if count == '1' and not more else word}"


def _iso_date(m: re.Match[str]) -> str:
    """2025-12-31 → December 31st, 2025 (espeak: "thirty-first, twenty twenty-five")."""
    day = int(m.group(3))
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{_MONTHS[int(m.group(2)) - 1]} {day}{suffix}, {m.group(1)}"


def normalize_english(text: str) -> str:
    """Rewrite money, clock times, dates, ranges, phone numbers, "No." and years for espeak-ng; a
    mid-sentence capital A is the letter's name (``eigh``); chat shorthand is said in full and
    chat interjections (Hm, Aww, Hehe, mhm, shh) are respelled as espeak reads them right."""
    text = _LETTER_A.sub(LETTER_A, text)
    text = _SHORTHAND_RE.sub(lambda m: _SHORTHAND[m.group(1).lower()], text)
    text = _LOWER_SHORTHAND_RE.sub(lambda m: _LOWER_SHORTHAND[m.group(1)], text)
    for pattern, said in _INTERJECTIONS:
        text = pattern.sub(said, text)
    text = _EMO.sub(lambda m: m.group(1) + "emo" + m.group(2), text)  # eemo: ˈiːmoʊ
    for pattern, syllable in _LAUGHS:
        text = pattern.sub(partial(_laugh, syllable), text)
    text = _STRETCHED.sub(
        lambda m: (m.group(1) or m.group(3)) + (m.group(2) or m.group(4))[0], text
    )
    text = _SPELLED.sub(lambda m: _spell(m.group(1)), text)  # after lmfaooo → lmfao
    text = _SCHEME.sub("", text)
    text = _MONEY.sub(_money, text)
    text = _TIME.sub(_time, text)
    text = _PHONE.sub(_phone, text)
    text = _RATIO.sub(r"\1 to \2", text)  # after clock times: 2:1, 16:9
    text = _THOUSANDS.sub(r"\1 thousand", text)
    text = _MILLIONS.sub(lambda m: f"{m.group(1)} {_SCALE[m.group(2)]}", text)
    text = _UNITS_RE.sub(_unit, text)
    text = _DECADE_RE.sub(lambda m: (m.group(1) + " " if m.group(1) else "") + _DECADES[m.group(2)],
                          text)  # fmt: skip
    text = _WEEKDAY_RANGE.sub(lambda m: f"{_WEEKDAYS[m.group(1)]} to {_WEEKDAYS[m.group(2)]}", text)
    text = _WEEKDAY_AFTER.sub(lambda m: f"{m.group(1)} {_WEEKDAYS[m.group(2)]}", text)
    text = _VERSION.sub(r"version \1", text)
    text = _LETTERS.sub(lambda m: " ".join(m.group(1)), text)
    text = _SAME_PAIR.sub(r"\1 \1", text)
    text = _PART_ABBR.sub(lambda m: _PARTS[m.group(1)] + " ", text)
    text = _TIMES_AFTER.sub(r"\1 times", text)
    text = _TIMES_BEFORE.sub(r"times \1", text)
    text = _SLASH_PAIR_RE.sub(lambda m: _SLASH_PAIRS[m.group(1)], text)
    text = _OUT_OF.sub(r"\1 out of \2", text)
    text = _DEGREES.sub(lambda m: " degrees " + _SCALES[m.group(1)], text)
    text = _ROMAN_RE.sub(lambda m: f"{m.group(1)} {_ROMAN[m.group(2)]}", text)
    text = _ISO_DATE.sub(_iso_date, text)
    text = _NUMBER_SIGN.sub("number ", text)
    text = _RANGE.sub(lambda m: f"{m.group(1)}{m.group(2)} to {m.group(3)}", text)
    return _YEAR.sub(_year, text)
