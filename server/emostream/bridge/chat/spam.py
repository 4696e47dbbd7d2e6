"""The chat policy's memories (sans-I/O: every call takes ``now``, seconds on any clock).

* :class:`UserRate`: at most ``lines`` per user within ``window_s`` (a sliding window).
* :class:`Duplicates`: a line the same as, or nearly the same as, one seen within
  ``window_s`` (from anyone): "666666" and "6666666666", "hi!!!" and "HI", "lol lol lol" and
  "lol lol".
* :class:`SeenIds`: message ids already taken, so that a message a platform sends again (after
  a reconnect) is not spoken twice.

Each is bounded in memory whatever the chat does.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import OrderedDict, deque

MAX_USERS = 50_000  # users remembered by the rate limit (the least recent are forgotten)
MAX_RECENT = 200  # lines kept for the near-duplicate comparison
MAX_IDS = 50_000

_WORD = re.compile(r"\w+", re.UNICODE)
_RUN = re.compile(r"(.)\1{2,}", re.DOTALL)  # a character three or more times


def normalise(text: str) -> str:
    """What two lines that say the same thing share: case, width, punctuation, spacing and
    a character held down ("66666", "hahaaaa") do not count, nor a word said again and again."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(folded)
    out: list[str] = []
    for w in words:
        w = _RUN.sub(r"\1\1", w)
        if not out or out[-1] != w:  # "lol lol lol" → "lol"
            out.append(w)
    joined = " ".join(out)
    return _collapse_repeats(joined)


def _collapse_repeats(s: str) -> str:
    """A string that is one piece said over and over ("哈哈哈哈", "abab abab") → the piece."""
    compact = s.replace(" ", "")
    n = len(compact)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and compact[:size] * (n // size) == compact:
            return compact[:size]
    return s


class UserRate:
    def __init__(self, *, lines: int, window_s: float) -> None:
        self.lines = lines
        self.window_s = window_s
        self._times: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, who: str, now: float) -> bool:
        """Whether ``who`` may have one more line now; if so, it is counted."""
        if self.lines <= 0:
            return True
        times = self._times.pop(who, None) or deque()
        while times and now - times[0] >= self.window_s:
            times.popleft()
        allowed = len(times) < self.lines
        if allowed:
            times.append(now)
        if times:
            self._times[who] = times  # most recent last
        while len(self._times) > MAX_USERS:
            self._times.popitem(last=False)
        return allowed

    def wait_s(self, who: str, now: float) -> float:
        """How long until ``who`` may speak again (0: now)."""
        times = self._times.get(who)
        if not times or len(times) < self.lines:
            return 0.0
        return max(0.0, times[0] + self.window_s - now)


class Duplicates:
    def __init__(self, *, window_s: float, similarity: float) -> None:
        self.window_s = window_s
        self.similarity = similarity
        self._recent: deque[tuple[float, str]] = deque()

    def check(self, text: str, now: float) -> str | None:
        """``None`` if ``text`` is new (it is remembered), else the earlier line it repeats
        (normalised)."""
        if self.window_s <= 0:
            return None
        while self._recent and now - self._recent[0][0] >= self.window_s:
            self._recent.popleft()
        key = normalise(text)
        if not key:
            return None  # nothing to compare (only symbols or emoji)
        for _, seen in self._recent:
            if seen == key or (self.similarity < 1.0 and _alike(seen, key, self.similarity)):
                return seen
        self._recent.append((now, key))
        while len(self._recent) > MAX_RECENT:
            self._recent.popleft()
        return None


def _alike(a: str, b: str, threshold: float) -> bool:
    # Cheap bounds first: the ratio is at most 2*min/(len a + len b).
    if 2.0 * min(len(a), len(b)) / (len(a) + len(b)) < threshold:
        return False
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return m.quick_ratio() >= threshold and m.ratio() >= threshold


class SeenIds:
    def __init__(self, limit: int = MAX_IDS) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, msg_id: str) -> bool:
        """True the first time ``msg_id`` is seen (it is remembered), False after."""
        if msg_id in self._ids:
            self._ids.move_to_end(msg_id)
            return False
        self._ids[msg_id] = None
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)
        return True

    def __contains__(self, msg_id: object) -> bool:
        return msg_id in self._ids
