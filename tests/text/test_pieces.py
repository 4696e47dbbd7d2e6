"""Bounded pieces: a segment cut until each piece fits a model call."""

from __future__ import annotations

from emostream.text.pieces import best_cut, fit_pieces, piece_limit


def words(text: str) -> int:
    return len(text.split())


def test_a_text_that_fits_is_one_piece() -> None:
    assert fit_pieces("  nine oh five  ", words, 3) == ["nine oh five"]
    assert fit_pieces("   ", words, 3) == []
    assert fit_pieces("a b c d e f", words, 0) == ["a b c d e f"]  # no bound


def test_pieces_fit_and_keep_every_word_in_order() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    pieces = fit_pieces(text, words, 7)
    assert all(words(p) <= 7 for p in pieces)
    assert " ".join(pieces) == text
    assert min(words(p) for p in pieces) >= 3  # halved, not a long piece and a short rest


def test_the_size_is_the_voices_not_the_written_length() -> None:
    """'9:05' is three words read out: the bound counts what the model gets."""
    spoken = {"9:05": 3}

    def size(text: str) -> int:
        return sum(spoken.get(w, 1) for w in text.split())

    pieces = fit_pieces(" ".join(["9:05"] * 40), size, 12)
    assert all(size(p) <= 12 for p in pieces) and sum(p.count("9:05") for p in pieces) == 40


def test_cuts_prefer_punctuation_then_spaces_then_hanzi_then_the_middle() -> None:
    text = "alpha beta gamma, delta epsilon zeta etaa"  # the middle: between the two spaces
    assert text[: best_cut(text)] == "alpha beta gamma, "  # the one after a comma
    assert best_cut("aaaa bbbb cccc dddd") in (10, 5)  # a space near the middle
    assert best_cut("你好世界今天") == 3
    assert best_cut("1234567890") == 5  # one unbroken run: the middle
    assert best_cut("x") is None
    assert fit_pieces("1" * 40, len, 10) == ["1" * 10] * 4


def test_a_single_character_over_the_bound_is_left_whole() -> None:
    assert fit_pieces("x", lambda _: 99, 1) == ["x"]


def test_slower_speech_takes_fewer_units_a_piece() -> None:
    assert piece_limit(400, 1.0) == 400
    assert piece_limit(400, 2.0) == 400  # faster: no more than at rate 1
    assert piece_limit(400, 0.5) == 200
    assert piece_limit(1, 0.01) == 1
