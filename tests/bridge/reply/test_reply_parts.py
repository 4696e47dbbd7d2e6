"""The reply step's sans-I/O parts: the SSE stream of a chat completion, the leading emotion
tag, and the reply outbox's start/text/end with every way a reply can go."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emostream.bridge.lines import ChatLine
from emostream.bridge.reply.outbox import ReplyOutbox
from emostream.bridge.reply.sse import DONE, ReplyStreamError, SseEvent, SseParser, delta
from emostream.bridge.reply.tags import TagReader

FIELDS = {"voice": "af_heart", "format": {"codec": "pcm_s16le", "sample_rate": 24000}}


def chunk(content: str | None) -> str:
    d = {} if content is None else {"content": content}
    return json.dumps({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d}]})


def test_sse_events_comments_multiline_and_done() -> None:
    p = SseParser()
    lines = [": keep-alive", "", f"data: {chunk('Hel')}", "", "event: message", "id: 3",
             f"data:{chunk('lo')}", "", "data: a", "data: b", "", "data: [DONE]", ""]  # fmt: skip
    events = [e for line in lines if (e := p.feed(line)) is not None]
    assert [delta(e) for e in events[:2]] == ["Hel", "lo"]
    assert events[2].data == "a\nb" and delta(events[3]) is DONE
    assert p.end() is None
    p.feed(f"data: {chunk('tail')}")
    tail = p.end()
    assert tail is not None and delta(tail) == "tail"  # no blank line before the close


@pytest.mark.parametrize(
    ("data", "event", "says"),
    [
        ("{oops", "message", "not JSON"),
        ("[1]", "message", "not a JSON object"),
        ('{"error": {"message": "rate limit"}}', "message", "rate limit"),
        ('{"detail": "x"}', "error", "the endpoint failed"),
        ('{"choices": [{"delta": {"content": 5}}]}', "message", "not a string"),
    ],
)
def test_sse_errors(data: str, event: str, says: str) -> None:
    with pytest.raises(ReplyStreamError, match=says):
        delta(SseEvent(data, event))


def test_chunks_without_content_are_empty() -> None:
    assert delta(SseEvent(chunk(None))) == ""
    assert delta(SseEvent('{"choices": [], "usage": {"total_tokens": 5}}')) == ""
    assert delta(SseEvent('{"choices": [{"delta": null, "finish_reason": "stop"}]}')) == ""
    p = SseParser()
    with pytest.raises(ReplyStreamError):
        for _ in range(3):
            p.feed("data: " + "x" * 600_000)


@pytest.mark.parametrize(
    ("pieces", "emotion", "spoken", "unknown"),
    [
        (["[happy] Thanks!"], "happy", "Thanks!", None),
        (["  [", "Ha", "ppy", "]", " Thanks", "!"], "happy", " Thanks!", None),
        (["[excited]wow"], "happy", "wow", None),
        (["【开心】谢谢！"], "happy", "谢谢！", None),
        (["[smug] heh"], "neutral", "heh", "smug"),
        (["[] hi"], "neutral", "hi", ""),
        (["Sure, ", "[happy] no"], "neutral", "Sure, [happy] no", None),
        (
            ["[this is a very long bracket that is no tag at all"],
            "neutral",
            "[this is a very long bracket that is no tag at all",
            None,
        ),
        (["[ha", "\nppy] x"], "neutral", "[ha\nppy] x", None),
    ],
)
def test_the_leading_tag(pieces: list[str], emotion: str, spoken: str, unknown: str | None) -> None:
    r = TagReader()
    out = "".join(r.feed(p) for p in pieces) + r.finish()
    assert (r.emotion, out, r.unknown) == (emotion, spoken, unknown)


def test_an_unclosed_tag_at_the_end_is_text() -> None:
    r = TagReader()
    assert r.feed("[hap") == "" and not r.decided
    assert r.finish() == "[hap" and r.emotion == "neutral"


def line(i: str, priority: int = 0, ttl_ms: float = 8000.0) -> ChatLine:
    return ChatLine(i, f"text {i}", priority, ttl_ms, "ann", prompt=f"ann: text {i}")


def send(ob: ReplyOutbox, now: float, limit: int | None = None) -> list[dict[str, Any]]:
    return ob.to_send(now, limit)[0]


def test_a_reply_streams_as_start_text_end_with_its_emotion() -> None:
    ob = ReplyOutbox(fields=FIELDS)
    ob.add(line("a"), 0.0)
    ob.add(line("b", priority=5), 0.1)
    job = ob.next_ask(0.2)
    assert job is not None and job.line.id == "b" and ob.next_ask(0.2) is None
    assert send(ob, 0.3) == [] and ob.at_server == 0  # nothing from the model yet
    assert ob.piece(job, "[hap", 0.4) == (True, [])
    assert send(ob, 0.4) == []  # the tag is not finished
    ob.piece(job, "py] Thanks", 0.5)
    start = send(ob, 0.5)
    assert start == [{**FIELDS, "type": "start", "emotion": "happy"}]
    ob.piece(job, " a lot", 0.6)
    assert send(ob, 0.6) == []  # words wait for started: does the voice take emotion?
    ob.on_event({"type": "started", "controls": {"emotion": True}}, 0.7)
    assert send(ob, 0.7) == [{"type": "text", "text": "Thanks a lot"}]
    ob.piece(job, "!", 0.8)
    assert send(ob, 0.8) == [{"type": "text", "text": "!"}]
    assert ob.finished(job, 0.9) == []
    assert send(ob, 0.9) == [{"type": "end"}] and ob.at_server == 1
    assert ob.on_audio(960, 1.05) == "b"
    (spoken,) = ob.on_event({"type": "done"}, 1.2)
    assert spoken["event"] == "spoken" and spoken["emotion"] == "happy"
    assert spoken["text"] == "Thanks a lot!" and spoken["first_token_ms"] == pytest.approx(200)
    assert spoken["first_audio_ms"] == pytest.approx(650)
    assert ob.tally.spoken == 1 and len(ob) == 1 and ob.next_ask(1.3) is not None


def test_once_emotion_support_is_known_words_follow_the_start_at_once() -> None:
    ob = ReplyOutbox(fields=FIELDS)
    ob.emotion_ok = True
    ob.add(line("a"), 0)
    job = ob.next_ask(0)
    assert job is not None
    ob.piece(job, "Hello there", 0.1)  # no tag: neutral, decided at the first word
    assert send(ob, 0.1) == [{**FIELDS, "type": "start"}, {"type": "text", "text": "Hello there"}]


def test_a_reply_goes_where_the_lines_go_in_the_voice_of_the_line_it_answers() -> None:
    """``--room`` and ``--voices`` reach the reply's start; with no voice named, a reply to a
    Mandarin line is spoken by the Mandarin voice (as a Mandarin line would be), an English
    one by the server's default."""
    fields = {"format": FIELDS["format"], "room": "main"}
    ob = ReplyOutbox(fields=fields, language_voices={"zh": "zf_xiaoxiao"})
    ob.emotion_ok = True
    ob.add(ChatLine(text="主播晚上好", id="z"), 0)
    ob.add(ChatLine(text="good evening", id="e"), 0.1)
    for voice in ("zf_xiaoxiao", None):
        job = ob.next_ask(0.2)
        assert job is not None
        ob.piece(job, "[happy] 你好 hello", 0.3)
        start = send(ob, 0.3)[0]
        assert start["room"] == "main" and start.get("voice") == voice
        ob.finished(job, 0.4)
        send(ob, 0.4)
        ob.on_event({"type": "started", "controls": {"emotion": True}}, 0.45)
        ob.on_event({"type": "done"}, 0.5)
    named = ReplyOutbox(fields={**fields, "voices": {"en": "af_heart", "zh": "zm_yunxi"}},
                        language_voices={"zh": "zf_xiaoxiao"})  # fmt: skip
    named.emotion_ok = True
    named.add(ChatLine(text="主播晚上好", id="z"), 0)
    job = named.next_ask(0)
    assert job is not None
    named.piece(job, "你好", 0.1)
    start = named.to_send(0.1)[0][0]
    assert "voice" not in start and start["voices"]["zh"] == "zm_yunxi"


