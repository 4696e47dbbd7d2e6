import json
from typing import Any

import pytest

from emostream.transport.websocket.protocol import (
    NOTHING_SPEAKABLE,
    BeginUtterance,
    CancelUtterance,
    Dropped,
    EndOfInput,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.voices.base import VoiceInfo

JOE = VoiceInfo(
    id="joe", model="piper-vits", language="en-US", sample_rate=22050, controls=("speed",)
)


def proto(**kw: Any) -> SessionProtocol:
    ids = iter(range(1000))
    return SessionProtocol(
        lookup_voice={"joe": JOE}.get, new_stream_id=lambda: f"s{next(ids)}", **kw
    )


def send(p: SessionProtocol, **msg: Any) -> list[object]:
    return list(p.receive_text(json.dumps(msg)))


def errors(actions: list[object]) -> list[str]:
    return [a.code for a in actions if isinstance(a, SendError)]


def test_happy_path_and_reuse() -> None:
    p = proto()
    (begin,) = send(p, type="start", format={"codec": "opus", "sample_rate": 24000})
    assert isinstance(begin, BeginUtterance)
    assert begin.request.fmt.bitrate is None  # none named: the server's default bitrate
    ev = begin.started_event
    assert ev["type"] == "started" and ev["sample_rate"] == 24000 and ev["codec"] == "opus"
    assert ev["frame_ms"] == 20 and ev["voice"] == "joe" and ev["stream_id"] == "s0"
    assert ev["controls"] == {"speed": True, "pitch_shift": False, "energy": False,
                              "emotion": False, "speaker": False}  # fmt: skip
    assert send(p, type="text", text="Hello there, ") == [QueueSegments(["Hello there,"])]
    assert send(p, type="text", text="my friend") == []
    assert send(p, type="flush") == [QueueSegments(["my friend"])]
    assert send(p, type="text", text="Bye.") == []
    assert send(p, type="end") == [QueueSegments(["Bye."]), EndOfInput()]
    assert p.state == "ending"
    assert errors(send(p, type="text", text="late")) == ["already_ended"]
    p.utterance_finished()
    assert p.state == "idle"
    (again,) = send(p, type="start")
    assert isinstance(again, BeginUtterance) and again.request.stream_id == "s1"


@pytest.mark.parametrize(
    "raw,code",
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_message"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"text": "no type"}', "unknown_type"),
        ('{"type": "text", "text": "hi"}', "not_started"),
        ('{"type": "end"}', "not_started"),
        ('{"type": "flush"}', "not_started"),
        ('{"type": "cancel"}', "not_started"),
        ('{"type": "start", "voice": "nobody"}', "unknown_voice"),
        ('{"type": "start", "voice": 5}', "bad_value"),
        ('{"type": "start", "format": {"sample_rate": 44100}}', "bad_format"),
        ('{"type": "start", "format": {"codec": "mp3"}}', "bad_format"),
        ('{"type": "start", "format": "opus"}', "bad_format"),
        ('{"type": "start", "speed": 9}', "bad_value"),
        ('{"type": "start", "speed": "fast"}', "bad_value"),
        ('{"type": "start", "emotion": "bored"}', "bad_value"),
        ('{"type": "start", "pitch_shift": 3}', "unsupported_control"),
        ('{"type": "start", "emotion": "happy"}', "unsupported_control"),
    ],
)
def test_bad_input_is_an_error_and_state_is_kept(raw: str, code: str) -> None:
    p = proto()
    assert errors(p.receive_text(raw)) == [code]
    assert p.state == "idle"
    assert isinstance(send(p, type="start")[0], BeginUtterance)  # still usable


def test_errors_while_open_keep_the_utterance() -> None:
    p = proto(max_text_chars=20)
    send(p, type="start")
    assert errors(send(p, type="start")) == ["already_started"]
    assert errors(send(p, type="text", text=5)) == ["bad_value"]
    assert errors(p.receive_bytes(b"\x00\x01")) == ["binary_not_allowed"]
    assert send(p, type="text", text="Twelve chars") == []
    assert errors(send(p, type="text", text="and now too many")) == ["text_too_long"]
    assert p.state == "open"
    assert send(p, type="end") == [QueueSegments(["Twelve chars"]), EndOfInput()]


