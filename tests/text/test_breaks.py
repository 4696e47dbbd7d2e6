"""Where a segment may end between two words (emostream.text.breaks)."""

import pytest

from emostream.text.breaks import (
    Break,
    find_break,
    left_context,
    strength,
    tokens,
    weight,
)


def cut(buf: str, min_weight: int = 10, slack: int = 16) -> tuple[str, str] | None:
    """The segment and its right context, or None."""
    found = find_break(buf, min_weight=min_weight, slack=slack)
    if found is None:
        return None
    return buf[: found.at], buf[found.at : found.context_end]


def pair(prev: str, nxt: str, after: str | None = None) -> int | None:
    toks = tokens(f"{prev} {nxt} {after or ''} ")
    return strength(toks[0], toks[1], toks[2] if after else None)


def test_weight_counts_a_hanzi_as_three() -> None:
    assert weight("abc") == 3 and weight("你好") == 6 and weight("a你") == 4


def test_english_strengths() -> None:
    assert pair("way", "to") == 2  # a phrase opens
    assert pair("router", "and") == 3  # a clause opens
    assert pair("find", "that") == 3
    assert pair("think", "the") == 2  # an article opens a noun phrase
    assert pair("guess", "is") == 2  # an auxiliary after a noun
    assert pair("easiest", "way") == 1  # between two content words
    assert pair("the", "easiest") == 0  # an article leans on the next word
    assert pair("with", "the") == 0 and pair("I", "think") == 0 and pair("is", "that") == 0
    assert pair("Mr.", "Smith") == 0 and pair("20", "minutes") == 0
    assert pair("lot", "of") == 0 and pair("keep", "it") == 0 and pair("waking", "up") == 0


def test_a_preposition_that_may_be_a_particle_waits_for_the_next_word() -> None:
    assert pair("them", "in", None) is None  # "keeping them in | the fridge" or "log in"?
    assert pair("fridge", "in", "the") == 2
    assert pair("log", "in", "later") == 0
    assert pair("opens", "at", "nine") == 2  # not a particle: no wait


def test_mandarin_strengths() -> None:
    def zh(text: str, i: int) -> int | None:
        toks = tokens(text + "。")
        return strength(toks[i], toks[i + 1], None)

    # 我/觉得/最/简单/的/办法/是
    assert zh("我觉得最简单的办法是", 4) == 2  # after 的
    assert zh("我觉得最简单的办法是", 1) == 2  # after a verb that takes a clause
    assert zh("我觉得最简单的办法是", 2) == 0  # 最 leans on the next word
    assert zh("我觉得最简单的办法是", 3) == 0  # before 的
    assert zh("我觉得最简单的办法是", 5) == 2  # before 是
    assert zh("你先重启一下然后再试", 3) == 3  # 然后 opens a clause


def test_first_break_waits_for_a_complete_next_word() -> None:
    assert cut("I think the easiest way to") is None  # "to" may be "tomorrow"
    assert cut("I think the easiest way to ") == ("I think the easiest way", " to")
    # Tokens with a leading space (a chat model's): complete once the next one starts.
    assert cut("I think the easiest way to fix") == ("I think the easiest way", " to")
    assert cut("I think the easiest way to fix this ") == (
        "I think the easiest way",
        " to fix this",
    )


def test_first_break_needs_the_least_length() -> None:
    assert cut("We can go home and ", min_weight=15) is None  # "We can go home" is 14
    assert cut("We can go home and ", min_weight=14) == ("We can go home", " and")


def test_a_weak_break_only_after_the_slack_and_never_inside_a_noun_phrase() -> None:
    text = "Learning a new language gets much easier "
    # new|language is inside "a new language"; language|gets is the first weak break
    assert cut(text, slack=100) is None
    assert cut(text, slack=16) == ("Learning a new language", " gets much easier")


def test_mandarin_breaks_respect_words_and_judge_a_word_by_its_first_character() -> None:
    # 现在 is one word: never 现 | 在 (在 would open a phrase)
    assert cut("你的快递现在") is None
    assert cut("你的快递现在已经到") == ("你的快递现在", "已经到")
    assert cut("我觉得最简单的办") == ("我觉得最简单的", "办")
    # 一 may begin 一下 (which leans back): wait for the next character
    assert cut("我们先重启一") is None


def test_no_break_before_punctuation_or_in_an_unreadable_word() -> None:
    assert cut("Well, that is , and ") is None


def test_break_fields() -> None:
    found = find_break("My best guess is that it ", min_weight=10, slack=16)
    assert found == Break(at=13, context_end=24, strength=2)  # " is that it": three words


@pytest.mark.parametrize(
    ("text", "context"),
    [
        ("I think the easiest way", "easiest way"),
        ("我觉得最简单的", "简单的"),
        ("Hi", "Hi"),
        ("", ""),
    ],
)
def test_left_context_is_the_last_two_words(text: str, context: str) -> None:
    assert left_context(text) == context
