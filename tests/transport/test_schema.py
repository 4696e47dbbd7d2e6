"""The protocol's JSON Schema and the server agree.

* The schema is valid JSON Schema (draft 2020-12), versioned, and shipped as package data.
* Field lists: every field the server reads from each client message is in the schema, and
  every field the schema names is read by the server (recorded on a sans-I/O connection; the
  ``POST /v1/audio/speech`` body on the real server).
* Verdicts: on the hostile corpus, per-field probes and generated messages (the fuzzer's
  strategies), a message the schema refuses is refused by the server with a message-level code
  (``bad_value``, ``bad_format``, ``bad_message``, ``unknown_type``) and a message it accepts
  is not: compared on a connection in the state the message needs, with a voice that takes
  every control (voice and state errors are not the schema's business).
* What the server writes: every event of a real session (v1 and v1.1, word timestamps,
  timestamps, the phrase cache, lines expiring, cleared and spoken, errors) is valid and names
  no field the schema lacks; v1.1 binary frames decode with the schema's header layout.
* The constants the schema shares with the codec, the models and the frame codec are equal,
  and the server's v1 error messages are unchanged by deriving them from the schema.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import struct
import tomllib
from pathlib import Path
from typing import Any

import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from emostream.codec.encoders import RESPONSE_FORMATS
from emostream.codec.packetizer import FRAME_MS, SAMPLE_RATES, FormatError, OutputFormat
from emostream.text.emotion import EMOTIONS
from emostream.text.languages import LANGUAGES
from emostream.transport import schema
from emostream.transport.messages import VOICE_LANGUAGES, ProtocolError, load_message
from emostream.transport.websocket import frames
from emostream.transport.websocket.contexts import ContextRouter
from emostream.transport.websocket.protocol import SendError, SessionProtocol
from emostream.voices.base import ALL_CONTROLS, VoiceInfo
from tests.conftest import ServerThread
from tests.protocol_schema import (
    check_client,
    check_event,
    errors,
    has_non_finite,
    parse,
    schema_accepts,
)
from tests.transport.test_fuzz import protocol as fuzz_messages
from tests.transport.test_fuzz import raw as fuzz_raw
from tests.transport.test_hostile import HOSTILE_WS
from tests.transport.websocket.test_protocol import BIG

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "server" / "emostream" / "transport" / "schema" / "protocol.schema.json"
# Refusals of a message's own shape; the rest depend on the voice, the state or the settings.
MESSAGE_CODES = {"bad_json", "bad_message", "bad_value", "bad_format", "unknown_type"}


# -- the schema itself --------------------------------------------------------------------
def test_the_schema_is_valid_versioned_and_shipped() -> None:
    doc = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(doc)
    assert doc == schema.schema()  # what the package loads is the file
    assert doc["x-protocol-version"] == schema.PROTOCOL_VERSION == "1.1"
    assert doc["$id"].endswith(":" + schema.PROTOCOL_VERSION)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["emostream"]
    rel = SCHEMA_FILE.relative_to(ROOT / "server" / "emostream")
    assert any(rel.match(g) for g in globs), globs


def test_constants_shared_with_the_codec_models_and_frames() -> None:
    assert schema.choices("controls", "emotion") == EMOTIONS
    assert set(schema.choices("format", "sample_rate")) == set(SAMPLE_RATES)
    assert set(schema.choices("speech_request", "sample_rate")) == set(SAMPLE_RATES)
    assert schema.choices("speech_request", "response_format") == tuple(RESPONSE_FORMATS)
    lo, hi = schema.int_range("format", "bitrate")
    OutputFormat(bitrate=lo), OutputFormat(bitrate=hi)
    for bad in (lo - 1, hi + 1):
        with pytest.raises(FormatError):
            OutputFormat(bitrate=bad)
    started = schema.definition("started")["properties"]
    assert started["frame_ms"]["const"] == FRAME_MS
    assert set(started["controls"]["required"]) == set(ALL_CONTROLS)
    assert VOICE_LANGUAGES == LANGUAGES == tuple(started["voices"]["required"])
    assert tuple(schema.choices("segment", "language")) == LANGUAGES
    header = schema.schema()["x-binary-frame"]
    assert header["header_bytes"] == frames.HEADER_BYTES == header["payload_offset"]
    assert header["byte_order"] == "big" and frames.HEADER.format.startswith(">")
    sizes = {"B": 1, "H": 2, "I": 4}
    offset = 0
    for fld, code in zip(header["fields"], frames.HEADER.format[1:], strict=True):
        assert (fld["offset"], fld["size"]) == (offset, sizes[code]), fld
        offset += fld["size"]
    by_name = {f["name"]: f for f in header["fields"]}
    assert by_name["version"]["const"] == frames.FRAME_VERSION
    assert by_name["channel"]["maximum"] == frames.MAX_CHANNEL
    assert by_name["sequence"]["maximum"] == frames.MAX_SEQUENCE


@pytest.mark.parametrize(
    "raw,message",
    [  # v1's words, byte for byte, now that the numbers come from the schema
        ('{"type":"start","speed":3}', "'speed' must be a finite number from 0.5 to 2.0"),
        ('{"type":"start","pitch_shift":13}',
         "'pitch_shift' must be a finite number from -12.0 to 12.0"),
        ('{"type":"start","energy":"x"}', "'energy' must be a number"),
        ('{"type":"start","intensity":2}', "'intensity' must be a finite number from 0.0 to 1.0"),
        ('{"type":"start","emotion":"bored"}', ("'emotion' must be one of ['neutral', 'happy', "
         "'angry', 'sad', 'surprised', 'disgusted', 'fearful']")),
        ('{"type":"start","prompt":""}',
         "'prompt' must be a non-empty string of at most 500 characters"),
        ('{"type":"start","format":{"codec":"mp3"}}',
         "'format.codec' must be 'opus' or 'pcm_s16le'"),
        ('{"type":"line","text":"hi","ttl_ms":0}',
         "'ttl_ms' must be a finite number from 1.0 to 600000.0"),
        ('{"type":"line","text":"hi","priority":1001}', "'priority' must be from -1000 to 1000"),
        ('{"type":"line","text":"hi","id":""}',
         "'id' must be a non-empty string of at most 128 characters"),
        ('{"type":"start","context_id":""}',
         "'context_id' must be a string of 1-64 characters from A-Z a-z 0-9 . _ : -"),
        ('{"type":"start","x":' + "[" * 20 + "]" * 20 + "}", "JSON nested more than 16 levels"),
    ],
)  # fmt: skip
def test_v1_error_messages_are_unchanged(raw: str, message: str) -> None:
    try:
        msg = load_message(raw)
    except ProtocolError as exc:
        assert exc.message == message
        return
    (routed,) = connection().receive_message(msg)
    assert isinstance(routed.action, SendError) and routed.action.message == message


# -- a sans-I/O connection that refuses only what the message itself gets wrong --------------
def any_voice(voice_id: str) -> VoiceInfo:
    return VoiceInfo(id=voice_id, model="test", language="en-US", sample_rate=24000,
                     controls=ALL_CONTROLS)  # fmt: skip


def connection() -> ContextRouter:
    return ContextRouter(lambda: SessionProtocol(lookup_voice=any_voice, max_text_chars=10**6))


def server_accepts(raw: str) -> bool:
    """Whether the server takes ``raw`` (no message-level error) on a fresh connection in the
    state the message needs: an open utterance (of its context) for text/flush/end/cancel."""
    try:
        msg = load_message(raw)
    except ProtocolError:
        return False
    router = connection()
    if msg.get("type") in ("text", "flush", "end", "cancel"):
        opener: dict[str, Any] = {"type": "start"}
        if isinstance(msg.get("context_id"), str):
            opener["context_id"] = msg["context_id"]
        router.receive_message(opener)
    codes = [r.action.code for r in router.receive_message(msg) if isinstance(r.action, SendError)]
    if any(c in MESSAGE_CODES for c in codes):
        return False
    ref = msg.get("reference_audio") if msg.get("type") == "start" else None
    if ref is not None:  # the WebSocket layer decodes the clip (ws._inline_reference)
        try:
            base64.b64decode(ref, validate=True)
        except (ValueError, binascii.Error):
            return False
    return True


def same_verdict(raw: str) -> None:
    parsed = parse(raw)
    if has_non_finite(parsed):  # not JSON: the schema has no say (the server refuses them
        return  # wherever it reads a number: test_non_finite_numbers_are_refused)
    assert schema_accepts(parsed) == server_accepts(raw), (
        raw[:200], errors(parsed, strict=False) if isinstance(parsed, dict) else "not an object",
    )  # fmt: skip


# -- field lists ------------------------------------------------------------------------------
class Reads(dict[str, Any]):
    """A message that records every field read from it (nested objects as ``outer.inner``)."""

    def __init__(self, data: dict[str, Any], log: set[str], prefix: str = "") -> None:
        super().__init__(data)
        self.log, self.prefix = log, prefix

    def _wrap(self, key: str, value: Any) -> Any:
        self.log.add(self.prefix + key)
        return Reads(value, self.log, f"{self.prefix}{key}.") if isinstance(value, dict) else value

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self._wrap(key, super().get(key, default))

    def __getitem__(self, key: str) -> Any:
        return self._wrap(key, super().__getitem__(key))

    def __contains__(self, key: object) -> bool:
        self.log.add(self.prefix + str(key))
        return super().__contains__(key)


FULL_START = {"voice": "v", "speed": 1.1, "pitch_shift": 1, "energy": 1.2, "emotion": "happy",
              "intensity": 0.5, "prompt": "a bit sad", "cache": False, "timestamps": True,
              "word_timestamps": True, "voices": {"en": "v", "zh": None},
              "format": {"codec": "opus", "sample_rate": 24000, "bitrate": 24000}}  # fmt: skip


def schema_fields(name: str) -> set[str]:
    out = set()
    for key in schema.fields(name):
        out.add(key)
        if key == "format":
            out |= {f"format.{k}" for k in schema.definition("format")["properties"]}
    return out


def fields_read(msg: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    log: set[str] = set()
    build = SessionProtocol._build_start

    def recording_build(self: SessionProtocol, m: dict[str, Any], sid: str) -> Any:
        return build(self, m if isinstance(m, Reads) else Reads(m, log), sid)

    router = connection()
    if msg["type"] in ("text", "flush", "end", "cancel"):
        router.receive_message({"type": "start", "context_id": "c"})
    monkeypatch.setattr(SessionProtocol, "_build_start", recording_build)
    routed = router.receive_message(Reads(msg, log))
    assert not [r for r in routed if isinstance(r.action, SendError)
                and r.action.code in MESSAGE_CODES], routed  # fmt: skip
    return log


@pytest.mark.parametrize(
    "msg",
    [
        {"type": "start", "context_id": "c", "reference_audio": "UklGRg==", **FULL_START},
        {"type": "line", "context_id": "c", "text": "hi", "id": "m1", "priority": 1,
         "ttl_ms": 900, "reference_audio": None, **FULL_START},
        {"type": "text", "context_id": "c", "text": "Hello."},
        {"type": "flush", "context_id": "c"},
        {"type": "end", "context_id": "c", "text": "ignored"},
        {"type": "cancel", "context_id": "c"},
        {"type": "clear"},
    ],
    ids=lambda m: m["type"],
)  # fmt: skip
def test_the_server_reads_exactly_the_schemas_fields(
    msg: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    read = fields_read(msg, monkeypatch)
    assert read == schema_fields(msg["type"]), (sorted(read), sorted(schema_fields(msg["type"])))


# -- verdicts --------------------------------------------------------------------------------
def probes() -> list[dict[str, Any]]:
    """Each start and line field with values around its type and bounds."""
    odd: list[Any] = [None, True, 0, -1, 0.5, 1, 2, 2.5, 12, -12, 13, 600000, 600001, 1000,
                      1001, -1001, 3.5, "", " ", "x", "joe", "happy", "opus", "pcm_s16le", [],
                      {}, ["x"], {"codec": "opus"}, "UklGRg==", "UklGRg", "a" * 129,
                      "p" * 500, "p" * 501, 48000, 48000.0, 44100, 5999, 6000, 256000,
                      256001]  # fmt: skip
    out: list[dict[str, Any]] = []
    for kind in ("start", "line"):
        base: dict[str, Any] = {"type": kind} if kind == "start" else {"type": kind, "text": "hi"}
        for key in schema.fields(kind):
            if key == "type":
                continue
            for value in odd:
                out.append({**base, key: value})
        for fkey in ("codec", "sample_rate", "bitrate", "other"):
            for value in odd:
                out.append({**base, "format": {fkey: value}})
    for kind in ("text", "flush", "end", "cancel", "clear"):
        for value in odd:
            out.append({"type": kind, "text": value})
            out.append({"type": kind, "context_id": value})
    return out


HOSTILE = [raw for raw, _ in HOSTILE_WS] + [
    '{"type": "start", "x": ' + "[" * 100 + "]" * 100 + "}",
    '{"type": "start", "\\ud800": 1}',
    '{"type": "start", "prompt": "sad \\udfff"}',
    '{"type": "start", "format": {"bitrate": ' + BIG + "}}",
    '{"type": "line", "text": "hi", "priority": ' + BIG + "}",
    '{"type": "start", "extra": "ignored", "format": {"extra": 1}}',
    "[1, 2]", "null", "{not json", '{"text": "no type"}', '{"type": 5}',
]  # fmt: skip


@pytest.mark.parametrize("raw", HOSTILE + [json.dumps(p) for p in probes()])
def test_schema_and_server_agree_on_the_corpus(raw: str) -> None:
    same_verdict(raw)


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(st.one_of(fuzz_messages, fuzz_raw))
def test_schema_and_server_agree_on_fuzzed_messages(raw: str) -> None:
    same_verdict(raw)


@pytest.mark.parametrize("key", ["speed", "pitch_shift", "energy", "intensity", "ttl_ms"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(key: str, value: str) -> None:
    raw = f'{{"type": "line", "text": "hi", "{key}": {value}}}'
    assert not server_accepts(raw)


# -- what the server writes --------------------------------------------------------------------
def connect(url: str) -> Any:
    return websockets.connect(url, compression=None, max_size=None)


async def events_until(ws: Any, done: int, seen: list[dict[str, Any]], frames_: list[bytes],
                       until: set[str] | None = None) -> None:  # fmt: skip
    """Collect until ``done`` done events (and every event type in ``until``) arrived."""
    count = 0
    want = set(until or ())
    async with asyncio.timeout(60):
        while count < done or want:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                frames_.append(msg)
                continue
            event = json.loads(msg)
            seen.append(event)
            count += event["type"] == "done"
            want.discard(event["type"])


async def lines_settled(ws: Any, ids: set[str], seen: list[dict[str, Any]]) -> None:
    """Collect until every line in ``ids`` was spoken (its done) or dropped."""
    left = set(ids)
    async with asyncio.timeout(60):
        while left:
            msg = await ws.recv()
            if isinstance(msg, str):
                seen.append(json.loads(msg))
                if seen[-1]["type"] in ("done", "line_dropped"):
                    left.discard(seen[-1].get("id"))


def read_header(frame: bytes) -> dict[str, int]:
    """A v1.1 frame's header fields, read with the schema's layout alone."""
    layout = schema.schema()["x-binary-frame"]
    return {f["name"]: int.from_bytes(frame[f["offset"]:f["offset"] + f["size"]], "big")
            for f in layout["fields"]}  # fmt: skip


async def test_every_event_of_a_session_is_in_the_schema(server: ServerThread) -> None:
    seen: list[dict[str, Any]] = []
    audio: list[bytes] = []
    start = {"type": "start", "timestamps": True, "word_timestamps": True,
             "format": {"codec": "pcm_s16le", "sample_rate": 24000}}  # fmt: skip
    async with connect(server.ws_url) as ws:  # v1
        for _ in range(2):  # the second from the phrase cache
            await ws.send(json.dumps(start))
            await ws.send(json.dumps({"type": "text", "text": "Hello there, friend."}))
            await ws.send(json.dumps({"type": "end"}))
            await events_until(ws, 1, seen, audio)
        await ws.send(json.dumps({"type": "dance"}))
        await ws.send(json.dumps({"type": "line", "text": "Gone soon.", "id": "L0", "ttl_ms": 1}))
        await ws.send(json.dumps({"type": "line", "text": "One line.", "id": "L1"}))
        await ws.send(json.dumps({"type": "line", "text": "Cleared.", "id": "L2"}))
        await ws.send(json.dumps({"type": "clear"}))
        await ws.send(json.dumps({"type": "line", "text": "Spoken.", "id": "L3",
                                  "voices": {"en": "joe"}}))  # fmt: skip
        await ws.send(json.dumps({"type": "line", "text": "", "id": "L4"}))  # refused
        await ws.send(json.dumps({"type": "line", "text": "x", "voices": {"zh": "joe"}}))
        await lines_settled(ws, {"L0", "L1", "L2", "L3"}, seen)
    async with connect(server.ws_url) as ws:  # v1.1
        for cid in ("a", "b"):
            await ws.send(json.dumps({**start, "context_id": cid}))
            await ws.send(json.dumps({"type": "text", "context_id": cid, "text": f"Turn {cid}."}))
        await ws.send(json.dumps({"type": "end", "context_id": "a"}))
        await ws.send(json.dumps({"type": "cancel", "context_id": "b"}))
        await ws.send(json.dumps({"type": "end", "context_id": "nobody"}))
        v11: list[dict[str, Any]] = []
        v11_frames: list[bytes] = []
        await events_until(ws, 2, v11, v11_frames)
    for event in seen + v11:
        check_event(event)
    types = {e["type"] for e in seen + v11}
    assert types == set(schema.definition("server_event")["properties"]["type"]["enum"]), types
    assert {e["code"] for e in seen + v11 if e["type"] == "error"} >= {
        "unknown_type",
        "unknown_context",
        "unsupported_language",
    }
    assert {(e["voice"], e["language"]) for e in seen if "language" in e} == {("joe", "en")}
    assert {e["reason"] for e in seen if e["type"] == "line_dropped"} >= {"expired"}
    dones = [e for e in seen if e["type"] == "done"]
    assert dones[1].get("cached") is True and "words_sent" in dones[0]  # cache, word report
    assert any(e.get("id") == "L3" for e in dones)
    channels = {e["context_id"]: e["channel"] for e in v11 if e["type"] == "started"}
    assert set(channels) == {"a", "b"} and v11_frames
    sequences: dict[int, list[int]] = {}
    for frame in v11_frames:
        head = read_header(frame)
        assert head["version"] == 1 and head["flags"] == 0, head
        assert head["channel"] in channels.values()
        sequences.setdefault(head["channel"], []).append(head["sequence"])
        payload = frame[schema.schema()["x-binary-frame"]["payload_offset"] :]
        assert len(payload) == 24000 * 20 // 1000 * 2  # 20 ms of s16le at 24 kHz
    for seq in sequences.values():
        assert seq == list(range(len(seq)))
    assert struct.calcsize(">BBHI") == 8


async def test_the_speech_endpoint_reads_exactly_the_schemas_fields(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    import emostream.transport.speech_request as reader

    log: set[str] = set()
    parse_body = reader.load_message
    monkeypatch.setattr(reader, "load_message", lambda raw: Reads(parse_body(raw), log))
    body = {"input": "Hi.", "voice": "joe", "speed": 1.1, "pitch_shift": 0, "energy": 1,
            "emotion": "neutral", "intensity": 1, "prompt": "calm", "cache": False,
            "response_format": "wav", "sample_rate": 16000, "model": "tts-1",
            "instructions": "calmly", "stream_format": "audio", "voices": {"en": "joe"}}  # fmt: skip
    check_client(body, "speech_request")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post("/v1/audio/speech", json=body)
    assert r.status_code == 200, r.text[:200]
    assert log == set(schema.fields("speech_request")), sorted(log)
