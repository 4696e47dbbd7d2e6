"""Pronunciation dictionaries: entries word → pronunciation, checked, and their matcher.

A dictionary (``POST /v1/pronunciation-dictionaries``; stored with the cloned voices) is a
name and up to :data:`MAX_ENTRIES` entries, each a ``word`` and one of ``pinyin`` (a word of
hanzi), ``ipa`` or ``respelling`` (an English word), checked as an inline override is
(:mod:`emostream.text.pron.spec`). A ``start`` names up to :data:`MAX_PER_START` of them; a
word found in the text is then spoken as its entry says, as if written ``{word|...}``.

Matching (:class:`Lexicon`): an English word matches as a whole word, in any case (``Nguyen``
matches ``NGUYEN`` and ``Nguyen's``, not ``Nguyenville``); a word of hanzi wherever it stands
(Mandarin has no spaces). The longest word at a place wins; of two dictionaries with the same
word, the one named first. :class:`LexiconMatcher` reads text as it streams in: a stretch that
may still grow into a word of the dictionary (``Ngu`` before ``yen``) is held until the next
piece decides.
"""

from __future__ import annotations

import bisect
import json
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from emostream.text.pron.inline import Override, Plain
from emostream.text.pron.spec import (
    KINDS,
    PronunciationError,
    Pron,
    is_han_word,
    make_pron,
)
from emostream.text.pron.wire import Pin

MAX_ENTRIES = 1000  # per dictionary
MAX_NAME_CHARS = 100
MAX_PER_START = 3  # dictionaries one start (or speech request) may name
MAX_PER_OWNER = 100  # dictionaries one API key may keep
ID_PREFIX = "pdict_"
LANGUAGES = {"pinyin": "zh", "ipa": "en", "respelling": "en"}


