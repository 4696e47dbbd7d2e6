"""The LiveKit Agents TTS (plugins/livekit_emostream) through LiveKit's own TTS API against a
real EmoStream server: ``stream()`` / ``synthesize()`` audio frames, timed transcripts in order,
one utterance per stream (with the options of its turn), interruption by closing the stream
(cancel, done, the words heard) and the next turn after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import ServerThread
from tests.plugins.conftest import LONG_TEXT, import_framework, words_of

import_framework("livekit.agents")
plugin = import_framework("livekit_emostream")

from livekit import rtc
from livekit.agents import APIStatusError
from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT, TimedString

RATE = 24000


class Turns:
    """The TTS's ``utterance_done`` events."""

    def __init__(self, tts: Any) -> None:
        self.dones: list[dict[str, Any]] = []
        tts.on("utterance_done", self.dones.append)


async def speak(tts: Any, pieces: list[str]) -> tuple[list[rtc.AudioFrame], list[TimedString],
                                                        list[Any]]:  # fmt: skip
    frames: list[rtc.AudioFrame] = []
    timed: list[TimedString] = []
    events: list[Any] = []
    async with tts.stream() as stream:
        for piece in pieces:
            stream.push_text(piece)
        stream.flush()
        stream.end_input()
        async for ev in stream:
            events.append(ev)
            frames.append(ev.frame)
            timed.extend(ev.frame.userdata.get(USERDATA_TIMED_TRANSCRIPT, []))
    return frames, timed, events


def duration_ms(frames: list[rtc.AudioFrame]) -> float:
    return 1000.0 * sum(f.samples_per_channel for f in frames) / frames[0].sample_rate


def whole(received_ms: float, done: dict[str, Any]) -> bool:
    """All the utterance's audio arrived: the server's 20 ms frames (the last one padded),
    plus at most LiveKit's 10 ms end-of-segment marker."""
    return 0.0 <= received_ms - done["audio_ms"] <= 30.0 + 1e-6


async def test_stream_gives_audio_and_timed_words_in_order(server: ServerThread) -> None:
    pieces = ["Hello there. ", "This is EmoStream, ", "speaking through LiveKit."]
    tts = plugin.TTS(url=server.ws_url)
    turns = Turns(tts)
    try:
        frames, timed, events = await speak(tts, pieces)
    finally:
        await tts.aclose()
    (done,) = turns.dones
    assert done["cancelled"] is False
    assert all(f.sample_rate == RATE and f.num_channels == 1 for f in frames)
    assert events[-1].is_final and not any(e.is_final for e in events[:-1])
    assert whole(duration_ms(frames), done)
    # The timed pieces join back into exactly the text sent; each word is timed on the audio.
    assert "".join(timed) == "".join(pieces)
    words = [t for t in timed if words_of(t)]
    assert [w for t in words for w in words_of(t)] == words_of("".join(pieces))
    starts = [t.start_time for t in words]
    assert starts == sorted(starts) and all(t.end_time > t.start_time for t in words)
    assert words[-1].end_time <= done["audio_ms"] / 1000.0


async def test_synthesize_collects_one_utterance(server: ServerThread) -> None:
    tts = plugin.TTS(url=server.ws_url, sample_rate=16000)
    turns = Turns(tts)
    try:
        frame = await tts.synthesize("Short and sweet.").collect()
    finally:
        await tts.aclose()
    (done,) = turns.dones
    assert frame.sample_rate == 16000
    assert whole(1000.0 * frame.samples_per_channel / 16000, done)


async def test_one_utterance_per_stream_with_that_turns_options(server: ServerThread) -> None:
    pieces = ["One more ", "time, this sentence ", "is spoken. ", "And then ", "another one."]
    tts = plugin.TTS(url=server.ws_url)
    turns = Turns(tts)
    try:
        first, _, _ = await speak(tts, pieces)
        tts.update_options(speed=1.5)
        second, timed, _ = await speak(tts, pieces)
        # Two turns at once share the socket, each its own context.
        both = await asyncio.gather(speak(tts, ["First of two."]), speak(tts, ["Second."]))
    finally:
        await tts.aclose()
    assert [d["cancelled"] for d in turns.dones] == [False] * 4
    assert "".join(timed) == "".join(pieces)
    assert whole(duration_ms(first), turns.dones[0]) and whole(duration_ms(second), turns.dones[1])
    assert turns.dones[1]["audio_ms"] < 0.85 * turns.dones[0]["audio_ms"]  # speed 1.5
    assert ["".join(t) for _, t, _ in both] == ["First of two.", "Second."]