def test_cancel_returns_to_idle() -> None:
    p = proto()
    send(p, type="start")
    send(p, type="text", text="Something long to say")
    assert send(p, type="cancel") == [CancelUtterance()]
    assert p.state == "idle"
    assert isinstance(send(p, type="start")[0], BeginUtterance)


def test_end_with_no_speakable_text() -> None:
    p = proto()
    send(p, type="start")
    send(p, type="text", text=" ... ")
    actions = send(p, type="end")
    assert errors(actions) == ["empty_text"] and actions[-1] == EndOfInput()


def test_speed_is_accepted_for_joe() -> None:
    (begin,) = send(proto(), type="start", speed=1.3)
    assert isinstance(begin, BeginUtterance) and begin.request.controls.speed == 1.3


BIG = "1" * 400


@pytest.mark.parametrize(
    "raw,code,names",
    [
        # Values that used to raise past the protocol (OverflowError, RecursionError, ...).
        ('{"type": "start", "speed": ' + BIG + "}", "bad_value", "speed"),
        ('{"type": "start", "speed": -' + "9" * 5000 + "}", "bad_value", "speed"),
        ('{"type": "start", "intensity": 1e400}', "bad_value", "intensity"),
        ('{"type": "start", "speed": NaN}', "bad_value", "speed"),
        ('{"type": "start", "format": {"sample_rate": Infinity}}', "bad_format", "sample_rate"),
        ('{"type": "start", "format": {"sample_rate": 1e400}}', "bad_format", "sample_rate"),
        ('{"type": "start", "format": {"bitrate": ' + BIG + "}}", "bad_format", "bitrate"),
        ("[" * 1100 + "]" * 1100, "bad_message", "nested"),
        ('{"type": "start", "x": ' + "[" * 100 + "]" * 100 + "}", "bad_message", "nested"),
        ('{"type": "start", "voice": "\\ud800"}', "bad_value", "voice"),
        ('{"type": "start", "prompt": "sad \\udfff"}', "bad_value", "prompt"),
        ('{"type": "start", "\\ud800": 1}', "bad_message", "surrogate"),
        # Wrong types are refused, not coerced.
        ('{"type": "start", "timestamps": "false"}', "bad_value", "timestamps"),
        ('{"type": "start", "timestamps": 0}', "bad_value", "timestamps"),
        ('{"type": "start", "voice": ""}', "bad_value", "voice"),
        ('{"type": "start", "voice": "  "}', "bad_value", "voice"),
        ('{"type": "start", "voice": false}', "bad_value", "voice"),
        ('{"type": "start", "emotion": ""}', "bad_value", "emotion"),
        ('{"type": "start", "emotion": 0}', "bad_value", "emotion"),
        ('{"type": "start", "prompt": ""}', "bad_value", "prompt"),
        ('{"type": "start", "format": {"sample_rate": "48000"}}', "bad_format", "sample_rate"),
        ('{"type": "start", "format": {"sample_rate": 48000.5}}', "bad_format", "sample_rate"),
        ('{"type": "start", "format": {"sample_rate": true}}', "bad_format", "sample_rate"),
        ('{"type": "start", "format": {"codec": 5}}', "bad_format", "codec"),
        ('{"type": "start", "format": {"codec": ""}}', "bad_format", "codec"),
        ('{"type": "start", "reference_audio": 5}', "bad_value", "reference_audio"),
    ],
)
def test_hostile_start_is_a_clear_error(raw: str, code: str, names: str) -> None:
    p = proto()
    (error,) = p.receive_text(raw)
    assert isinstance(error, SendError) and error.code == code
    assert names in error.message and len(error.message) < 300
    assert p.state == "idle"
    assert isinstance(send(p, type="start")[0], BeginUtterance)  # still usable


