import pytest

from emostream.text.phonemes import (
    BOS,
    EOS,
    G2P,
    LANG_EN,
    LANG_ZH,
    SPACE,
    SYMBOLS,
    split_pinyin,
)


@pytest.fixture(scope="module")
def g2p() -> G2P:
    return G2P()


def test_symbol_table_is_stable_and_unique() -> None:
    assert SYMBOLS.id("<pad>") == 0 and SYMBOLS.id(BOS) == 1 and SYMBOLS.id(EOS) == 2
    assert len(set(SYMBOLS.symbols)) == len(SYMBOLS)
    assert "zh:zh" in SYMBOLS and "zh:_ng" in SYMBOLS and "ə" in SYMBOLS


@pytest.mark.parametrize(
    ("syl", "want"),
    [
        ("zhong1", ("zh", "ong", 1)),
        ("yuan2", ("", "van", 2)),
        ("liu2", ("l", "iou", 2)),
        ("gui4", ("g", "uei", 4)),
        ("qu4", ("q", "v", 4)),
        ("si1", ("s", "ii", 1)),
        ("shi4", ("sh", "iii", 4)),
        ("de5", ("d", "e", 5)),
        ("n2", ("", "_n", 2)),
        ("lv4", ("l", "v", 4)),
    ],
)
def test_split_pinyin(syl: str, want: tuple[str, str, int]) -> None:
    assert split_pinyin(syl) == want


def test_english(g2p: G2P) -> None:
    seq = g2p("Hello there, friend.")
    assert seq.symbols[0] == BOS and seq.symbols[-1] == EOS
    assert "," in seq.symbols and seq.symbols[-2] == "."
    assert LANG_EN in seq.langs and LANG_ZH not in seq.langs
    assert all(t == 0 for t in seq.tones)
    assert len(seq.ids()) == len(seq.units)


def test_mandarin_initials_finals_tones(g2p: G2P) -> None:
    seq = g2p("我们去北京。")
    syms = [s for s in seq.symbols if s.startswith("zh:")]
    assert syms[:3] == ["zh:uo", "zh:m", "zh:en"]
    assert "zh:b" in syms and "zh:j" in syms and "zh:ing" in syms
    tones = [u.tone for u in seq.units if u.symbol == "zh:ing"]
    assert tones == [1]
    assert [u.tone for u in seq.units if u.symbol == "zh:uo"] == [3]


def test_teacher_text_partitions_into_units(g2p: G2P) -> None:
    for text in ["今天我们学习English，好不好？", "Good morning; 一共3个人."]:
        seq = g2p(text)
        teacher = seq.teacher_text
        spans = seq.teacher_spans()
        assert spans[0] == (0, 0) and spans[-1] == (len(teacher), len(teacher))
        for u, (a, b) in zip(seq.units, spans):
            assert teacher[a:b] == u.teacher
            if u.symbol not in (BOS, EOS):
                assert b > a, u
        assert "  " not in teacher and " ," not in teacher
        assert SPACE in seq.symbols
        assert LANG_EN in seq.langs and LANG_ZH in seq.langs
