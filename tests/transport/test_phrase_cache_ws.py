"""The phrase cache over the real WebSocket and HTTP (joe on a loopback server)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import websockets

from tests.conftest import ServerThread
from tests.transport.conftest import collect


def connect(server: ServerThread) -> Any:
    return websockets.connect(server.ws_url, compression=None, max_size=None)


async def speak(
    ws: Any, text: str, **start: Any
) -> tuple[list[dict[str, Any]], list[bytes], float]:
    """One utterance (start, text, end back to back); events, audio, ms to the first audio."""
    t0 = time.perf_counter()
    await ws.send(json.dumps({"type": "start", **start}))
    await ws.send(json.dumps({"type": "text", "text": text}))
    await ws.send(json.dumps({"type": "end"}))
    first = None
    events: list[dict[str, Any]] = []
    audio: list[bytes] = []
    while True:
        msg = await ws.recv()
        if isinstance(msg, bytes):
            first = first or time.perf_counter()
            audio.append(msg)
            continue
        events.append(json.loads(msg))
        if events[-1]["type"] == "done":
            break
    return events, audio, 1000 * ((first or t0) - t0)


def _stable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without what differs between two runs of the same utterance."""
    out = []
    for e in events:
        e = dict(e)
        for key in ("stream_id", "first_audio_ms", "rtf", "cached"):
            e.pop(key, None)
        out.append(e)
    return out


def metric(server: ServerThread, name: str, **labels: str) -> float:
    body = urllib.request.urlopen(server.url + "/metrics", timeout=10).read().decode()
    want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
    for line in body.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


async def test_a_repeated_reply_is_replayed_byte_for_byte(server: ServerThread) -> None:
    text = "Thanks for the follow, and welcome to the phrase cache test!"
    hits = metric(server, "emostream_phrase_cache_lookups_total", result="memory")
    async with connect(server) as ws:
        start = {"word_timestamps": True, "timestamps": True}
        live_events, live_audio, live_ms = await speak(ws, text, **start)
        cached_events, cached_audio, cached_ms = await speak(ws, text, **start)
    assert "cached" not in live_events[-1] and cached_events[-1]["cached"] is True
    assert cached_audio == live_audio and len(live_audio) > 50
    assert _stable(cached_events) == _stable(live_events)
    kinds = [e["type"] for e in cached_events]
    assert kinds[:4] == ["started", "segment", "timestamps", "words"] and kinds[-1] == "done"
    assert cached_events[-1]["words_sent"] == live_events[-1]["words_sent"]
    assert cached_ms < live_ms  # no model call before the first packet
    assert metric(server, "emostream_phrase_cache_lookups_total", result="memory") == hits + 1


async def test_other_format_or_controls_miss_and_cache_false_bypasses(
    server: ServerThread,
) -> None:
    text = "A line spoken in several formats for the cache test."
    async with connect(server) as ws:
        events, opus48, _ = await speak(ws, text)
        assert "cached" not in events[-1]
        for start in [
            {"format": {"codec": "opus", "sample_rate": 24000}},
            {"format": {"codec": "pcm_s16le", "sample_rate": 48000}},
            {"speed": 1.2},
        ]:
            events, audio, _ = await speak(ws, text, **start)
            assert "cached" not in events[-1], start
            assert audio != opus48
        events, audio, _ = await speak(ws, text, cache=False)
        assert "cached" not in events[-1]
        events, audio, _ = await speak(ws, text, speed=1.2)
        assert events[-1]["cached"] is True
        await ws.send(json.dumps({"type": "start", "cache": "no"}))
        error = json.loads(await ws.recv())
        assert error["code"] == "bad_value" and "'cache'" in error["message"]


async def test_a_cancelled_reply_is_not_cached(server: ServerThread) -> None:
    text = "This reply is cut off by the listener. " * 4
    skipped = metric(server, "emostream_phrase_cache_skipped_total", reason="incomplete")
    async with connect(server) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        while not isinstance(await ws.recv(), bytes):
            pass
        await ws.send(json.dumps({"type": "cancel"}))
        events, _ = await collect(ws)
        assert events[-1]["cancelled"] is True
        events, audio, _ = await speak(ws, text)
        assert "cached" not in events[-1] and audio  # spoken live again
        events, _, _ = await speak(ws, text)
        assert events[-1]["cached"] is True  # the complete one was kept
    assert metric(server, "emostream_phrase_cache_skipped_total", reason="incomplete") >= (
        skipped + 1
    )


def test_http_speech_is_cached_too(server: ServerThread) -> None:
    body = json.dumps({"input": "Cached over plain HTTP as well.", "response_format": "wav"})

    def post() -> bytes:
        req = urllib.request.Request(
            server.url + "/v1/audio/speech", data=body.encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            data: bytes = resp.read()
            return data

    hits = metric(server, "emostream_phrase_cache_lookups_total", result="memory")
    first, second = post(), post()
    assert first == second and len(first) > 10000
    assert metric(server, "emostream_phrase_cache_lookups_total", result="memory") == hits + 1
