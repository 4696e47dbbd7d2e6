import pytest

from emostream.text.normalize import digits_to_hanzi, normalize, spell_zh_numbers


def test_whitespace_and_controls() -> None:
    assert normalize("Hello\u200b   world\t\u3000!\x07") == "Hello world !"


def test_fullwidth_ascii_folds() -> None:
    assert normalize("ＡＢＣ１２３") == "ABC123"


def test_symbols_spelled_in_english_only() -> None:
    assert normalize("Tom & Jerry") == "Tom and Jerry"
    assert "&" in normalize("我和你 & 他")


def test_ellipsis() -> None:
    assert normalize("Wait... what") == "Wait… what"


@pytest.mark.parametrize(
    "num,expected",
    [("0", "零"), ("7", "七"), ("10", "十"), ("15", "十五"), ("105", "一百零五"),
     ("2026", "二千零二十六"), ("10001", "一万零一"), ("120000", "十二万")],
)  # fmt: skip
def test_digits_to_hanzi(num: str, expected: str) -> None:
    assert digits_to_hanzi(num) == expected


def test_spell_zh_numbers_with_decimal() -> None:
    assert spell_zh_numbers("温度3.5度") == "温度三点五度"


def test_digits_to_hanzi_rejects_non_digits() -> None:
    with pytest.raises(ValueError):
        digits_to_hanzi("12a")