def test_a_voice_without_emotion_gets_the_reply_again_without_it() -> None:
    ob = ReplyOutbox(fields={**FIELDS, "voice": "joe"})
    ob.add(line("a"), 0)
    job = ob.next_ask(0)
    assert job is not None
    ob.piece(job, "[sad] Oh no.", 0.1)
    assert send(ob, 0.1)[0]["emotion"] == "sad"
    notes = ob.on_event({"type": "error", "code": "unsupported_control",
                         "message": "voice 'joe' does not support: emotion"}, 0.2)  # fmt: skip
    assert notes[0]["event"] == "warning" and ob.emotion_ok is False
    again = send(ob, 0.2)
    assert again == [{**FIELDS, "voice": "joe", "type": "start"},
                     {"type": "text", "text": "Oh no."}]  # fmt: skip
    ob.add(line("b"), 0.3)  # later replies: no emotion, no warning
    ob.finished(job, 0.3)
    send(ob, 0.3)
    ob.on_event({"type": "started", "controls": {"emotion": False}}, 0.35)
    ob.on_event({"type": "done"}, 0.4)
    job2 = ob.next_ask(0.5)
    assert job2 is not None
    ob.piece(job2, "[happy] yay", 0.5)
    assert "emotion" not in send(ob, 0.5)[0]


