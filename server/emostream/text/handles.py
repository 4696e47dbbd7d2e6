"""Live-chat handles read the way a streamer says them (2026-12-06 handles audit).

Streamers read usernames aloud all the time: "thanks @nightowl99 for the sub", "xXSniperXx
just raided", "welcome CoolGuy2000". espeak-ng already parts CamelCase and trailing digits by
itself (CoolGuy2000: "cool guy two thousand"; Pixel_Queen is "Pixel Queen" once
:func:`~emostream.text.normalize.normalize` has made the underscore a space), so this module
only rewrites what it reads badly:

* the @ of a mention is not read: ``@nightowl99`` was "at nightowl99". An @ inside an address
  (``bob@example.com``), after a slash (``youtube.com/@name``), before a digit or a space
  (``@5pm``, ``@ 5``) keeps its "at", and so does ``@gmail.com`` (it ends in a web domain);
* dots inside a mention part it like underscores (``@mira.plays`` → ``mira plays``);
* the xX…Xx decoration round a handle is dropped (``xXSniperXx`` → ``Sniper``: espeak said
  "ex ex sniper ex-ex");
* a four-digit run from 1900 to 2099 is read as a year (``KnightRider1982``: "19 82", not
  "nineteen hundred eighty two"), except 2000-2009 ("two thousand five");
* a joined run of letters that is no English word is split into words of the lexicon, by a
  min-cost split (``nightowl`` → ``night owl``: espeak said "nigh-tole"). Only words of three
  letters or more (and "I" and "my" at the start) may be parts; the split takes the fewest
  parts, then the commoner (gold) words, then the longest. A channel suffix tv/ttv/yt at the
  end is spelled (``emostreamtv`` → ``emo stream TV``). A run that is a word (any case: names
  and brands in the lexicon too) or that cannot be split stays as written.

A token without its @ counts as a handle only when it looks like one: an underscore, letters
followed by digits (``nightowl99``), or the decoration. A lone joined word (``nightowl``) and
anything inside a web address, an e-mail address or a file name (``twitch.tv/cool_guy``,
``night_owl@mail.com``, ``my_file.py``) is left alone. The word list is misaki's American English
lexicon (``misaki/data/us_gold.json`` and ``us_silver.json``, shipped in the misaki wheel, which
the Mandarin front end already requires), loaded when the server starts (:func:`warm`).

In a Mandarin line only mentions are rewritten (:func:`say_mentions`: ``感谢@nightowl99的关注``
→ ``感谢 night owl 九九 的关注``, an ID's digits one by one in Mandarin; ``@小明123`` → ``小明一二三``);
the rest is the Mandarin front end's.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from itertools import pairwise

log = logging.getLogger(__name__)

# a mention: @ then a letter or _, dots allowed between word characters
_MENTION = re.compile(r"(?<![\w@/.])@([^\W\d]\w*(?:\.\w+)*)(?![\w@])")
# in a Mandarin line a mention's own characters are ASCII (感谢@nightowl99的关注: \w would
# take the hanzi before it as part of a word)
_MENTION_ASCII = re.compile(r"(?<![A-Za-z0-9_@/.])@([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)"
                            r"(?![A-Za-z0-9_@])")  # fmt: skip
# a hanzi name with digits after it (谢谢@小明123的礼物): the digits are the handle's, unless a
# unit or a measure word follows them (@主播说了15次: a count, the Mandarin front end's)
_MENTION_HAN_DIGITS = re.compile(
    r"(?<![A-Za-z0-9_@/.])@([\u4e00-\u9fff]{1,12})(\d+)(?![\d.%]|[次个块元岁年月日号点分秒万千百亿])"
)
_DIGIT_RUN = re.compile(r"\d+")
# a bare token that may be a handle (an underscore, a digit or an x in it): not part of an
# address, a path or a file name
_TOKEN = re.compile(r"(?<![\w@/.#:-])(?=\w*[_\dxX])\w+(?![\w@/]|[.:-]\w)")
_HANDLE_SHAPE = re.compile(r"_|[^\W\d_]{3}\d")
_DOMAINS = frozenset(("com", "net", "org", "tv", "gg", "io", "co", "uk", "me", "app", "dev",
                      "edu", "gov", "info", "live", "xyz", "ly", "de", "fr", "jp", "ca",
                      "us"))  # fmt: skip
# xXSniperXx, xX_Sniper_Xx, xXx_Dragon_xXx: an x run of both cases (or one ending in _) at
# both ends
_DECORATION = re.compile(
    r"(?:[xX]*(?:xX|Xx)[xX]*_*|[xX]+_+)(?P<core>\w*?[^\W_]\w*?[^\W_]\w*?)"
    r"(?:_*[xX]*(?:xX|Xx)[xX]*|_+[xX]+)"
)
# the runs espeak reads apart: Cool|Guy|2000, The|Real|MVP
_RUNS = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]|\d+|[^\W\d_]+")
_SHORT_FIRST = frozenset(("i", "my"))  # parts under three letters, only at the start
_SHORT_LAST = frozenset(("tv", "ttv", "yt"))  # a channel suffix, spelled: emostreamtv
_MIN_PART = 3
_MAX_PARTS = 4


@lru_cache(maxsize=1)
def _lexicon() -> tuple[frozenset[str], dict[str, int]]:
    """(every headword in lower case, the words a split may use: lower-case gold words cost 0,
    silver ones of four letters or more, plurals and lower-cased names among them, cost 1).
    Empty when misaki's data is missing: then nothing is split."""
    from importlib import resources  # on first use: importing it costs a few ms

    known: set[str] = set()
    parts: dict[str, int] = {}
    try:
        data = resources.files("misaki.data")
        for cost, name in enumerate(("us_gold.json", "us_silver.json")):
            words: dict[str, object] = json.loads(data.joinpath(name).read_text("utf-8"))
            known.update(w if w.islower() else w.lower() for w in words)  # one str each
            for w in words:
                if w.isalpha() and w.islower() and (cost == 0 or len(w) > _MIN_PART):
                    parts.setdefault(w, cost)
    except (ModuleNotFoundError, OSError, ValueError) as exc:
        log.warning("no English lexicon for splitting handles (%s)", exc)
        return frozenset(), {}
    return frozenset(known), parts


