"""Pronunciation control in the stream protocol (sans-I/O): the start's fields, dictionaries
looked up among the caller's, an override in text (whole or split across messages, kept open
over a flush), a bad one named with its span while the utterance goes on, and a voice that
does not read a kind saying so."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from emostream.text.context import spoken_text
from emostream.text.pron.lexicon import PronunciationDictionary, parse_entries
from emostream.text.pron.spec import KINDS, RESPELLING
from emostream.text.pron.wire import PIN_RE, display_text
from emostream.transport.websocket.protocol import (
    BeginUtterance,
    EndOfInput,
    EnqueueLine,
    OverrideError,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.voices.base import VoiceInfo

FS2 = VoiceInfo("af_heart", "emostream-fs2", "en", 22050, ("speed",), pronunciation=KINDS)
JOE = VoiceInfo("joe", "piper-vits", "en-US", 22050, ("speed",), pronunciation=(RESPELLING,))
NAMES = PronunciationDictionary.new("names", parse_entries([
    {"word": "Nguyen", "ipa": "/wɪn/"}, {"word": "行长", "pinyin": "hang2 zhang3"},
]), "alice")  # fmt: skip


def proto() -> SessionProtocol:
    return SessionProtocol(lookup_voice={"af_heart": FS2, "joe": JOE}.get,
                           lookup_dictionary={NAMES.id: NAMES}.get)  # fmt: skip


def send(p: SessionProtocol, **msg: Any) -> list[object]:
    return list(p.receive_text(json.dumps(msg)))


def segments(actions: Sequence[object]) -> list[str]:
    return [s for a in actions if isinstance(a, QueueSegments) for s in a.texts]


def pins(texts: list[str]) -> list[tuple[str, str]]:
    """(word, pronunciation value) of every pin, in order."""
    return [(m.group(1), m.group(3)) for t in texts for m in PIN_RE.finditer(spoken_text(t))]


def test_started_says_what_the_voice_reads_when_asked() -> None:
    (begin,) = send(proto(), type="start", voice="af_heart", pronunciation="inline")
    assert isinstance(begin, BeginUtterance)
    assert begin.started_event["pronunciation"] == ["pinyin", "ipa", "respelling"]
    (begin, _) = send(proto(), type="start", voice="joe", pronunciation_dictionaries=[NAMES.id])
    assert isinstance(begin, BeginUtterance) and begin.started_event["pronunciation"] == ["respelling"]
    (begin,) = send(proto(), type="start", voice="joe")  # not asked: started as it always was
    assert isinstance(begin, BeginUtterance) and "pronunciation" not in begin.started_event


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"pronunciation": "ssml"}, "bad_value"),
        ({"pronunciation": 1}, "bad_value"),
        ({"pronunciation_dictionaries": "pdict_x"}, "bad_value"),
        ({"pronunciation_dictionaries": ["a", "b", "c", "d"]}, "bad_value"),
        ({"pronunciation_dictionaries": [""]}, "bad_value"),
        ({"pronunciation_dictionaries": [3]}, "bad_value"),
        ({"pronunciation_dictionaries": ["pdict_0000000000000000"]}, "unknown_dictionary"),
    ],
)
def test_bad_start_fields(fields: dict[str, Any], code: str) -> None:
    p = proto()
    (err,) = send(p, type="start", voice="af_heart", **fields)
    assert isinstance(err, SendError) and err.code == code
    assert p.idle  # refused: nothing started


def test_inline_override_split_across_messages_and_a_flush() -> None:
    p = proto()
    send(p, type="start", voice="af_heart", split="punctuation")
    out = send(p, type="text", text="我在银{行")
    out += send(p, type="flush")  # held: the override is not closed
    assert pins(segments(out)) == [] and display_text("".join(segments(out))) == "我在银"
    out = send(p, type="text", text="|xing2}工作。")
    out += send(p, type="end")
    assert pins(segments(out)) == [("行", "xing2")]
    assert display_text(spoken_text(segments(out)[0])) == "行工作。"


def test_a_bad_override_is_named_and_the_rest_spoken() -> None:
    p = proto()
    send(p, type="start", voice="af_heart", split="punctuation")
    out = send(p, type="text", text="Hi {Nguyen|/ʀ/}. Bye {行|hang7}.")
    out += send(p, type="end")
    errors = [a for a in out if isinstance(a, OverrideError)]
    assert [e.code for e in errors] == ["bad_pronunciation", "bad_pronunciation"]
    event = errors[0].event
    assert event["span"] == {"text": "{Nguyen|/ʀ/}", "char_start": 3, "char_end": 15}
    assert "'ʀ'" in event["message"] and event["type"] == "error"
    assert errors[1].event["span"]["char_start"] == 21
    assert [display_text(s) for s in segments(out)] == ["Hi Nguyen.", "Bye 行."]
    assert isinstance(out[-1], EndOfInput)


def test_dictionaries_and_off() -> None:
    p = proto()
    send(p, type="start", voice="af_heart", pronunciation_dictionaries=[NAMES.id, NAMES.id])
    out = send(p, type="text", text="Ask Nguyen about the 行长, {Nguyen|win}!") + send(p, type="end")
    assert pins(segments(out)) == [("Nguyen", "wˈɪn"), ("行长", "hang2 zhang3"), ("Nguyen", "win")]
    p = proto()
    send(p, type="start", voice="af_heart", pronunciation="off", pronunciation_dictionaries=[NAMES.id])
    out = send(p, type="text", text="Ask Nguyen, {Nguyen|win}!") + send(p, type="end")
    # dictionaries still apply (to the word inside the braces too); the braces are text
    assert pins(segments(out)) == [("Nguyen", "wˈɪn")] * 2
    assert "{Nguyen" in display_text("".join(segments(out)))


def test_a_voice_that_does_not_read_a_kind_says_so() -> None:
    p = proto()
    out = send(p, type="start", voice="joe", pronunciation_dictionaries=[NAMES.id])
    assert isinstance(out[0], BeginUtterance)
    (notice,) = out[1:]
    assert isinstance(notice, SendError) and notice.code == "unsupported_control"
    assert "'joe' does not take ipa or pinyin" in notice.message
    out = send(p, type="text", text="{行|hang2} and {Siobhan|shiv awn}.") + send(p, type="end")
    (err,) = [a for a in out if isinstance(a, OverrideError)]
    assert err.code == "unsupported_control" and err.span == ("{行|hang2}", 0, 9)
    assert pins(segments(out)) == [("Siobhan", "shiv awn")]
    assert display_text(segments(out)[0]) == "行 and Siobhan."


def test_a_line_carries_the_fields() -> None:
    p = proto()
    (line,) = send(p, type="line", text="Hi Nguyen", voice="af_heart",
                   pronunciation_dictionaries=[NAMES.id])  # fmt: skip
    assert isinstance(line, EnqueueLine)
    out = p.start_line(line.id, line.text, line.fields)
    assert pins(segments(out)) == [("Nguyen", "wˈɪn")]
    (err,) = send(proto(), type="line", text="x", pronunciation_dictionaries=["pdict_nope"])
    assert isinstance(err, SendError) and err.code == "unknown_dictionary"


def test_with_a_voice_per_language_the_kinds_all_its_voices_read() -> None:
    zh = VoiceInfo("zf_xiaoxiao", "emostream-fs2", "zh-CN", 22050, ("speed",), pronunciation=KINDS)
    p = SessionProtocol(lookup_voice={"af_heart": FS2, "joe": JOE, "zf_xiaoxiao": zh}.get,
                        lookup_dictionary={NAMES.id: NAMES}.get)  # fmt: skip
    out = send(p, type="start", voices={"en": "joe", "zh": "zf_xiaoxiao"},
               pronunciation_dictionaries=[NAMES.id])  # fmt: skip
    assert isinstance(out[0], BeginUtterance)
    assert out[0].started_event["pronunciation"] == ["respelling"]
    (notice,) = out[1:]  # joe may speak any entry's word: those kinds are left out, said once
    assert isinstance(notice, SendError) and "'joe' does not take ipa or pinyin" in notice.message
    out = send(p, type="text", text="Hi {Siobhan|shiv awn}, 我在银{行|xing2}工作。")
    out += send(p, type="end")
    (err,) = [a for a in out if isinstance(a, OverrideError)]
    assert err.code == "unsupported_control" and "'joe'" in err.message
    assert pins(segments(out)) == [("Siobhan", "shiv awn")]
    # Mandarin falls to the default voice, joe, here (no timbre match known): joe's kinds
    (begin,) = send(proto(), type="start", voices={"en": "af_heart"}, pronunciation="inline")
    assert isinstance(begin, BeginUtterance)
    assert begin.started_event["voices"] == {"en": "af_heart", "zh": "joe"}
    assert begin.started_event["pronunciation"] == ["respelling"]
    (begin,) = send(proto(), type="start", voice="af_heart", voices={"en": "af_heart"},
                    pronunciation="inline")  # fmt: skip
    assert isinstance(begin, BeginUtterance)
    assert begin.started_event["pronunciation"] == ["pinyin", "ipa", "respelling"]
