"""The reply step against a local OpenAI-compatible endpoint (tests/bridge/fake_chat_model.py)
and a real server on loopback: each line's reply is spoken as it streams (start, text pieces,
end) with the emotion its tag names, highest priority first; an endpoint that fails costs
that line only; and the emotion reaches an EmoStream voice (slow: the shipped model)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge
from emostream.bridge.lines import Backoff, LineParser
from emostream.bridge.reply.client import ReplyOptions
from emostream.bridge.reply.outbox import ReplyOutbox
from emostream.voices.piper_voice import PiperVoice
from tests.bridge.fake_chat_model import FakeChatModel
from tests.bridge.test_danmaku import PCM24, Recorder, make_app, stdin_of
from tests.conftest import ServerThread


@pytest.fixture(scope="module")
def tts(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    with ServerThread(make_app(joe, str(tmp_path_factory.mktemp("reply")))) as srv:
        yield srv


def words(text: str) -> list[str]:
    """A reply as a chat model streams it: a word (with its leading space) per piece."""
    first, *rest = text.split(" ")
    return [first] + [" " + w for w in rest]


def run_bridge(url: str, model: FakeChatModel, lines: list[str], *, fields: dict[str, Any]
               = PCM24, **reply: Any) -> tuple[Recorder, DanmakuBridge, bytes]:  # fmt: skip
    async def go() -> tuple[Recorder, DanmakuBridge, bytes]:
        with ServerThread(model.app) as endpoint:
            rec, audio = Recorder(), io.BytesIO()
            opts = ReplyOptions(url=f"{endpoint.url}/v1", model="fake-1", api_key="sk-test",
                                **{"idle_timeout_s": 2.0, **reply})  # fmt: skip
            b = DanmakuBridge(
                BridgeOptions(url=url, fields=fields, pace_lead_s=1.0), LineParser(ttl_ms=60000),
                ReplyOutbox(fields=fields), emit=rec, audio=audio,
                backoff=Backoff(initial_s=0.1, max_s=0.5), reply=opts,
            )  # fmt: skip
            rc = await asyncio.wait_for(b.run(stdin=stdin_of(*lines)), 120)
            assert rc == 0, rec.events[-3:]
            return rec, b, audio.getvalue()

    return asyncio.run(go())


def test_replies_are_spoken_as_they_stream_highest_priority_first(
    tts: ServerThread, tmp_path: Path
) -> None:
    system = "You are a test host. Start with [emotion]."
    model = FakeChatModel([
        ["[", "hap", "py]"] + words(" Thank you so much for the gift, that is really kind."),
        words("[sad] Sorry to hear that, I hope tomorrow is better."),
        words("[smug] I knew you would ask that."),
    ])  # fmt: skip
    rec, b, audio = run_bridge(tts.ws_url, model, [
        json.dumps({"text": "my day was bad", "user": "bo", "id": "m1"}),
        json.dumps({"text": "sent a rose", "user": "ann", "id": "g1", "priority": 5}),
        json.dumps({"text": "did you know?", "user": "cy", "id": "m2"}),
    ], system=system, history=2)  # fmt: skip
    # the gift was answered first, then the others in order; each request is well formed
    asked = [r["messages"][-1]["content"] for r in model.requests]
    assert asked[0] == "ann: sent a rose" and asked[1:] == ["bo: my day was bad",
                                                            "cy: did you know?"]  # fmt: skip
    first = model.requests[0]
    assert first["model"] == "fake-1" and first["stream"] is True and first["max_tokens"] == 150
    assert first["messages"][0] == {"role": "system", "content": system}
    assert model.headers[0]["authorization"] == "Bearer sk-test"
    # history: the earlier exchange goes with the next line (the tag kept, as the model wrote it)
    assert model.requests[1]["messages"][1:3] == [
        {"role": "user", "content": "ann: sent a rose"},
        {"role": "assistant", "content": "[happy] Thank you so much for the gift, that is "
                                         "really kind."}]  # fmt: skip
    spoken = [e for e in rec.of("reply") if e["event"] == "spoken"]
    assert [e["id"] for e in spoken] == ["g1", "m1", "m2"]
    assert [e["emotion"] for e in spoken] == ["happy", "sad", "neutral"]
    assert spoken[0]["text"] == "Thank you so much for the gift, that is really kind."
    assert all(e["first_audio_ms"] > 0 and e["first_token_ms"] > 0 for e in spoken)
    # joe takes no emotion: said once, and every reply was spoken anyway
    warnings = [e["message"] for e in rec.of("reply") if e["event"] == "warning"]
    assert sum("does not take emotion" in w for w in warnings) == 1
    assert sum("[smug]" in w for w in warnings) == 1
    # the words reached the server as pieces of one utterance: cut between words, not whole
    segments = [e["text"] for e in rec.of("segment")]
    assert "".join(segments).replace(" ", "").startswith("Thankyousomuchforthegift")
    assert len(rec.of("started")) == 3 and len([e for e in rec.of("done")
                                                if not e.get("cancelled")]) == 3  # fmt: skip
    t = b.outbox.tally
    assert t.received == 3 == t.spoken and len(audio) > 24000 * 2


def test_an_endpoint_that_fails_costs_that_line_only(tts: ServerThread) -> None:
    model = FakeChatModel([
        ("status", 500),
        ("garbage",),
        ("error_after", 6, words("[angry] Hey, that was not nice at all, please stop.")),
        ("stall", ["[happy]"]),
        words("[surprised] Still here and talking."),
    ])  # fmt: skip
    rec, b, _ = run_bridge(tts.ws_url, model, ["one", "two", "three", "four", "five"],
                           idle_timeout_s=1.0)  # fmt: skip
    failed = [e for e in rec.of("reply") if e["event"] == "failed"]
    assert len(failed) == 4
    assert "HTTP 500" in failed[0]["message"] and "model is down" in failed[0]["message"]
    assert "not JSON" in failed[1]["message"] and "overloaded" in failed[2]["message"]
    drops = [e for e in rec.of("line_dropped")]
    assert [(d["id"], d["reason"]) for d in drops] == [("b1", "reply_failed"),
                                                       ("b2", "reply_failed"),
                                                       ("b4", "reply_failed")]  # fmt: skip
    spoken = {e["id"]: e["text"] for e in rec.of("reply") if e["event"] == "spoken"}
    assert spoken == {"b3": "Hey, that was not nice", "b5": "Still here and talking."}
    t = b.outbox.tally
    assert t.received == 5 == t.spoken + sum(t.dropped.values())


@pytest.mark.slow
def test_the_tag_sets_the_emotion_of_an_emostream_voice(joe: PiperVoice, tmp_path: Path) -> None:
    """The same words with [sad] and [happy] come out differently from af_heart (sad speaks
    slower: longer audio); no warning, the voice takes emotion."""
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog, load_acoustic_family

    settings = Settings(data_dir=str(tmp_path), acoustic="on")
    family = load_acoustic_family(settings)
    assert family is not None
    catalog = VoiceCatalog([joe, *[v for v in family.stock_voices() if v.info.id == "af_heart"]])
    catalog.family = family
    text = "I really did not expect that to happen today."
    model = FakeChatModel([words(f"[sad] {text}"), words(f"[happy] {text}"),
                           words(f"[neutral] {text}")])  # fmt: skip
    fields = {**PCM24, "voice": "af_heart", "cache": False}
    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        rec, _, _ = run_bridge(srv.ws_url, model, ["a", "b", "c"], fields=fields)
    assert not [e for e in rec.of("reply") if e["event"] == "warning"]
    assert all(e["controls"]["emotion"] for e in rec.of("started"))
    spoken = [e for e in rec.of("reply") if e["event"] == "spoken"]
    assert [e["emotion"] for e in spoken] == ["sad", "happy", "neutral"]
    sad, happy, neutral = (e["audio_ms"] for e in rec.of("done"))
    assert sad > neutral * 1.1 and sad > happy * 1.1, (sad, happy, neutral)