def test_hostile_text_while_open_keeps_the_utterance() -> None:
    p = proto()
    send(p, type="start")
    assert errors(p.receive_text('{"type": "text", "text": "hi \\ud800"}')) == ["bad_value"]
    assert p.state == "open"
    assert send(p, type="end") == [SendError("empty_text", NOTHING_SPEAKABLE), EndOfInput()]


def test_strict_fields_still_take_their_json_types() -> None:
    (begin,) = send(proto(), type="start", voice=None, timestamps=True, emotion=None, speed=2,
                    format={"codec": "pcm_s16le", "sample_rate": 16000.0})  # fmt: skip
    assert isinstance(begin, BeginUtterance)
    req = begin.request
    assert req.timestamps is True and req.voice.id == "joe" and req.controls.speed == 2.0
    assert req.fmt.sample_rate == 16000 and isinstance(req.fmt.sample_rate, int)
    surrogate_pair = json.dumps({"type": "start", "prompt": "calm 😀"})  # escaped as a pair
    assert isinstance(proto().receive_text(surrogate_pair)[0], BeginUtterance)


def test_deep_nesting_is_named_whatever_the_recursion_limit() -> None:
    """json.loads only refuses deep nesting past the interpreter's recursion limit, which an
    imported library may have raised (torch's compiler does): the error still says so."""
    import sys

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        (error,) = proto().receive_text("[" * 1100 + "]" * 1100)
    finally:
        sys.setrecursionlimit(before)
    assert isinstance(error, SendError) and error.code == "bad_message"
    assert "nested" in error.message
    (flat,) = proto().receive_text("[1, 2]")
    assert isinstance(flat, SendError) and "JSON object" in flat.message


def _begun(actions: list[object]) -> BeginUtterance:
    (begin,) = actions
    assert isinstance(begin, BeginUtterance)
    return begin


def _state(p: SessionProtocol) -> str:
    return p.state


def test_a_start_refused_by_the_io_layer_takes_its_text_and_end_quietly() -> None:
    """busy (admission, the stream limit) is a refused start's one answer: the text, flush,
    end and cancel the client had already sent for it get none."""
    p = proto()
    p.start_refused(_begun(send(p, type="start")).request)
    assert _state(p) == "refused" and p.idle
    # Dropped: no answer; the I/O layer only counts them (not a SendError).
    assert send(p, type="text", text="Hello there.") == [Dropped("text")]
    assert send(p, type="flush") == [Dropped("flush")]
    assert send(p, type="end") == [Dropped("end")]
    assert _state(p) == "idle"
    assert errors(send(p, type="text", text="Stray.")) == ["not_started"]  # as before
    p.start_refused(_begun(send(p, type="start")).request)
    assert send(p, type="cancel") == [Dropped("cancel")] and _state(p) == "idle"
    third = _begun(send(p, type="start"))
    p.start_refused(third.request)
    _begun(send(p, type="start"))  # a new start while refused is taken at once
    assert _state(p) == "open"
    p.start_refused(third.request)  # a late report about the old start changes nothing
    assert _state(p) == "open"
    assert send(p, type="text", text="Spoken.") == []
    assert send(p, type="end") == [QueueSegments(["Spoken."]), EndOfInput()]


