"""Overrides and the language cut (a voice per language) compose: the cut never falls inside a
pin, a pin's language is that of its word as written (its pinyin or IPA is not English), and
an override inside a Mandarin stretch rides in that stretch's segment, whole."""

from __future__ import annotations

import pytest

from emostream.text.context import spoken_text
from emostream.text.frontend import TextFrontEnd
from emostream.text.languages import segment_language, split_languages
from emostream.text.pron.inline import written
from emostream.text.pron.reader import PronunciationSetup, shared_kinds
from emostream.text.pron.spec import IPA, PINYIN, Pron
from emostream.text.pron.wire import CLOSE, OPEN, PIN_RE, Pin, display_text
from emostream.text.splitter import Segmenter

SETUP = PronunciationSetup()


def segments(text: str, *, pieces: int = 0) -> list[str]:
    front = TextFrontEnd(segmenter=Segmenter(words=False), pronunciation=SETUP, languages=True)
    step = pieces or len(text)
    out: list[str] = []
    for i in range(0, len(text), step):
        out += front.feed(text[i : i + step])
    out += front.flush()
    assert not front.problems
    return out


def whole(segment: str) -> list[str]:
    found = PIN_RE.findall(segment)
    assert segment.count(OPEN) == segment.count(CLOSE) == len(found), segment
    return [m[0] for m in found]


def spoken(segs: list[str]) -> list[tuple[str, str]]:
    return [(segment_language(s), display_text(spoken_text(s))) for s in segs]


def test_a_mandarin_pin_inside_english_is_cut_out_whole() -> None:
    # its pinyin's letters are not an English run: the cut is round the pin, not through it
    wired = "I think " + Pin("行", Pron(PINYIN, "hang2")).wire() + " is the word"
    out = split_languages(wired)
    assert [display_text(spoken_text(s)) for s in out] == ["I think", "行", "is the word"]
    assert [segment_language(s) for s in out] == ["en", "zh", "en"]
    assert [whole(spoken_text(s)) for s in out] == [[], ["行"], []]


@pytest.mark.parametrize("step", [0, 1, 3])
def test_overrides_ride_in_their_languages_segment(step: int) -> None:
    text = "我觉得银{行|hang2}今天不开门, {Nguyen|/wɪn/} said so, and he is always right."
    out = segments(text, pieces=step)
    assert spoken(out)[0] == ("zh", "我觉得银行今天不开门,")
    assert spoken(out)[1][0] == "en" and spoken(out)[1][1].startswith("Nguyen said so")
    assert [whole(spoken_text(s)) for s in out][:2] == [["行"], ["Nguyen"]]
    assert PIN_RE.findall(spoken_text(out[0]))[0] == ("行", "p", "hang2")
    assert PIN_RE.findall(spoken_text(out[1]))[0][:2] == ("Nguyen", "i")


def test_a_pin_spanning_a_language_change_goes_whole_with_the_run_after() -> None:
    # an override's word written in two scripts: one pin, never two halves
    pin = Pin("卡拉OK", Pron(IPA, "kalaokei"))
    wired = "Let us all go and sing " + pin.wire() + " tonight with everyone here"
    out = split_languages(wired)
    assert "".join(display_text(spoken_text(s)) for s in out).replace(" ", "") == (
        display_text(wired).replace(" ", "")
    )
    assert sum(len(whole(spoken_text(s))) for s in out) == 1


def test_the_kinds_every_voice_of_an_utterance_reads() -> None:
    kinds = ("pinyin", "ipa", "respelling")
    assert shared_kinds([("af_heart", kinds)]) == ("af_heart", kinds)
    assert shared_kinds([("af_heart", kinds), ("zf_xiaoxiao", kinds)]) == ("af_heart", kinds)
    # joe reads respellings only: an override of another kind names joe
    assert shared_kinds([("joe", ("respelling",)), ("zf_xiaoxiao", kinds)]) == (
        "joe", ("respelling",))  # fmt: skip


def test_written_is_the_text_as_shown() -> None:
    assert written("我在银{行|hang2}, {Nguyen|/wɪn/} \\{a|b} {x}") == "我在银行, Nguyen {a|b} {x}"
    assert written("{行|hang7}") == "行"  # a bad override: its word
