from emostream.text.normalize import normalize


def test_whitespace_and_controls() -> None:
    assert normalize("Hello\u200b   world\t\u3000!\x07") == "Hello world !"


def test_fullwidth_ascii_folds() -> None:
    assert normalize("ＡＢＣ１２３") == "ABC123"


def test_symbols_spelled_in_english_only() -> None:
    assert normalize("Tom & Jerry") == "Tom and Jerry"
    assert "&" in normalize("我和你 & 他")


def test_ellipsis() -> None:
    assert normalize("Wait... what") == "Wait… what"