def test_a_refused_start_touches_no_text_front_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refused utterance's text is not normalised, split or buffered: nothing of it
    reaches the text front end, and the next start begins with an empty one."""
    from emostream.text.frontend import TextFrontEnd

    fed: list[str] = []
    original = TextFrontEnd.normalize

    def normalize(text: str) -> str:
        fed.append(text)
        return original(text)

    monkeypatch.setattr(TextFrontEnd, "normalize", staticmethod(normalize))
    p = proto()
    p.start_refused(_begun(send(p, type="start")).request)
    for _ in range(3):
        assert send(p, type="text", text="Never spoken. ") == [Dropped("text")]
    assert send(p, type="end") == [Dropped("end")]
    assert fed == []
    _begun(send(p, type="start"))
    assert send(p, type="text", text="Spoken.") == []
    assert send(p, type="end") == [QueueSegments(["Spoken."]), EndOfInput()]
    # the check sees the front end when it is used (with inline overrides read, the default,
    # the length check normalises the message and the front end each stretch around overrides)
    assert fed and set(fed) == {"Spoken."}


def test_the_voice_the_lookup_found_rides_on_the_request() -> None:
    """A lookup that finds a voice (not only its info) hands it on: the I/O layer speaks it
    without looking it up again; a lookup of info only leaves ``spoken`` empty."""

    class Found:
        info = JOE

    found = Found()
    looked: list[str] = []

    def lookup(voice_id: str) -> Any:
        looked.append(voice_id)
        return found if voice_id == "joe" else None

    p = SessionProtocol(lookup_voice=lookup)
    begin = _begun(send(p, type="start", voice="joe"))
    assert begin.request.voice is JOE and begin.request.spoken is found
    assert looked == ["joe"]
    fresh = SessionProtocol(lookup_voice=lookup)
    assert errors(send(fresh, type="start", voice="nobody")) == ["unknown_voice"]
    assert _begun(send(proto(), type="start")).request.spoken is None


# -- split and min_chars: when a token stream's first words are spoken ----------------------
TOKENS = ["I ", "think ", "the ", "easiest ", "way ", "to ", "fix ", "this ", "is ", "to "]


def _fed(p: SessionProtocol, tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        for action in send(p, type="text", text=token):
            assert isinstance(action, QueueSegments)
            out += action.texts
    return out


def test_a_token_stream_is_spoken_before_its_first_punctuation_by_default() -> None:
    from emostream.text.context import Segment

    p = proto()
    send(p, type="start")
    (first,) = _fed(p, TOKENS)
    assert Segment.parse(first) == Segment("I think the easiest way", "", " to")


def test_split_punctuation_waits_for_punctuation() -> None:
    p = proto()
    send(p, type="start", split="punctuation")
    assert _fed(p, TOKENS) == []
    assert send(p, type="text", text="now. ") == [QueueSegments(["".join(TOKENS) + "now."])]


def test_min_chars_sets_the_first_segments_least_length() -> None:
    from emostream.text.context import spoken_text

    p = proto()
    send(p, type="start", min_chars=31)
    assert _fed(p, TOKENS) == []  # "I think the easiest way to fix" is 30 characters
    (first,) = _fed(p, ["restart ", "your "])
    assert spoken_text(first) == "I think the easiest way to fix this is to restart"


@pytest.mark.parametrize(
    "field",
    [
        {"split": "sentences"},
        {"split": 1},
        {"min_chars": 3},
        {"min_chars": 301},
        {"min_chars": "ten"},
        {"min_chars": 10.5},
        {"min_chars": True},
    ],
)
def test_split_and_min_chars_are_checked(field: dict[str, Any]) -> None:
    p = proto()
    assert errors(send(p, type="start", **field)) == ["bad_value"]
    assert p.state == "idle"
    assert isinstance(send(p, type="start", split=None, min_chars=None)[0], BeginUtterance)


def test_a_line_comes_whole_and_is_cut_at_punctuation_only() -> None:
    p = proto()
    actions = p.start_line("m1", "I think the easiest way to fix this is to restart it", {})
    queued = [t for a in actions if isinstance(a, QueueSegments) for t in a.texts]
    assert queued == ["I think the easiest way to fix this is to restart it"]


def test_word_timestamps_locate_a_segment_cut_between_words() -> None:
    """A segment with context is located by the text it speaks."""
    timed = VoiceInfo("joe", "piper-vits", "en-US", 22050, ("speed",), word_timestamps=True)
    p = SessionProtocol(lookup_voice={"joe": timed}.get)
    send(p, type="start", word_timestamps=True)
    queued = [a for t in TOKENS for a in send(p, type="text", text=t)]
    (action,) = queued
    assert isinstance(action, QueueSegments)
    (source,) = action.sources
    assert source.offset == 0 and source.original.startswith("I think the easiest way")
    assert len(source.starts) == len("I think the easiest way")
