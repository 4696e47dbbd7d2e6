"""The official ``cartesia`` package against a live server on loopback: only ``api_key``,
``base_url`` and ``websocket_base_url`` set. A whole turn over the WebSocket (contexts,
``continue``, word timestamps) with a cancel mid-stream, ``/tts/bytes`` and ``/tts/sse``, errors
in Cartesia's shape, and the API key."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import cartesia
import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ServerThread
from tests.transport.compat.conftest import KEY, TEXT, VOICE

pytestmark = [
    pytest.mark.slow,
    # cartesia 4.2's sync WebSocket opens websockets' connect() outside a with block
    pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager"),
]

RAW = {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 44100}


@pytest.fixture(scope="module")
def client(keyed_server: ServerThread) -> Iterator[cartesia.Cartesia]:
    with cartesia.Cartesia(api_key=KEY, base_url=keyed_server.url, max_retries=0, timeout=120,
                           websocket_base_url=f"ws://127.0.0.1:{keyed_server.port}") as c:  # fmt: skip
        yield c


def test_websocket_turn_with_timestamps_then_a_cancelled_one(client: cartesia.Cartesia) -> None:
    with client.tts.websocket_connect() as conn:
        ctx = conn.context(model_id="sonic-2", voice={"mode": "id", "id": VOICE},
                           output_format=RAW, add_timestamps=True)  # fmt: skip
        for piece in ("Hello from a compatible ", "client. This is the second sentence."):
            ctx.push(piece)
        ctx.no_more_inputs()
        audio = bytearray()
        words: list[str] = []
        starts: list[float] = []
        kinds = []
        for event in ctx.receive():
            kinds.append(event.type)
            if event.type == "chunk":
                assert event.audio is not None
                audio += event.audio
            elif event.type == "timestamps":
                assert event.word_timestamps is not None
                words += event.word_timestamps.words
                starts += event.word_timestamps.start
        assert kinds[-1] == "done"
        samples = np.frombuffer(bytes(audio), "<f4")
        seconds = len(samples) / 44100
        assert 2.0 < seconds < 8.0 and float(np.sqrt(np.mean(samples**2))) > 0.02
        assert words[:3] == ["Hello", "from", "a"] and words[-1] == "sentence"
        assert starts == sorted(starts) and starts[-1] < seconds
        # barge-in: a long reply cancelled after its first audio; the next turn is whole
        long = conn.context(model_id="sonic-2", voice=VOICE, output_format=RAW)
        long.push(TEXT * 4)
        long.no_more_inputs()
        events = ctx_events = long.receive()
        first = next(iter(events))
        assert first.type == "chunk"
        long.cancel()
        again = conn.context(model_id="sonic-2", voice=VOICE, output_format=RAW)
        again.push("After the interruption.")
        again.no_more_inputs()
        got = [e.type for e in again.receive()]
        assert got[-1] == "done" and "chunk" in got
        del ctx_events


def test_websocket_refusals_are_error_messages(client: cartesia.Cartesia) -> None:
    with client.tts.websocket_connect() as conn:
        ctx = conn.context(model_id="sonic-2", voice={"mode": "id", "id": "nobody"},
                           output_format=RAW)  # fmt: skip
        ctx.push("Hello.", continue_=False)
        [event] = list(ctx.receive())
        assert event.type == "error" and event.error_code == "unknown_voice"
        assert "nobody" in (event.message or "") and event.status_code == 404
        bad = conn.context(model_id="sonic-2", voice=VOICE,
                           output_format={**RAW, "sample_rate": 12345})  # fmt: skip
        bad.push("Hello.", continue_=False)
        [event] = list(bad.receive())
        assert event.type == "error" and event.error_code == "bad_format"


def test_bytes_wav_and_mp3(client: cartesia.Cartesia) -> None:
    wav = client.tts.generate(model_id="sonic-2", transcript="Hello there.", voice={"id": VOICE},
                              output_format={"container": "wav", "encoding": "pcm_s16le",
                                             "sample_rate": 16000}).read()  # fmt: skip
    audio, rate = sf.read(io.BytesIO(wav), dtype="float32")
    assert rate == 16000 and 0.5 < len(audio) / rate < 3
    mp3 = client.tts.generate(model_id="sonic-2", transcript="Hello there.", voice=VOICE,
                              output_format={"container": "mp3", "sample_rate": 44100,
                                             "bit_rate": 128000}).read()  # fmt: skip
    assert mp3[:3] == b"ID3" or mp3[0] == 0xFF


def test_sse_chunks_timestamps_and_done(client: cartesia.Cartesia) -> None:
    stream = client.tts.generate_sse(model_id="sonic-2", transcript="Hello there, friend.",
                                     voice={"mode": "id", "id": VOICE}, add_timestamps=True,
                                     output_format={"container": "raw", "encoding": "pcm_s16le",
                                                    "sample_rate": 24000})  # fmt: skip
    kinds: list[str] = []
    audio = b""
    for event in stream:
        kinds.append(event.type)
        if event.type == "chunk":
            audio += event.audio or b""
    assert kinds[-1] == "done" and "timestamps" in kinds
    assert 0.5 < len(audio) / 2 / 24000 < 4


def test_http_errors_in_cartesias_shape(client: cartesia.Cartesia, keyed_server: ServerThread
                                        ) -> None:  # fmt: skip
    with pytest.raises(cartesia.BadRequestError) as bad:
        client.tts.generate(model_id="sonic-2", transcript="Hi.", voice=VOICE,
                            output_format={"container": "flac", "sample_rate": 44100})  # type: ignore[arg-type,typeddict-item]
    body: Any = bad.value.body
    assert body["error_code"] == "bad_format" and "container" in body["message"]
    with pytest.raises(cartesia.NotFoundError) as missing:
        client.tts.generate(model_id="sonic-2", transcript="Hi.", voice="nobody",
                            output_format={"container": "wav", "encoding": "pcm_s16le",
                                           "sample_rate": 16000})  # fmt: skip
    assert missing.value.body["error_code"] == "unknown_voice"  # type: ignore[index]
    with cartesia.Cartesia(api_key="wrong-key-0123456789", base_url=keyed_server.url,
                           max_retries=0) as stranger:  # fmt: skip
        with pytest.raises(cartesia.AuthenticationError) as denied:
            stranger.tts.generate(model_id="sonic-2", transcript="Hi.", voice=VOICE,
                                  output_format={"container": "wav", "encoding": "pcm_s16le",
                                                 "sample_rate": 16000})  # fmt: skip
    assert denied.value.body["error_code"] == "unauthorized"  # type: ignore[index]
    assert "Traceback" not in str(denied.value.body)
