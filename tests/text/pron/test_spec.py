"""Pronunciations are checked against what the model can say, and refused with the reason."""

from __future__ import annotations

import pytest

from emostream.text.phonemes import SYMBOLS, split_pinyin, zh_symbol
from emostream.text.pron.spec import (
    ENGLISH_IPA,
    IPA,
    PINYIN,
    RESPELLING,
    PronunciationError,
    Pron,
    make_pron,
    pinyin_bases,
    read_inline,
)


@pytest.mark.parametrize(
    ("word", "text", "want"),
    [
        ("行", "hang2", Pron(PINYIN, "hang2")),
        ("银行", "yin2 hang2", Pron(PINYIN, "yin2 hang2")),
        ("银行", "yin2hang2", Pron(PINYIN, "yin2 hang2")),
        ("银行", "yín háng", Pron(PINYIN, "yin2 hang2")),  # tone marks
        ("绿", "lü4", Pron(PINYIN, "lv4")),
        ("绿", "lu:4", Pron(PINYIN, "lv4")),
        ("略", "lue4", Pron(PINYIN, "lve4")),
        ("了", "le5", Pron(PINYIN, "le5")),
        ("Nguyen", "/wɪn/", Pron(IPA, "wˈɪn")),  # stress added on the first vowel
        ("Nguyen", "/ˈwɪn/", Pron(IPA, "wˈɪn")),  # and moved to before its vowel (espeak's)
        ("Nguyen", "/ɡəʊ ˈwɪn/", Pron(IPA, "ɡˈəʊ wˈɪn")),
        ("church", "/ʧɝʧ/", Pron(IPA, "tʃˈɜːtʃ")),  # spellings of the model's units
        ("go", "/go:/", Pron(IPA, "ɡˈoː")),
        ("Nguyen", "win", Pron(RESPELLING, "win")),
        ("Siobhan", "shiv AWN", Pron(RESPELLING, "shiv AWN")),
    ],
)
def test_read(word: str, text: str, want: Pron) -> None:
    assert read_inline(word, text) == want


@pytest.mark.parametrize(
    ("word", "text", "reason"),
    [
        ("行", "hang", "has no tone"),
        ("行", "hang7", "tone 7 of 'hang7' is not 1-5"),
        ("行", "hang0", "is not 1-5"),
        ("行", "hzang2", "'hzang' is not a Mandarin syllable"),
        ("行长", "hang2", "1 pinyin syllable(s) for 2 character(s)"),
        ("行", "/xaŋ/", "a word of hanzi takes pinyin"),
        ("Nguyen", "/ʀɪn/", "'ʀ' (U+0280 LATIN LETTER SMALL CAPITAL R) is not among"),
        ("Nguyen", "/wɪn", "IPA goes between slashes"),
        ("Nguyen", "//", "the IPA has no sound"),
        ("Nguyen", "/ˈ/", "the IPA has no sound"),
        ("Nguyen", "win2", "a respelling is letters"),
        ("Xi", "xi2", "a respelling is letters"),
        ("a行", "b", "either all hanzi"),
        ("", "b", "the word is empty"),
        ("x" * 65, "b", "over 64 characters"),
        ("Nguyen", "w" * 201, "over 200 characters"),
        ("...", "dots", "no letter or digit"),
    ],
)
def test_refused_with_the_reason(word: str, text: str, reason: str) -> None:
    with pytest.raises(PronunciationError) as caught:
        read_inline(word, text)
    assert reason in caught.value.reason


def test_a_dictionary_field_names_the_kind() -> None:
    assert make_pron(PINYIN, "行", "hang2") == Pron(PINYIN, "hang2")
    with pytest.raises(PronunciationError, match="pinyin is for a word of hanzi"):
        make_pron(PINYIN, "Beijing", "bei3 jing1")
    with pytest.raises(PronunciationError, match="unknown kind"):
        make_pron("sampa", "x", "y")


def test_every_syllable_reaches_model_units() -> None:
    """Each of the 426 syllables a pinyin override may name has an initial and a final the
    symbol table holds (the path the Mandarin front end's own syllables take)."""
    bases = pinyin_bases()
    assert len(bases) > 400 and {"hang", "xing", "zhang", "chang", "lv", "ê"} <= bases
    for base in bases:
        initial, final, tone = split_pinyin(f"{base}3")
        assert tone == 3
        assert zh_symbol(final) in SYMBOLS, base
        assert not initial or zh_symbol(initial) in SYMBOLS, base


def test_the_ipa_inventory_is_the_models() -> None:
    assert all(ch in SYMBOLS for ch in ENGLISH_IPA)