async def test_closing_the_stream_cancels_and_the_next_turn_follows(server: ServerThread) -> None:
    tts = plugin.TTS(url=server.ws_url)
    turns = Turns(tts)
    frames: list[rtc.AudioFrame] = []
    timed: list[TimedString] = []
    try:
        stream = tts.stream()
        stream.push_text(LONG_TEXT)
        stream.end_input()
        async for ev in stream:
            frames.append(ev.frame)
            timed.extend(ev.frame.userdata.get(USERDATA_TIMED_TRANSCRIPT, []))
            if duration_ms(frames) >= 500:
                break
        await stream.aclose()  # what an AgentSession does on barge-in
        await tts.settled()
        assert [ev async for ev in stream] == []  # closed: nothing more comes
        after, after_timed, _ = await speak(tts, ["Sorry, go ahead."])
    finally:
        await tts.aclose()
    cancelled, next_turn = turns.dones
    assert cancelled["cancelled"] is True
    assert duration_ms(frames) - 20.0 <= cancelled["sent_ms"] < 0.5 * 25_000
    said = words_of(LONG_TEXT)
    sent = [w["word"] for w in cancelled["words_sent"]]
    assert sent == said[: len(sent)] and len(sent) < len(said)
    heard = [w for t in timed for w in words_of(t)]
    assert heard == said[: len(heard)]
    assert next_turn["cancelled"] is False and "".join(after_timed) == "Sorry, go ahead."
    assert whole(duration_ms(after), next_turn)


@pytest.mark.parametrize(
    ("options", "code"),
    [({"voice": "no_such_voice"}, "unknown_voice"), ({"emotion": "happy"}, "unsupported_control")],
)
async def test_a_refused_start_raises_and_the_socket_stays_usable(
    server: ServerThread, options: dict[str, Any], code: str
) -> None:
    tts = plugin.TTS(url=server.ws_url, **options)
    try:
        with pytest.raises(APIStatusError, match=code) as refused:
            await speak(tts, ["Hello."])
        assert refused.value.retryable is False
        tts.update_options(voice=None, emotion=None)
        frames, timed, _ = await speak(tts, ["Hello."])
    finally:
        await tts.aclose()
    assert frames and "".join(timed) == "Hello."


async def test_the_next_turn_reconnects_after_the_server_closed_the_idle_socket(
    idle_server: ServerThread,
) -> None:
    tts = plugin.TTS(url=idle_server.ws_url)
    turns = Turns(tts)
    try:
        _, first, _ = await speak(tts, ["Turn one."])
        await asyncio.sleep(1.6)  # the server closes the pooled socket after 1 s idle
        _, second, _ = await speak(tts, ["Turn two."])
    finally:
        await tts.aclose()
    assert ["".join(first), "".join(second)] == ["Turn one.", "Turn two."]
    assert [d["cancelled"] for d in turns.dones] == [False, False]


async def test_turns_share_one_socket_and_closing_one_leaves_the_other_whole(
    server: ServerThread,
) -> None:
    """Context per turn: concurrent streams are contexts on one socket; closing one (barge-in)
    cancels that context only, and the other's audio and words arrive whole."""
    tts = plugin.TTS(url=server.ws_url)
    turns = Turns(tts)
    connects = 0
    connect_ws = tts._connect_ws

    async def counting(timeout: float) -> Any:
        nonlocal connects
        connects += 1
        return await connect_ws(timeout)

    tts._connect_ws = counting
    cut: list[rtc.AudioFrame] = []
    try:
        long_turn = tts.stream()
        long_turn.push_text(LONG_TEXT)
        long_turn.end_input()
        other = asyncio.create_task(speak(tts, ["The other turn is spoken whole."]))
        async for ev in long_turn:
            cut.append(ev.frame)
            if duration_ms(cut) >= 500:
                break
        await long_turn.aclose()
        frames, timed, _ = await other
        await tts.settled()
    finally:
        await tts.aclose()
    assert connects == 1
    by_cancel = {d["cancelled"]: d for d in turns.dones}
    assert sorted(by_cancel) == [False, True] and len(turns.dones) == 2
    assert "".join(timed) == "The other turn is spoken whole."
    assert whole(duration_ms(frames), by_cancel[False])
    assert by_cancel[True]["sent_ms"] < 0.5 * 25_000
