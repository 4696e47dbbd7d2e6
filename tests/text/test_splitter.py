import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.text.context import Segment
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


# -- words: a token stream's segments may end between words ---------------------------
REPLY = (
    "I think the easiest way to fix this is to restart your router and wait a minute before "
    "you try again because it needs time to reconnect to the network and find the signal. "
    "If that fails, call us."
)


def stream(text: str, size: int | None = None, **kw: Any) -> list[tuple[int, Segment]]:
    """Feed ``text`` word by word (``size``: that many characters at a time); each segment
    with the index of the token that released it (-1: the flush)."""
    s = Segmenter(words=True, **kw)
    parts = re.findall(r"\S+\s*", text) if size is None else wrap(text, size)
    out = [(i, Segment.parse(w)) for i, part in enumerate(parts) for w in s.feed(part)]
    return out + [(-1, Segment.parse(w)) for w in s.flush()]


def wrap(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_words_speak_a_token_stream_before_its_first_punctuation() -> None:
    out = stream(REPLY)
    index, first = out[0]
    assert first == Segment("I think the easiest way", "", " to")
    assert index == 5  # released by "to ", the word after it: no waiting for the full stop
    second = out[1][1]
    assert second.before == "easiest way " and second.text.startswith("to fix this")
    assert [s.text for _, s in out][-1] == "If that fails, call us."


def test_words_keep_text_sent_whole_in_sentences() -> None:
    """Sent whole, the reply's sentence ends are there: the same segments as punctuation."""
    whole = Segmenter(words=True)
    assert whole.feed(REPLY) + whole.flush() == split_all(REPLY)


def test_words_segments_grow_with_what_is_queued() -> None:
    lengths = [len(s.text) for _, s in stream(REPLY)]
    first = lengths[0]
    # the second is at least three times the first before it may end between words (or
    # it ends at the sentence's end), the third longer still
    assert lengths[1] >= 3 * first or stream(REPLY)[1][1].text.endswith(".")
    assert lengths[1] < 3 * first + 40


def test_words_flush_releases_the_rest_in_context() -> None:
    s = Segmenter(words=True)
    assert s.feed("My best guess is that the ") == [
        Segment("My best guess", "", " is that the").wire()
    ]
    rest = [Segment.parse(w) for w in s.flush()]
    assert rest == [Segment("is that the", "best guess ", "")]


def test_words_mandarin_stream_two_characters_at_a_time() -> None:
    out = stream("我觉得最简单的办法是先把路由器重启一下然后等一分钟再试一次。", size=2)
    index, first = out[0]
    assert first == Segment("我觉得最简单的", "", "办") and index == 3
    assert out[1][1].before == "简单的" and out[1][1].text.startswith("办法是")


def test_punctuation_split_waits_for_punctuation() -> None:
    s = Segmenter()
    assert all(s.feed(w) == [] for w in re.findall(r"\S+\s*", "I think the easiest way to "))


def test_words_prefer_a_phrase_boundary_to_an_earlier_weak_one() -> None:
    s = Segmenter(words=True)
    out = s.feed("Sure thing I can help you with that right away and ") + s.flush()
    assert [Segment.parse(w).text for w in out] == [
        "Sure thing I can help you with that right away",  # before "and", not "Sure thing"
        "and",
    ]


@settings(max_examples=60, deadline=None)
@given(
    text=st.sampled_from(
        [
            REPLY,
            "我觉得最简单的办法是先把路由器重启一下然后等一分钟再试一次。如果还是不行，就打电话。",
            (
                "Most people find that drinking water helps them feel more alert in the morning and "
                "coffee can wait until later when your body has settled down a little bit more"
            ),
            "好的我来帮你看一下这个问题然后我们再决定下一步怎么做因为这个情况有点复杂",
        ]
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=60),
)
def test_words_lose_nothing_and_context_is_the_text_around(text: str, cuts: list[int]) -> None:
    """However the text arrives, the segments speak it all, once, in order; each one's context
    is the text next to it."""
    s = Segmenter(words=True)
    parts, pos, k = [], 0, 0
    while pos < len(text):
        parts.append(text[pos : pos + cuts[k % len(cuts)]])
        pos += cuts[k % len(cuts)]
        k += 1
    segments = [Segment.parse(w) for p in parts for w in s.feed(p)] + [
        Segment.parse(w) for w in s.flush()
    ]
    squash = re.compile(r"\s+")
    spoken = "".join(squash.sub("", seg.text) for seg in segments)
    assert spoken == squash.sub("", text)
    flat = squash.sub(" ", text)
    for seg in segments:
        assert squash.sub(" ", seg.before + seg.text + seg.after) in flat, seg
