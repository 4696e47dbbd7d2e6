"""Property-based protocol fuzzer (hypothesis) against a real loopback server.

Each example opens a WebSocket, sends a run of generated messages (protocol messages with
wrong, huge, non-finite or missing fields; garbage text; binary frames; deep nesting; huge
numbers), then ``cancel`` and a marker message. The server must answer the marker (no hung
connection), every frame it sent must be a known event with a known error code, every
``started`` must have had its one ``done``, and nothing may reach the server's error log.
HTTP bodies for ``/v1/audio/speech`` are fuzzed the same way.

CI runs about 2,000 WebSocket messages. A longer run, as a command::

    EMOSTREAM_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest -q -s tests/transport/test_fuzz.py
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import LogRecords

EXAMPLES = int(os.environ.get("EMOSTREAM_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
EVENTS = {"started", "segment", "timestamps", "words", "done", "error", "queue", "line_dropped"}
CODES = {
    "bad_json", "bad_message", "bad_value", "bad_format", "unknown_type", "unknown_voice",
    "voice_unavailable", "unsupported_control", "not_started", "already_started",
    "already_ended", "text_too_long", "empty_text", "binary_not_allowed", "busy",
    "unknown_context", "too_many_contexts", "protocol_mismatch",
}  # fmt: skip
CONTEXTS = ("a", "b", "c")  # the only well-formed context ids drawn (each cancelled at the end)
SENT = {"ws": 0, "http": 0}


@pytest.fixture(scope="module")
def fuzzed(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerThread, LogRecords]]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings_ = Settings(data_dir=str(tmp_path_factory.mktemp("fuzz")), max_text_chars=300)
    handler = LogRecords()
    loggers = [logging.getLogger(n) for n in ("uvicorn", "emostream")]
    for logger in loggers:
        logger.addHandler(handler)
    with ServerThread(create_app(settings_, catalog=VoiceCatalog([joe]))) as srv:
        yield srv, handler
    for logger in loggers:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in handler.records] == []
    print(f"fuzzed {SENT['ws']} WebSocket messages, {SENT['http']} HTTP bodies")


# -- strategies -----------------------------------------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["joe", "", " ", "\ud800", "ref_0", "clone_0123456789abcdef", "false"]),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=6), scalars, max_size=3),
)
fmt = st.one_of(
    values,
    st.fixed_dictionaries(
        {},
        optional={
            "codec": st.one_of(st.sampled_from(["opus", "pcm_s16le", "mp3"]), values),
            "sample_rate": st.one_of(st.sampled_from([16000, 24000, 48000, 44100]), values),
            "bitrate": st.one_of(st.integers(0, 600_000), values),
        },
    ),
)
words = st.text(alphabet=st.sampled_from("abc xyz.,!?'\n1$"), min_size=0, max_size=60)
unicode_text = st.text(max_size=40)  # any code point, lone surrogates included
# v1.1: a well-formed id, a malformed one, or another JSON value (null: no context).
context_ids = st.one_of(
    st.sampled_from(CONTEXTS),
    st.sampled_from(["", "x" * 65, "a b", "\ud800", "é", "a\n"]),
    st.none(),
    st.integers(-3, 3),
    st.booleans(),
    st.lists(scalars, max_size=2),
)
fields = {
    "context_id": context_ids,
    "voice": values,
    "speed": st.one_of(st.floats(0.4, 2.1), values),
    "emotion": st.one_of(st.sampled_from(["neutral", "happy"]), values),
    "intensity": values,
    "pitch_shift": values,
    "energy": values,
    "prompt": values,
    "timestamps": values,
    "word_timestamps": values,
    "format": fmt,
    "reference_audio": st.one_of(st.sampled_from(["UklGRg==", "é", "!!"]), values),
}
speakable_start = st.fixed_dictionaries(  # mostly valid: gets to synthesis, with odd numbers
    {"type": st.just("start")},
    optional={"speed": st.one_of(st.floats(0.5, 2.0), st.floats()), "format": fmt,
              "timestamps": st.booleans(), "word_timestamps": st.booleans(),
              "context_id": context_ids},
)  # fmt: skip
protocol = st.one_of(
    st.fixed_dictionaries({"type": st.just("start")}, optional=fields),
    speakable_start,
    st.fixed_dictionaries(
        {"type": st.just("text"), "text": st.one_of(words, unicode_text, values)},
        optional={"context_id": context_ids},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["flush", "end", "cancel", "clear"])},
        optional={"context_id": context_ids},
    ),
    st.fixed_dictionaries(  # queued lines (danmaku), with start fields
        {"type": st.just("line"), "text": st.one_of(words, unicode_text, values)},
        optional={
            **fields,
            "id": st.one_of(st.text(max_size=8), values),
            "priority": st.one_of(st.integers(-3, 3), values),
            "ttl_ms": st.one_of(st.floats(0, 3000), values),
        },
    ),
    st.fixed_dictionaries({"type": values}, optional={"text": values}),
).map(lambda m: json.dumps(m, allow_nan=True))
raw = st.one_of(
    st.text(max_size=100),
    st.integers(1, 1500).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 40).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(19, 5000).map(lambda n: '{"type":"start","speed":' + "9" * n + "}"),
    st.sampled_from(['{"type":"start","format":{"sample_rate":1e400}}', "NaN", "null", "{}"]),
)
WAIT = None  # a pause of 0.15 s in the batch (lets synthesis run before the next frame)
frames = st.one_of(protocol, protocol, protocol, raw, st.binary(max_size=64), st.just(WAIT))


def check_until_marker(ws: Any, marker: str) -> None:
    """Every frame up to the marker's answer is a known event, and every ``started`` has had
    its ``done`` (a context's cancel does not hold the next message: its ``done`` may follow
    the marker)."""
    started = done = 0
    marked = False
    deadline = time.monotonic() + 30
    while not marked or started != done:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "hung connection: the marker was never answered"
        msg = ws.recv(timeout=remaining)
        if isinstance(msg, bytes):
            continue
        event = json.loads(msg)
        assert isinstance(event, dict) and event.get("type") in EVENTS, event
        if event["type"] == "error":
            if event["code"] == "unknown_type" and marker in event["message"]:
                marked = True
                continue
            assert event["code"] in CODES and event["message"], event
        started += event["type"] == "started"
        done += event["type"] == "done"
    assert started == done, (started, done)


@FUZZ
@given(st.lists(frames, min_size=4, max_size=24))
def test_websocket_fuzz(
    fuzzed: tuple[ServerThread, LogRecords], batch: list[str | bytes | None]
) -> None:
    server, _ = fuzzed
    marker = f"fuzz-marker-{SENT['ws']}"
    with connect(server.ws_url, compression=None, max_size=None, open_timeout=10) as ws:
        for frame in batch:
            if frame is WAIT:
                time.sleep(0.15)
                continue
            ws.send(frame)
            SENT["ws"] += 1
        ws.send(json.dumps({"type": "clear"}))  # no queued line starts after the cancel
        ws.send(json.dumps({"type": "cancel"}))
        for context in CONTEXTS:  # v1.1: cancel every context that may be live
            ws.send(json.dumps({"type": "cancel", "context_id": context}))
        ws.send(json.dumps({"type": marker}))
        SENT["ws"] += 3 + len(CONTEXTS)
        check_until_marker(ws, marker)


http_bodies = st.one_of(
    st.fixed_dictionaries(
        {"input": st.one_of(words, unicode_text, values)},
        optional={**fields, "sample_rate": values,
                  "response_format": st.one_of(
                      st.sampled_from(["mp3", "opus", "aac", "flac", "wav", "pcm"]), values),
                  "model": st.one_of(st.sampled_from(["tts-1", "gpt-4o-mini-tts"]), values),
                  "instructions": st.one_of(words, unicode_text, values),
                  "stream_format": st.one_of(st.sampled_from(["audio", "sse"]), values)},
    ).map(lambda m: json.dumps(m, allow_nan=True).encode()),
    raw.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=64),
)  # fmt: skip


@settings(FUZZ, max_examples=max(20, EXAMPLES // 4))
@given(http_bodies)
def test_http_fuzz(fuzzed: tuple[ServerThread, LogRecords], body: bytes) -> None:
    server, _ = fuzzed
    SENT["http"] += 1
    headers = {"content-type": "application/json"}
    r = httpx.post(f"{server.url}/v1/audio/speech", content=body, headers=headers, timeout=30)
    if r.status_code == 200:
        assert len(r.content) > 0
        return
    assert r.status_code in (400, 404, 409, 413, 503), (r.status_code, r.text[:200])
    error = r.json()["error"]
    assert error["code"] in CODES | {"too_large", "model_not_found"} and error["message"]
    assert set(error) >= {"message", "type", "param", "code"}
