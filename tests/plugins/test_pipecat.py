"""The Pipecat TTS service (plugins/pipecat_emostream) in a real Pipecat pipeline against a real
EmoStream server: audio frames, word timestamps in order, one utterance per turn (with the
turn's settings), interruption (cancel, done, the words heard) and the next turn after it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.conftest import ServerThread
from tests.plugins.conftest import LONG_TEXT, import_framework, words_of

import_framework("pipecat")
plugin = import_framework("pipecat_emostream")

from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
    TTSUpdateSettingsFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.tts_service import TextAggregationMode
from pipecat.workers.runner import WorkerRunner

EmoStreamTTSService = plugin.EmoStreamTTSService
EmoStreamTTSSettings = plugin.EmoStreamTTSSettings
RATE = 24000


class Recorder(FrameProcessor):
    """Records the frames passing in one direction (with their arrival time)."""

    def __init__(self, direction: FrameDirection) -> None:
        super().__init__()
        self.direction = direction
        self.frames: list[tuple[float, Frame]] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == self.direction:
            self.frames.append((time.monotonic(), frame))
        await self.push_frame(frame, direction)

    def of(self, kind: type[Frame] | tuple[type[Frame], ...]) -> list[Any]:
        return [f for _, f in self.frames if isinstance(f, kind)]


class Bot:
    """A running pipeline ``[errors, tts, sink]`` and the service's ``done`` events."""

    def __init__(self, worker: PipelineWorker, tts: Any, sink: Recorder, up: Recorder) -> None:
        self.worker, self.tts, self.sink, self.up = worker, tts, sink, up
        self.dones: list[dict[str, Any]] = []

    async def send(self, *frames: Frame) -> None:
        await self.worker.queue_frames(list(frames))

    async def until(self, check: Callable[[], bool], timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.01)

    def errors(self) -> list[ErrorFrame]:
        return self.up.of(ErrorFrame)


@asynccontextmanager
async def bot(server: ServerThread, **kwargs: Any) -> AsyncIterator[Bot]:
    tts = EmoStreamTTSService(url=server.ws_url, **kwargs)
    sink, up = Recorder(FrameDirection.DOWNSTREAM), Recorder(FrameDirection.UPSTREAM)
    worker = PipelineWorker(
        Pipeline([up, tts, sink]), params=PipelineParams(audio_out_sample_rate=RATE),
        cancel_on_idle_timeout=False,
    )  # fmt: skip
    b = Bot(worker, tts, sink, up)

    @tts.event_handler("on_utterance_done")
    async def _done(service: Any, done: dict[str, Any]) -> None:
        b.dones.append(done)

    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(worker: Any, frame: Frame) -> None:
        started.set()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    run = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(started.wait(), 30)
        yield b
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(run, 30)
    finally:
        if not run.done():
            await worker.cancel()
            await asyncio.wait_for(run, 10)


def turn_frames(text_pieces: list[str]) -> list[Frame]:
    return [LLMFullResponseStartFrame(), *(LLMTextFrame(t) for t in text_pieces),
            LLMFullResponseEndFrame()]  # fmt: skip