def test_busy_start_is_sent_again_with_every_word() -> None:
    ob = ReplyOutbox(fields=FIELDS)
    ob.emotion_ok = True
    ob.add(line("a"), 0)
    job = ob.next_ask(0)
    assert job is not None
    ob.piece(job, "One two", 0.1)
    send(ob, 0.1)
    (held,) = ob.on_event({"type": "error", "code": "busy", "retry_after_ms": 300}, 0.2)
    assert held["type"] == "line_held"
    ob.piece(job, " three", 0.3)
    assert send(ob, 0.3) == []  # not before 0.5
    assert send(ob, 0.6) == [{**FIELDS, "type": "start"}, {"type": "text", "text": "One two three"}]


def test_pacing_holds_the_start_but_not_the_words_of_a_started_reply() -> None:
    ob = ReplyOutbox(fields=FIELDS)
    ob.emotion_ok = True
    ob.add(line("a"), 0)
    job = ob.next_ask(0)
    assert job is not None
    ob.piece(job, "Hi", 0.1)
    assert send(ob, 0.1, limit=0) == []
    assert [m["type"] for m in send(ob, 0.2, limit=1)] == ["start", "text"]
    ob.piece(job, " more", 0.3)
    assert send(ob, 0.3, limit=0) == [{"type": "text", "text": " more"}]


def test_failures_empty_replies_ttl_and_reconnects() -> None:
    ob = ReplyOutbox(fields=FIELDS, max_held=2)
    ob.emotion_ok = True
    for i, p in (("a", 0), ("b", 1), ("c", 2)):
        ob.add(line(i, priority=p, ttl_ms=1000), 0.0)
    assert ob.tally.dropped["overflow"] == 1  # "a", the lowest
    job = ob.next_ask(0.1)
    assert job is not None and job.line.id == "c"
    failed = ob.failed(job, "HTTP 500: boom", 0.2)
    assert [e.get("event") or e.get("reason") for e in failed] == ["failed", "reply_failed"]
    assert ob.piece(job, "late", 0.3) == (False, [])  # the job is over
    expired = ob.expire_held(1.5)
    assert [e["id"] for e in expired] == ["b"] and ob.drained
    ob.add(line("d"), 2.0)
    job = ob.next_ask(2.0)
    assert job is not None
    ob.piece(job, "[happy]", 2.1)
    assert ob.finished(job, 2.2)[0]["reason"] == "empty_reply" and ob.drained
    ob.add(line("e"), 3.0)
    job = ob.next_ask(3.0)
    assert job is not None
    ob.piece(job, "Cut before audio", 3.1)
    send(ob, 3.1)
    ob.on_event({"type": "started", "controls": {"emotion": True}}, 3.2)
    assert ob.disconnected(3.3) == []  # no audio yet: sent again whole
    assert send(ob, 3.4) == [{**FIELDS, "type": "start"},
                             {"type": "text", "text": "Cut before audio"}]  # fmt: skip
    ob.on_event({"type": "started", "controls": {"emotion": True}}, 3.5)
    ob.on_audio(100, 3.6)
    (cut,) = ob.disconnected(3.7)
    assert cut["type"] == "line_interrupted" and ob.tally.interrupted == 1 and ob.drained
    t = ob.tally
    assert t.received == 5 == t.spoken + t.interrupted + sum(t.dropped.values())
