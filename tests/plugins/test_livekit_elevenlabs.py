"""LiveKit's own ElevenLabs plugin (``livekit-plugins-elevenlabs``), unchanged but for its
``base_url``, against a live server's ElevenLabs-compatible multi-context WebSocket: a turn
(audio, timed words), a turn cut off by closing its stream (what an AgentSession does on
barge-in) and the turn after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import ServerThread
from tests.plugins.conftest import LONG_TEXT, import_framework

import_framework("livekit.agents")
elevenlabs = import_framework("livekit.plugins.elevenlabs")

import aiohttp
from livekit import rtc
from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT

RATE = 22050


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def make_tts(server: ServerThread, session: aiohttp.ClientSession) -> Any:
    return elevenlabs.TTS(voice_id="joe", api_key="unused", base_url=f"{server.url}/v1",
                          encoding=f"pcm_{RATE}", http_session=session)  # fmt: skip


def seconds(frames: list[rtc.AudioFrame]) -> float:
    return sum(f.samples_per_channel for f in frames) / RATE


async def test_a_turn_a_cut_off_turn_and_the_next(
    server: ServerThread, session: aiohttp.ClientSession
) -> None:
    tts = make_tts(server, session)
    try:
        frames: list[rtc.AudioFrame] = []
        timed: list[Any] = []
        async with tts.stream() as stream:
            stream.push_text("Hello from LiveKit's own ElevenLabs plugin. ")
            stream.push_text("It runs on an EmoStream server.")
            stream.flush()
            stream.end_input()
            async for ev in stream:
                frames.append(ev.frame)
                timed += ev.frame.userdata.get(USERDATA_TIMED_TRANSCRIPT, [])
        assert frames[0].sample_rate == RATE and 2.0 < seconds(frames) < 8.0
        text = "".join(str(t) for t in timed)
        assert "LiveKit's" in text and "server" in text
        cut: list[rtc.AudioFrame] = []
        stream = tts.stream()
        stream.push_text(LONG_TEXT)
        stream.end_input()
        async for ev in stream:
            cut.append(ev.frame)
            if seconds(cut) >= 0.5:
                break
        await stream.aclose()  # barge-in
        after: list[rtc.AudioFrame] = []
        async with tts.stream() as stream:
            stream.push_text("Sorry, go ahead.")
            stream.end_input()
            async for ev in stream:
                after.append(ev.frame)
        assert 0.5 < seconds(after) < 4.0
    finally:
        await tts.aclose()
