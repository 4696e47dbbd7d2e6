from emostream.text.splitter import Segmenter


def split_all(text: str, **kw: int) -> list[str]:
    s = Segmenter(**kw)
    return s.feed(text) + s.flush()


def test_english_sentences_and_short_first_clause() -> None:
    out = split_all("Hello there, my friend. How are you today? I am fine!")
    assert out == ["Hello there,", "my friend.", "How are you today?", "I am fine!"]


def test_first_clause_needs_min_length() -> None:
    # "Well," is shorter than first_min_chars: no cut there.
    assert split_all("Well, I think so. Yes.") == ["Well, I think so.", "Yes."]


def test_later_clauses_do_not_split_short_sentences() -> None:
    out = split_all("Hello there, friend. One, two, three, four.")
    assert out == ["Hello there,", "friend.", "One, two, three, four."]


def test_decimal_abbreviation_and_initials_are_not_boundaries() -> None:
    out = split_all("It costs 3.14 dollars today, said Mr. Smith and J. Doe. Right.")
    assert out == ["It costs 3.14 dollars today,", "said Mr. Smith and J. Doe.", "Right."]


def test_closing_quotes_and_multiple_marks_stay_with_sentence() -> None:
    assert split_all('He said "stop!" Then left?! Ok.') == ['He said "stop!"', "Then left?!", "Ok."]


def test_chinese_punctuation() -> None:
    out = split_all("你好，今天天气很好。我们去公园吧！好的")
    assert out == ["你好，今天天气很好。", "我们去公园吧！", "好的"]


def test_chinese_first_clause() -> None:
    out = split_all("大家晚上好，欢迎来到直播间。今天聊聊天。")
    assert out == ["大家晚上好，", "欢迎来到直播间。", "今天聊聊天。"]


def test_token_by_token_equals_whole() -> None:
    text = "Well, I think that is a great idea. Let's go now, shall we? Sure. 3.5 is fine."
    whole = split_all(text)
    s = Segmenter()
    out: list[str] = []
    for i in range(0, len(text), 3):
        out += s.feed(text[i : i + 3])
    out += s.flush()
    assert out == whole


def test_period_at_buffer_end_waits_for_next_char() -> None:
    s = Segmenter()
    assert s.feed("The value is 3.") == []
    assert s.feed("5 exactly. ") == ["The value is 3.5 exactly."]


def test_long_text_without_punctuation_is_cut_at_space() -> None:
    text = " ".join(["word"] * 200)
    out = split_all(text, max_chars=100)
    assert all(len(seg) <= 100 for seg in out)
    assert " ".join(out).split() == text.split()


def test_punctuation_only_is_not_a_segment() -> None:
    assert split_all("... !!! ,,,") == []
    assert split_all("") == []


def test_scripts_no_front_end_reads_are_not_segments() -> None:
    """Hangul, Cyrillic, Arabic, Thai or kana alone would be silence: not a segment. Latin
    with accents, digits, Chinese characters (kanji too) and Greek (π: espeak names it) are."""
    for text in ("안녕하세요 여러분", "Привет, как дела?", "مرحبا بكم", "สวัสดี", "こんにちは"):
        assert split_all(text) == [], text
    assert split_all("Привет! Hello there.") == ["Hello there."]
    assert split_all("café") == ["café"] and split_all("42") == ["42"]
    assert split_all("元気ですか") == ["元気ですか"] and split_all("π") == ["π"]


def test_newline_is_a_boundary() -> None:
    assert split_all("First line\nSecond line") == ["First line", "Second line"]