def audio_ms(frames: list[TTSAudioRawFrame], rate: int = RATE) -> float:
    return 1000.0 * sum(len(f.audio) // 2 for f in frames) / rate


def spoken(frames: list[TTSTextFrame]) -> list[str]:
    return [w for f in frames for w in words_of(f.text)]


async def test_speak_gives_audio_and_timed_words_in_order(server: ServerThread) -> None:
    text = "Hello there. This is EmoStream, speaking through Pipecat."
    async with bot(server) as b:
        await b.send(TTSSpeakFrame(text))
        await b.until(lambda: bool(b.dones) and bool(b.sink.of(TTSStoppedFrame)))
        await asyncio.sleep(0.2)
    assert not b.errors(), b.errors()
    kinds = [f for _, f in b.sink.frames if isinstance(f, (TTSStartedFrame, TTSAudioRawFrame,
                                                           TTSStoppedFrame))]  # fmt: skip
    assert isinstance(kinds[0], TTSStartedFrame) and isinstance(kinds[-1], TTSStoppedFrame)
    audio = b.sink.of(TTSAudioRawFrame)
    assert all(f.sample_rate == RATE and f.num_channels == 1 for f in audio)
    (done,) = b.dones
    assert done["cancelled"] is False
    # Every sample the server sent reached the pipeline (20 ms frames, the last one padded).
    assert abs(audio_ms(audio) - done["audio_ms"]) <= 20.0 + 1e-6
    words = b.sink.of(TTSTextFrame)
    assert spoken(words) == words_of(text)
    pts = [f.pts for f in words]
    assert all(p is not None for p in pts) and pts == sorted(pts) and len(set(pts)) == len(pts)
    # Word times lie on the utterance's audio: the last word starts before the audio ends.
    assert (pts[-1] - pts[0]) / 1e9 < done["audio_ms"] / 1000.0


async def test_a_rate_the_server_does_not_offer_is_resampled(server: ServerThread) -> None:
    async with bot(server, sample_rate=8000) as b:  # telephony
        await b.send(TTSSpeakFrame("Hello from the phone line."))
        await b.until(lambda: bool(b.dones) and bool(b.sink.of(TTSStoppedFrame)))
    assert not b.errors(), b.errors()
    audio = b.sink.of(TTSAudioRawFrame)
    assert audio and all(f.sample_rate == 8000 for f in audio)
    # 24 kHz from the server, resampled here (the stream resampler may hold back a little).
    assert abs(audio_ms(audio, 8000) - b.dones[0]["audio_ms"]) <= 60.0
    assert spoken(b.sink.of(TTSTextFrame)) == words_of("Hello from the phone line.")


@pytest.mark.parametrize("mode", [TextAggregationMode.SENTENCE, TextAggregationMode.TOKEN])
async def test_one_utterance_per_turn_with_that_turns_settings(
    server: ServerThread, mode: TextAggregationMode
) -> None:
    pieces = ["One more ", "time, this sentence ", "is spoken. ", "And then ", "another one."]
    async with bot(server, text_aggregation_mode=mode) as b:
        await b.send(*turn_frames(pieces))
        await b.until(lambda: len(b.dones) == 1 and len(b.sink.of(TTSStoppedFrame)) == 1)
        await b.send(TTSUpdateSettingsFrame(delta=EmoStreamTTSSettings(speed=1.5)))
        await b.send(*turn_frames(pieces))
        await b.until(lambda: len(b.dones) == 2 and len(b.sink.of(TTSStoppedFrame)) == 2)
        await asyncio.sleep(0.2)
    assert not b.errors(), b.errors()
    first, second = b.dones
    assert first["cancelled"] is False and second["cancelled"] is False
    # Two turns, two audio contexts, each its own utterance: its own audio and its own words.
    starts, stops = b.sink.of(TTSStartedFrame), b.sink.of(TTSStoppedFrame)
    contexts = [s.context_id for s in starts]
    assert len(set(contexts)) == 2 and [s.context_id for s in stops] == contexts
    for ctx, done in zip(contexts, (first, second), strict=True):
        audio = [f for f in b.sink.of(TTSAudioRawFrame) if f.context_id == ctx]
        assert abs(audio_ms(audio) - done["audio_ms"]) <= 20.0 + 1e-6
    words = b.sink.of(TTSTextFrame)
    assert spoken(words) == words_of("".join(pieces)) * 2
    # The second turn's start carried speed 1.5: the same text, clearly shorter.
    assert second["audio_ms"] < 0.85 * first["audio_ms"]


async def test_interruption_cancels_the_utterance_and_the_next_turn_follows(
    server: ServerThread,
) -> None:
    async with bot(server) as b:
        await b.send(TTSSpeakFrame(LONG_TEXT))
        await b.until(lambda: len(b.sink.of(TTSAudioRawFrame)) >= 25)  # 0.5 s of audio
        await b.send(InterruptionFrame())
        await b.until(lambda: bool(b.dones))
        await b.until(lambda: bool(b.sink.of(InterruptionFrame)))
        interrupted_at = next(t for t, f in b.sink.frames if isinstance(f, InterruptionFrame))
        await asyncio.sleep(0.5)
        late = [f for t, f in b.sink.frames if t > interrupted_at and isinstance(f, (
            TTSAudioRawFrame, TTSTextFrame))]  # fmt: skip
        heard = audio_ms(b.sink.of(TTSAudioRawFrame))

        await b.send(TTSSpeakFrame("Sorry, go ahead."))
        await b.until(lambda: len(b.dones) == 2)
        await b.until(lambda: any(t > interrupted_at for t, f in b.sink.frames
                                  if isinstance(f, TTSStoppedFrame)))  # fmt: skip
        await asyncio.sleep(0.2)
    assert not b.errors(), b.errors()
    cancelled, after = b.dones
    assert cancelled["cancelled"] is True
    assert late == [], "frames of the interrupted turn after the interruption"
    # The server stopped early: far less than the whole answer, and at least what arrived.
    assert heard - 20.0 <= cancelled["sent_ms"] < 0.5 * 25_000
    said = words_of(LONG_TEXT)
    sent = [w["word"] for w in cancelled["words_sent"]]
    assert sent == said[: len(sent)] and len(sent) < len(said)
    # The next turn is a fresh utterance, spoken whole.
    assert after["cancelled"] is False and after["audio_ms"] > 0
    last_words = [f.text for t, f in b.sink.frames if t > interrupted_at
                  and isinstance(f, TTSTextFrame)]  # fmt: skip
    assert words_of(" ".join(last_words)) == ["Sorry", "go", "ahead"]


async def test_a_refused_start_is_an_error_and_the_turn_ends(server: ServerThread) -> None:
    async with bot(server, settings=EmoStreamTTSSettings(voice="no_such_voice")) as b:
        await b.send(TTSSpeakFrame("Hello."))
        await b.until(lambda: bool(b.errors()))
        await b.until(lambda: bool(b.sink.of(TTSStoppedFrame)))
    assert "unknown_voice" in b.errors()[0].error
    assert b.sink.of(TTSAudioRawFrame) == [] and b.dones == []


async def test_the_next_turn_reconnects_after_the_server_closed_the_idle_socket(
    idle_server: ServerThread,
) -> None:
    async with bot(idle_server) as b:
        for n in (1, 2):
            await b.send(TTSSpeakFrame(f"Turn {n}."))
            await b.until(lambda n=n: len(b.dones) == n)
            await asyncio.sleep(1.6)  # the server closes the socket after 1 s idle
        await asyncio.sleep(0.2)
    assert not b.errors(), b.errors()
    assert [d["cancelled"] for d in b.dones] == [False, False]
    assert spoken(b.sink.of(TTSTextFrame)) == ["Turn", "1", "Turn", "2"]


async def test_each_turn_is_a_context_on_one_socket_and_none_waits(server: ServerThread) -> None:
    """Two turns queued at once: one socket, a context per turn (Pipecat's context id), the
    second turn's start sent before the first turn's done; each turn's audio whole and its
    words its own."""
    texts = ["The first turn has a few words to say.", "And the second turn follows it."]
    async with bot(server) as b:
        log: list[tuple[str, str]] = []
        send, on_event, connect = b.tts._send, b.tts._on_event, b.tts._websocket_connect
        connects = 0

        async def sending(msg: dict[str, Any]) -> None:
            if msg["type"] == "start":
                log.append(("start", msg["context_id"]))
            await send(msg)

        async def receiving(msg: dict[str, Any]) -> None:
            if msg.get("type") == "done":
                log.append(("done", msg["context_id"]))
            await on_event(msg)

        async def connecting(*args: Any, **kwargs: Any) -> Any:
            nonlocal connects
            connects += 1
            return await connect(*args, **kwargs)

        b.tts._send, b.tts._on_event, b.tts._websocket_connect = sending, receiving, connecting
        await b.send(TTSSpeakFrame(texts[0]), TTSSpeakFrame(texts[1]))
        await b.until(lambda: len(b.dones) == 2 and len(b.sink.of(TTSStoppedFrame)) == 2)
        await asyncio.sleep(0.2)
    assert not b.errors(), b.errors()
    assert connects == 0  # the socket opened at start was the only one
    starts = [ctx for kind, ctx in log if kind == "start"]
    contexts = [s.context_id for s in b.sink.of(TTSStartedFrame)]
    assert starts == contexts and len(set(starts)) == 2
    assert [kind for kind, _ in log][:2] == ["start", "start"], log
    for ctx, text in zip(contexts, texts, strict=True):
        audio = [f for f in b.sink.of(TTSAudioRawFrame) if f.context_id == ctx]
        done = next(d for d in b.dones if d["context_id"] == ctx)
        assert abs(audio_ms(audio) - done["audio_ms"]) <= 20.0 + 1e-6
    assert spoken(b.sink.of(TTSTextFrame)) == words_of(" ".join(texts))
