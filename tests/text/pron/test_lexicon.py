"""Dictionaries: entries checked on write with the bad one named; words matched whole (English,
any case) or wherever they stand (hanzi), longest first, the first dictionary's first; a word
still arriving token by token is held until it is decided."""

from __future__ import annotations

import pytest

from emostream.text.pron.inline import Override, Plain
from emostream.text.pron.lexicon import (
    MAX_ENTRIES,
    EntryError,
    Lexicon,
    LexiconMatcher,
    PronunciationDictionary,
    clean_name,
    entries_from_json,
    merged,
    parse_entries,
)
from emostream.text.pron.spec import IPA, PINYIN, RESPELLING, Pron

ENTRIES = [
    {"word": "Nguyen", "ipa": "wɪn"},
    {"word": "行长", "pinyin": "hang2 zhang3", "language": "zh"},
    {"word": "行", "pinyin": "xing2"},
    {"word": "Siobhan", "respelling": "shiv awn"},
    {"word": "New York", "respelling": "noo york"},
]


def lexicon() -> Lexicon:
    return Lexicon(parse_entries(ENTRIES))


def test_entries_are_checked_and_shown_back() -> None:
    entries = parse_entries(ENTRIES)
    assert entries[0].pron == Pron(IPA, "wˈɪn")  # the slashes are optional in a dictionary
    assert entries[1].pron == Pron(PINYIN, "hang2 zhang3")
    assert entries[3].pron == Pron(RESPELLING, "shiv awn")
    assert entries[0].as_dict() == {"word": "Nguyen", "ipa": "/wˈɪn/", "language": "en"}
    d = PronunciationDictionary.new("names", entries, "alice")
    assert entries_from_json(d.entries_json()) == entries
    assert d.as_dict()["entry_count"] == 5 and d.id.startswith("pdict_")


@pytest.mark.parametrize(
    ("entries", "param", "says"),
    [
        ({"word": "x"}, "entries", "must be a list"),
        ([{"word": "行", "pinyin": "hang7"}], "entries[0].pinyin", "tone 7 of 'hang7'"),
        ([{"word": "a", "ipa": "ʀ"}], "entries[0].ipa", "'ʀ' (U+0280"),
        ([{"word": "ok", "respelling": "fine"}, {"word": "行", "pinyin": "hang"}],
         "entries[1].pinyin", "entries[1] ('行': 'hang'): 'hang' has no tone"),
        ([{"word": "a", "ipa": "/a/", "pinyin": "a1"}], "entries[0]", "exactly one of"),
        ([{"word": "a", "ipa": "/a/", "lang": "en"}], "entries[0]", "unknown field(s) lang"),
        ([{"word": "行", "pinyin": "hang2", "language": "en"}], "entries[0].language",
         "language 'zh'"),
        ([{"word": "Nguyen", "ipa": "/a/"}, {"word": "NGUYEN", "ipa": "/b/"}],
         "entries[1].word", "also entries[0]"),
        ([{"word": 3, "ipa": "/a/"}], "entries[0].word", "must be a string"),
        ([{"word": "a", "ipa": 3}], "entries[0].ipa", "must be a string"),
        ([{"word": "a", "respelling": "b"}] * (MAX_ENTRIES + 1), "entries", "at most 1000"),
    ],
)
def test_bad_entries_are_named(entries: object, param: str, says: str) -> None:
    with pytest.raises(EntryError) as caught:
        parse_entries(entries)
    assert caught.value.param == param
    assert says in caught.value.message


def test_names() -> None:
    assert clean_name("  my   names ") == "my names"
    for bad in ("", "   ", 3, "x" * 101):
        with pytest.raises(EntryError):
            clean_name(bad)


def scan(lex: Lexicon, *pieces: str) -> list[Plain | Override]:
    matcher = LexiconMatcher(lex)
    out: list[Plain | Override] = []
    for piece in pieces:
        out += matcher.feed(piece)
    out += matcher.release()
    joined: list[Plain | Override] = []
    for p in out:
        if joined and isinstance(p, Plain) and isinstance(joined[-1], Plain):
            p = Plain(joined[-1].raw + p.raw, joined[-1].text + p.text)
            joined.pop()
        joined.append(p)
    return joined


def words(out: list[Plain | Override]) -> list[str]:
    return [p.pin.display for p in out if isinstance(p, Override)]


TEXT = "NGUYEN met Nguyen's friend Nguyenville in New York. 银行行长说行。"


def test_matching() -> None:
    out = scan(lexicon(), TEXT)
    # whole English words in any case (Nguyenville is another word); the longest hanzi word
    assert words(out) == ["NGUYEN", "Nguyen", "New York", "行", "行长", "行"]
    assert "".join(p.raw for p in out) == TEXT
    nguyen = next(p for p in out if isinstance(p, Override))
    assert nguyen.pin.pron == Pron(IPA, "wˈɪn")


@pytest.mark.parametrize("cut", range(1, len(TEXT)))
def test_token_by_token_matches_the_same(cut: int) -> None:
    assert scan(lexicon(), TEXT[:cut], TEXT[cut:]) == scan(lexicon(), TEXT)


def test_a_word_still_arriving_is_held() -> None:
    matcher = LexiconMatcher(lexicon())
    assert matcher.feed("Hi Ngu") == [Plain("Hi ", "Hi ")]
    assert matcher.holding
    assert matcher.feed("yen") == []  # "Nguyens" would be another word
    out = matcher.feed(" there")
    assert [type(p) for p in out] == [Override, Plain]
    assert matcher.feed("Hello") == [Plain("Hello", "Hello")]  # no word starts so: not held


def test_the_first_dictionary_wins() -> None:
    a = PronunciationDictionary.new("a", parse_entries([{"word": "tomato", "respelling": "tomahto"}]), None)
    b = PronunciationDictionary.new("b", parse_entries([{"word": "Tomato", "respelling": "tomayto"}]), None)
    (hit,) = [p for p in scan(merged([a, b]), "a tomato") if isinstance(p, Override)]
    assert hit.pin.pron.value == "tomahto"
    (hit,) = [p for p in scan(merged([b, a]), "a tomato") if isinstance(p, Override)]
    assert hit.pin.pron.value == "tomayto"
