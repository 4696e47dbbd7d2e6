"""A text that crashes espeak-ng costs its own utterance, never the server: the reported
inputs are spoken, and a crash forced inside the phonemiser (its process killed by SIGSEGV
on a marked word: :mod:`tests.text.crashing_worker`) gives that stream an ``internal`` error
while another stream speaking meanwhile finishes whole (:mod:`emostream.text.espeak`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from emostream.text import espeak
from tests.conftest import ServerThread
from tests.text.crashing_worker import ARGV, CRASH_WORD
from tests.transport.conftest import collect

CRASHERS = ["a." * 100, "x.y." * 50]
LONG = (
    "This stream keeps talking while another one breaks the phonemiser. "
    "It has several sentences, so that it is still speaking when the crash comes. "
    "Nothing it says should be lost, and its done event must arrive as usual."
)


@pytest.fixture
def crashing() -> Iterator[espeak.IsolatedEspeak]:
    """The server's espeak-ng process replaced by one that dies on :data:`CRASH_WORD`."""
    bridge = espeak.install()
    argv = bridge.argv
    bridge.argv = ARGV
    bridge.close()  # the next call starts the crashing worker
    yield bridge
    bridge.argv = argv
    bridge.close()


def connect(url: str) -> Any:
    return websockets.connect(url, compression=None, max_size=None)


async def speak(url: str, text: str) -> tuple[list[dict[str, Any]], list[bytes]]:
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "start", "voice": "joe"}))
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        return await collect(ws, until="done", timeout=120)


@pytest.mark.parametrize("text", CRASHERS)
def test_reported_inputs_are_spoken_over_http(server: ServerThread, text: str) -> None:
    r = httpx.post(
        f"{server.url}/v1/audio/speech",
        json={"input": text, "voice": "joe", "response_format": "pcm"},
        timeout=120,
    )
    assert r.status_code == 200
    assert len(r.content) > 24000  # well over half a second of 24 kHz s16 audio


@pytest.mark.parametrize("text", CRASHERS)
def test_reported_inputs_are_spoken_over_the_socket(server: ServerThread, text: str) -> None:
    events, audio = asyncio.run(speak(server.ws_url, text))
    assert [e["type"] for e in events if e["type"] == "error"] == []
    assert events[-1]["type"] == "done" and audio


def test_a_forced_crash_costs_only_its_utterance(
    server: ServerThread, crashing: espeak.IsolatedEspeak, server_log: list[Any]
) -> None:
    crashes = crashing.crashes

    async def scenario() -> tuple[Any, Any, Any]:
        async with connect(server.ws_url) as calm:
            await calm.send(json.dumps({"type": "start", "voice": "joe"}))
            await calm.send(json.dumps({"type": "text", "text": LONG}))
            await calm.send(json.dumps({"type": "end"}))
            first = await collect(calm, until="segment", timeout=60)
            crashed = await speak(server.ws_url, f"Please {CRASH_WORD} now.")
            rest = await collect(calm, until="done", timeout=120)
        return first, crashed, rest

    first, crashed, rest = asyncio.run(scenario())
    errors = [e for e in crashed[0] if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["internal"]
    assert "espeak-ng" in errors[0]["message"]
    events = first[0] + rest[0]
    assert [e["type"] for e in events if e["type"] == "error"] == []
    done = rest[0][-1]
    assert done["type"] == "done" and not done.get("cancelled")
    segments = [e for e in events if e["type"] == "segment"]
    assert len(segments) == 3  # every sentence of the calm stream was spoken
    # the server goes on: a new utterance after the crash
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    after, audio = asyncio.run(speak(server.ws_url, "Still here."))
    assert after[-1]["type"] == "done" and audio
    assert crashing.crashes == crashes + 1
    assert [r for r in server_log if r.exc_info] == []  # warnings, no traceback


def test_a_forced_crash_over_http_ends_that_response_only(
    server: ServerThread, crashing: espeak.IsolatedEspeak, server_log: list[Any]
) -> None:
    with pytest.raises(httpx.HTTPError):
        r = httpx.post(
            f"{server.url}/v1/audio/speech",
            json={"input": f"Please {CRASH_WORD} now.", "voice": "joe", "response_format": "pcm"},
            timeout=60,
        )
        r.raise_for_status()  # refused before any audio, or cut (the body never completes)
    assert [r for r in server_log if r.exc_info] == []  # warnings, no traceback
    assert any("espeak-ng died of SIGSEGV" in r.getMessage() for r in server_log)
    ok = httpx.post(
        f"{server.url}/v1/audio/speech", json={"input": "Still here.", "voice": "joe"}, timeout=60
    )
    assert ok.status_code == 200 and ok.content