class EntryError(ValueError):
    """A dictionary refused: ``param`` names the field at fault (``entries[3].pinyin``)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


@dataclass(frozen=True)
class Entry:
    word: str
    pron: Pron

    def as_dict(self) -> dict[str, str]:
        return {"word": self.word, self.pron.kind: self.pron.written,
                "language": self.pron.language}  # fmt: skip


def fold(word: str) -> str:
    """The form a word is matched by: English in lower case (where that keeps its length),
    hanzi as written."""
    lower = word.lower()
    return lower if len(lower) == len(word) else word


def parse_entries(raw: Any) -> tuple[Entry, ...]:
    """A request's ``entries`` (a list of ``{"word", one of "pinyin" / "ipa" / "respelling",
    optional "language"}``), checked; raises :class:`EntryError` naming the first bad one."""
    if not isinstance(raw, list):
        raise EntryError("entries", "'entries' must be a list of {word, pinyin|ipa|respelling}")
    if len(raw) > MAX_ENTRIES:
        raise EntryError("entries", f"at most {MAX_ENTRIES} entries per dictionary "
                                    f"({len(raw)} given)")  # fmt: skip
    out: list[Entry] = []
    seen: dict[str, int] = {}
    for k, item in enumerate(raw):
        at = f"entries[{k}]"
        if not isinstance(item, dict):
            raise EntryError(at, f"{at} must be an object")
        unknown = set(item) - {"word", "language", *KINDS}
        if unknown:
            raise EntryError(at, f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        word = item.get("word")
        if not isinstance(word, str):
            raise EntryError(f"{at}.word", f"{at}.word must be a string")
        kinds = [kind for kind in KINDS if item.get(kind) is not None]
        if len(kinds) != 1:
            raise EntryError(at, f"{at} ({word[:80]!r}) needs exactly one of "
                                 f"{', '.join(KINDS)}")  # fmt: skip
        kind = kinds[0]
        text = item[kind]
        if not isinstance(text, str):
            raise EntryError(f"{at}.{kind}", f"{at}.{kind} must be a string")
        if kind == "ipa" and not text.strip().startswith("/"):
            text = f"/{text.strip()}/"  # the slashes are optional here
        try:
            pron = make_pron(kind, word, text)
        except PronunciationError as exc:
            raise EntryError(f"{at}.{kind}", f"{at} ({word[:80]!r}: {text[:80]!r}): "
                                             f"{exc.reason}") from None  # fmt: skip
        language = item.get("language")
        if language is not None and language != pron.language:
            raise EntryError(f"{at}.language", f"{at}: a {kind} entry is language "
                                               f"{pron.language!r}, not {language!r}")  # fmt: skip
        key = fold(word)
        if key in seen:
            raise EntryError(f"{at}.word", f"{at}: the word {word!r} is also entries"
                                           f"[{seen[key]}]")  # fmt: skip
        seen[key] = k
        out.append(Entry(word, pron))
    return tuple(out)


def clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise EntryError("name", "'name' must be a non-empty string")
    cleaned = " ".join(name.split())
    if len(cleaned) > MAX_NAME_CHARS:
        raise EntryError("name", f"'name' is over {MAX_NAME_CHARS} characters")
    return cleaned


def new_dictionary_id() -> str:
    return ID_PREFIX + secrets.token_hex(8)


@dataclass(frozen=True)
class PronunciationDictionary:
    """A stored dictionary: ``owner`` is the API-key principal that made it (None: auth off)."""

    id: str
    name: str
    entries: tuple[Entry, ...]
    owner: str | None = None
    created: float = field(default_factory=time.time)
    updated: float = 0.0

    @classmethod
    def new(cls, name: str, entries: tuple[Entry, ...], owner: str | None) -> PronunciationDictionary:
        now = time.time()
        return cls(new_dictionary_id(), name, entries, owner, now, now)

    def as_dict(self, *, entries: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "name": self.name, "created": self.created, "updated": self.updated,
            "entry_count": len(self.entries),
        }  # fmt: skip
        if entries:
            out["entries"] = [e.as_dict() for e in self.entries]
        return out

    def entries_json(self) -> str:
        """The entries as stored: ``[[word, kind, value], ...]`` (values already checked)."""
        return json.dumps([[e.word, e.pron.kind, e.pron.value] for e in self.entries],
                          ensure_ascii=False)  # fmt: skip


def entries_from_json(text: str) -> tuple[Entry, ...]:
    """The inverse of :meth:`PronunciationDictionary.entries_json` (checked when written)."""
    return tuple(Entry(w, Pron(k, v)) for w, k, v in json.loads(text))


# -- matching ----------------------------------------------------------------------------
class Lexicon:
    """The entries of dictionaries, in the order named (the first of a word wins)."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._by_key: dict[str, Entry] = {}
        for entry in entries:
            self._by_key.setdefault(fold(entry.word), entry)
        self._sorted = sorted(self._by_key)
        self._lengths = sorted({len(k) for k in self._by_key}, reverse=True)
        self.longest = self._lengths[0] if self._lengths else 0
        self._firsts = frozenset(k[0] for k in self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    @property
    def entries(self) -> list[Entry]:
        return list(self._by_key.values())

    def _grows(self, rest: str) -> bool:
        """Some word is longer than ``rest`` and starts with it."""
        i = bisect.bisect_right(self._sorted, rest)
        return i < len(self._sorted) and self._sorted[i].startswith(rest)

    def match(self, text: str, i: int, before: str, *, final: bool) -> tuple[int, Entry] | None | bool:
        """The longest word at ``text[i:]`` (``before``: the character before ``text``):
        ``(length, entry)``, None for none, True when the text so far does not decide."""
        ch = fold(text[i])
        if ch not in self._firsts:
            return None
        han = is_han_word(text[i])
        prev = text[i - 1] if i else before
        if not han and prev.isalnum():
            return None  # inside a word
        rest = fold(text[i : i + self.longest])
        reaches_end = i + len(rest) >= len(text)
        for n in self._lengths:
            if n > len(rest):
                continue
            entry = self._by_key.get(rest[:n])
            if entry is None or is_han_word(entry.word) != han:
                continue
            end = i + n
            if han:
                if not final and end >= len(text) and self._grows(rest):
                    return True  # a longer word may still come
                return n, entry
            if end >= len(text):
                if not final:
                    return True  # the word may go on
                return n, entry
            if not text[end].isalnum():
                return n, entry
        if not final and reaches_end and self._grows(rest):
            return True
        return None


class LexiconMatcher:
    """Dictionary words in text streaming in: :meth:`feed` plain text, :meth:`release` at a
    barrier (an override, an escape, a flush or the end)."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self._held = ""
        self._before = ""  # the last character released

    def feed(self, text: str) -> list[Plain | Override]:
        return self._scan(self._held + text, final=False)

    def release(self) -> list[Plain | Override]:
        if not self._held:
            return []
        return self._scan(self._held, final=True)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def passed(self, text: str) -> None:
        """``text`` went by outside the matcher (an override, an escape)."""
        if text:
            self._before = text[-1]

    def _scan(self, buf: str, *, final: bool) -> list[Plain | Override]:
        self._held = ""
        out: list[Plain | Override] = []
        start = i = 0
        while i < len(buf):
            found = self.lexicon.match(buf, i, self._before if i == 0 else "", final=final)
            if found is True:
                self._held = buf[i:]
                break
            if found is None or found is False:
                i += 1
                continue
            n, entry = found
            if i > start:
                out.append(Plain(buf[start:i], buf[start:i]))
            word = buf[i : i + n]
            out.append(Override(word, Pin(word, entry.pron)))
            i = start = i + n
        tail = buf[start : len(buf) - len(self._held)]
        if tail:
            out.append(Plain(tail, tail))
        released = buf[: len(buf) - len(self._held)]
        if released:
            self._before = released[-1]
        return out


def merged(dictionaries: Sequence[PronunciationDictionary]) -> Lexicon:
    return Lexicon(e for d in dictionaries for e in d.entries)
