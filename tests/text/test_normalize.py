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


def test_emoji_are_dropped_not_read() -> None:
    # espeak reads an emoji's name: "face with tears of joy" for 😂
    assert normalize("😂😂😂 so funny").strip() == "so funny"
    assert normalize("nice 👍🏽!") == "nice!"
    assert normalize("哈哈😂。") == "哈哈。"
    assert normalize("👨\u200d👩\u200d👧 family ❤️").strip() == "family"
    assert normalize("25°C, ©2026") == "25°C, ©2026"  # symbols that are not emoji stay


def test_heart_emoticon() -> None:
    assert normalize("I <3 you") == "I love you"
    assert normalize("爱你<3") == "爱你 "
    assert normalize("x <30 y") == "x 30 y"  # a number, not a heart ("<" is spelled out)


def test_hashtags_and_about() -> None:
    """#TeamBlue is a hashtag with its words apart (a bare # was "number": #1 still is);
    ~20 is "about 20" (the tilde used to vanish)."""
    assert (
        normalize("Use #TeamBlue and #gg_wp now") == "Use hashtag Team Blue and hashtag gg wp now"
    )
    assert normalize("#1 fan") == " number 1 fan"
    assert normalize("~20 minutes, a~b") == "about 20 minutes, a b"
    assert normalize("加油 #主播") == "加油 #主播"  # Mandarin text keeps its symbols


def test_scripts_no_front_end_reads_are_dropped() -> None:
    """espeak spelled them out ("Japanese letter" per kana, "Arabic meem ..."): a mixed line
    keeps what can be said. Accented Latin, Greek, hanzi and 〇 stay."""
    assert normalize("Hello 안녕하세요 friends") == "Hello friends"
    assert normalize("Hi Привет, yo こんにちは!") == "Hi , yo !"
    assert normalize("Thanks مرحبا") == "Thanks "
    assert normalize("café π 二〇二五年") == "café π 二〇二五年"