def warm() -> None:
    """Load the word list now (~0.15 s), not in the first line that names a handle."""
    _lexicon()


def split_joined(run: str) -> str:
    """``nightowl`` → ``night owl``; a word or a run with no clean split comes back as is."""
    if len(run) < 2 * _MIN_PART or not run.isalpha() or run.isupper():
        return run
    known, parts = _lexicon()
    lower = run.lower()
    if not parts or lower in known:
        return run
    n = len(lower)
    # best[i]: (parts, silver parts, -sum of squared lengths) of the cheapest split of lower[:i]
    best: list[tuple[int, int, int] | None] = [(0, 0, 0)] + [None] * n
    back = [0] * (n + 1)
    for end in range(1, n + 1):
        for start in range(max(0, end - 24), end):  # no part is longer
            prev = best[start]
            piece = lower[start:end]
            if prev is None:
                continue
            if start and end == n and piece in _SHORT_LAST:
                rank = 0
            elif piece not in parts or (
                len(piece) < _MIN_PART and not (start == 0 and piece in _SHORT_FIRST)
            ):
                continue
            else:
                rank = parts[piece]
            cost = (prev[0] + 1, prev[1] + rank, prev[2] - len(piece) ** 2)
            held = best[end]
            if held is None or cost < held:
                best[end], back[end] = cost, start
    found = best[n]
    if found is None or not 2 <= found[0] <= _MAX_PARTS:
        return run
    cuts, end = [], n
    while end:
        cuts.append(back[end])
        end = back[end]
    bounds = sorted(cuts) + [n]
    if bounds[1] < _MIN_PART and found[0] == 2 and found[1]:
        return run  # "i" + one rarer word: itachi is no "i tachi"
    said = [run[a:b] for a, b in pairwise(bounds)]
    if said[-1].lower() in _SHORT_LAST:
        said[-1] = said[-1].upper()
    return " ".join(said)


def _say_digits(run: str) -> str:
    """A year-like run as a year: KnightRider1982 → 19 82 (espeak: "nineteen hundred eighty
    two"), 1905 → 19 oh 5, 2012 → 20 12; 2000-2009 and other numbers stay (two thousand)."""
    if len(run) != 4 or not ("1900" <= run <= "1999" or "2010" <= run <= "2099"):
        return run
    if run.endswith("00"):
        return f"{run[:2]} hundred"
    return f"{run[:2]} oh {run[3]}" if run[2] == "0" else f"{run[:2]} {run[2:]}"


def say_handle(handle: str) -> str:
    """A handle as words: ``xXSniperXx`` → ``Sniper``, ``nightowl99`` → ``night owl 99``,
    ``Pixel_Queen`` → ``Pixel Queen``; ``CoolGuy2000`` (espeak parts it right) stays."""
    decorated = _DECORATION.fullmatch(handle)
    core = decorated.group("core") if decorated else handle
    pieces = []
    for piece in re.split(r"[_.]+", core):
        runs = _RUNS.findall(piece)
        said = [_say_digits(r) if r.isdigit() else split_joined(r) for r in runs]
        pieces.append(" ".join(said) if said != runs and "".join(runs) == piece else piece)
    return " ".join(p for p in pieces if p)


def _mention(m: re.Match[str]) -> str:
    handle = m.group(1)
    if "." in handle and handle.rsplit(".", 1)[1].lower() in _DOMAINS:
        return m.group(0)  # @gmail.com: an address, "at gmail dot com"
    return say_handle(handle)


def _token(m: re.Match[str]) -> str:
    token = m.group(0)
    if _HANDLE_SHAPE.search(token) or _DECORATION.fullmatch(token):
        return say_handle(token)
    return token


def say_handles(text: str) -> str:
    """Mentions and handle-shaped tokens of an English line as words (see the module)."""
    if "@" in text:
        text = _MENTION.sub(_mention, text)
    return _TOKEN.sub(_token, text)


def _id_digits(said: str) -> str:
    """A handle's digits as a Mandarin speaker reads an ID, one by one (99 → 九九, 2000 → 二零零零;
    1 stays yī: :data:`emostream.text.zh.prepare.FROZEN_YI`)."""
    from emostream.text.zh.prepare import digits

    return _DIGIT_RUN.sub(lambda m: digits(m.group(0)), said)


def say_mentions(text: str) -> str:
    """The mentions of a Mandarin line: an ASCII one as words, set apart by spaces, its digits
    said one by one in Mandarin (``感谢@nightowl99的关注`` → ``感谢 night owl 九九 的关注``); a hanzi
    name's trailing digits too (``@小明123的`` → ``小明一二三的``: the name itself is the Mandarin
    front end's). The rest of the line as is."""
    if "@" not in text:
        return text

    def said(m: re.Match[str]) -> str:
        before = " " if m.start() and not text[m.start() - 1].isspace() else ""
        after = " " if m.end() < len(text) and not text[m.end()].isspace() else ""
        handle = _mention(m)
        return f"{before}{handle if handle == m.group(0) else _id_digits(handle)}{after}"

    text = _MENTION_ASCII.sub(said, text)
    return _MENTION_HAN_DIGITS.sub(lambda m: m.group(1) + _id_digits(m.group(2)), text)
