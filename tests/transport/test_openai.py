"""The official ``openai`` package, unchanged, against a live server on loopback: only
``base_url`` and ``api_key`` set. Speech in every format (decoded), the streaming response,
server-sent events, the models list, errors in OpenAI's shape, instructions, speed, native
voice ids on the same endpoint, and API keys."""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import av
import numpy as np
import numpy.typing as npt
import openai
import pytest
import soundfile as sf

from emostream.config import Settings
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread

pytestmark = pytest.mark.slow

TEXT = "Hello from the official OpenAI client."
KEY = "openai-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=str(tmp_path_factory.mktemp("openai-data")), acoustic="on")


@pytest.fixture(scope="module")
def family(settings: Settings) -> AcousticFamily:
    loaded = load_acoustic_family(settings)
    assert loaded is not None
    return loaded


def app_for(settings: Settings, joe: PiperVoice, family: AcousticFamily) -> Any:
    """joe and the stock voices OpenAI's names map to (not all 630: start-up stays quick)."""
    from emostream.transport.app import create_app

    wanted = set(settings.voice_aliases().values()) | {"am_michael"}
    stock = [v for v in family.stock_voices() if v.info.id in wanted]
    catalog = VoiceCatalog([joe, *stock])
    catalog.family = family
    return create_app(settings, catalog=catalog)


@pytest.fixture(scope="module")
def server(settings: Settings, joe: PiperVoice, family: AcousticFamily) -> Iterator[ServerThread]:
    with ServerThread(app_for(settings, joe, family)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: ServerThread) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0,
                       timeout=120) as c:  # fmt: skip
        yield c


def decode(data: bytes) -> tuple[str, int, npt.NDArray[np.float32]]:
    """The container FFmpeg finds in ``data``, its rate and its mono samples."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        frames = [f.to_ndarray().reshape(-1) for f in container.decode(stream)]
        audio = np.concatenate(frames)
        if audio.dtype == np.int16:
            audio = audio / 32768.0
        return container.format.name, stream.rate, audio.astype(np.float32)


def pcm_seconds(data: bytes, rate: int = 24000) -> float:
    return len(data) / 2 / rate


def rms(audio: npt.NDArray[np.float32]) -> float:
    return float(np.sqrt(np.mean(audio**2)))


def test_default_is_mp3_in_alloys_voice(client: openai.OpenAI) -> None:
    r = client.audio.speech.create(model="gpt-4o-mini-tts", voice="alloy", input=TEXT)
    assert r.response.headers["content-type"] == "audio/mpeg"
    assert r.response.headers["x-emostream-voice"] == "af_alloy"
    found, rate, audio = decode(r.content)
    assert found == "mp3" and rate == 24000
    assert 1.0 < len(audio) / rate < 5.0 and rms(audio) > 0.02


@pytest.mark.parametrize("fmt", ["opus", "aac", "flac", "wav", "pcm"])
def test_every_format_is_a_valid_file_of_its_kind(client: openai.OpenAI, fmt: str) -> None:
    ask: dict[str, Any] = {"model": "tts-1", "voice": "nova", "input": TEXT}
    reference = pcm_seconds(client.audio.speech.create(**ask, response_format="pcm").content)
    r = client.audio.speech.create(**ask, response_format=fmt)
    data = r.content
    media = {"opus": "audio/ogg", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav",
             "pcm": "audio/pcm"}[fmt]  # fmt: skip
    assert r.response.headers["content-type"] == media
    if fmt == "pcm":  # raw 24 kHz 16-bit mono little-endian, as OpenAI documents
        assert len(data) % 2 == 0
        audio = np.frombuffer(data, "<i2").astype(np.float32) / 32768
        rate = 24000
    elif fmt in ("flac", "wav"):
        audio, rate = sf.read(io.BytesIO(data), dtype="float32")
        assert sf.info(io.BytesIO(data)).format == fmt.upper()
    else:
        found, rate, audio = decode(data)
        assert found == {"opus": "ogg", "aac": "aac"}[fmt]
    assert rate == (48000 if fmt == "opus" else 24000)
    # the same utterance (the phrase cache replays its PCM); codec delay and padding aside
    assert abs(len(audio) / rate - reference) < 0.12, (len(audio) / rate, reference)
    assert rms(audio) > 0.02


def test_the_streaming_response_arrives_in_pieces(client: openai.OpenAI) -> None:
    text = ("The first sentence starts the stream. A second one follows it, "
            "and a third closes the reply.")  # fmt: skip
    chunks: list[tuple[float, bytes]] = []
    start = time.perf_counter()
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="echo", input=text, extra_body={"cache": False}
    ) as r:
        assert r.headers["content-type"] == "audio/mpeg"
        assert "content-length" not in r.headers  # chunked: sent as it is made
        for chunk in r.iter_bytes():
            chunks.append((time.perf_counter() - start, chunk))
    assert len(chunks) > 3
    found, rate, audio = decode(b"".join(c for _, c in chunks))
    assert found == "mp3" and len(audio) / rate > 3.0
    assert chunks[0][0] < chunks[-1][0]  # the first bytes came before the last were made


async def test_the_async_client_streams_too(server: ServerThread) -> None:
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    async with (
        client,
        client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="onyx", input=TEXT, response_format="pcm"
        ) as r,
    ):
        data = b"".join([c async for c in r.iter_bytes()])
    assert 1.0 < pcm_seconds(data) < 5.0


def test_server_sent_events(client: openai.OpenAI) -> None:
    plain = client.audio.speech.create(model="gpt-4o-mini-tts", voice="sage", input=TEXT,
                                       response_format="pcm").content  # fmt: skip
    events: list[dict[str, Any]] = []
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="sage", input=TEXT, response_format="pcm",
        stream_format="sse",
    ) as r:  # fmt: skip
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
            else:
                assert line == "", line
    deltas, done = events[:-1], events[-1]
    assert deltas and all(e["type"] == "speech.audio.delta" for e in deltas)
    assert b"".join(base64.b64decode(e["audio"]) for e in deltas) == plain
    assert done["type"] == "speech.audio.done"
    usage = done["usage"]
    assert usage["input_tokens"] == len(TEXT) and usage["output_tokens"] == len(plain) // 960
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_sse_in_mp3_carries_an_mp3_stream(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="coral", input=TEXT, stream_format="sse"
    ) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    events = [json.loads(line[6:]) for line in lines]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert decode(audio)[0] == "mp3" and events[-1]["type"] == "speech.audio.done"


def test_models(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert ids == ["tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15",
                   "emostream"]  # fmt: skip
    model = client.models.retrieve("tts-1-hd")
    assert (model.id, model.object, model.owned_by) == ("tts-1-hd", "model", "emostream")
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("whisper-1")
    assert info.value.code == "model_not_found" and info.value.param == "model"


def error_of(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.response.json()["error"]
    assert set(body) >= {"message", "type", "param", "code"} and body["message"]
    assert "Traceback" not in exc.response.text
    return dict(body)


@pytest.mark.parametrize(
    "ask,exc,code,param",
    [
        ({"voice": "robot"}, openai.BadRequestError, "unknown_voice", "voice"),
        ({"response_format": "ogg"}, openai.BadRequestError, "bad_format", "response_format"),
        ({"model": "tts-2"}, openai.NotFoundError, "model_not_found", "model"),
        ({"speed": 5.0}, openai.BadRequestError, "bad_value", "speed"),
        ({"input": ""}, openai.BadRequestError, "empty_text", "input"),
        ({"input": "x" * 5001}, openai.BadRequestError, "text_too_long", "input"),
        ({"stream_format": "chunks"}, openai.BadRequestError, "bad_value", "stream_format"),
        ({"voice": "joe", "instructions": "Sound very angry."}, openai.BadRequestError,
         "unsupported_control", "instructions"),
    ],
)  # fmt: skip
def test_errors_in_openais_shape(
    client: openai.OpenAI, ask: dict[str, Any], exc: type[openai.APIStatusError], code: str,
    param: str,
) -> None:  # fmt: skip
    args: dict[str, Any] = {"model": "tts-1", "voice": "alloy", "input": "Hi.", **ask}
    with pytest.raises(exc) as info:
        client.audio.speech.create(**args)
    error = error_of(info.value)
    assert (error["code"], error["param"], error["type"]) == (code, param, "invalid_request_error")
    assert info.value.code == code  # the SDK reads the same body
    if code == "unknown_voice":  # names OpenAI's voices, not all 631 ids
        assert "alloy" in error["message"] and len(error["message"]) < 600


def test_instructions_set_the_emotion(client: openai.OpenAI) -> None:
    r = client.audio.speech.create(model="gpt-4o-mini-tts", voice="nova", input=TEXT,
                                   instructions="Speak in a sad, tearful voice.",
                                   response_format="pcm")  # fmt: skip
    assert r.response.headers["x-emostream-emotion"].startswith("sad; intensity=")
    r = client.audio.speech.create(model="gpt-4o-mini-tts", voice="nova", input=TEXT,
                                   instructions="Read it like a pirate.",
                                   response_format="pcm")  # fmt: skip
    assert r.response.headers["x-emostream-emotion"] == "neutral; intensity=0"


def test_speed_is_clamped_to_the_voices_range(client: openai.OpenAI) -> None:
    ask: dict[str, Any] = {"model": "tts-1", "voice": "fable", "input": TEXT,
                           "response_format": "pcm"}  # fmt: skip
    normal = pcm_seconds(client.audio.speech.create(**ask).content)
    fastest = pcm_seconds(client.audio.speech.create(**ask, speed=4.0).content)
    double = pcm_seconds(client.audio.speech.create(**ask, speed=2.0).content)
    assert fastest == double and fastest < 0.7 * normal


@pytest.mark.parametrize("voice", ["joe", "am_michael"])
def test_native_voice_ids_on_the_same_endpoint(client: openai.OpenAI, voice: str) -> None:
    r = client.audio.speech.create(model="tts-1", voice=voice, input=TEXT)
    assert r.response.headers["x-emostream-voice"] == voice
    assert decode(r.content)[0] == "mp3"


def test_other_v1_paths_answer_in_the_same_shape(server: ServerThread) -> None:
    import httpx

    r = httpx.get(f"{server.url}/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = httpx.get(f"{server.url}/v1/audio/speech")  # the demo's static mount answers GET /
    assert r.status_code in (404, 405) and set(r.json()["error"]) == {"message", "type", "param",
                                                                       "code"}  # fmt: skip


@pytest.fixture(scope="module")
def keyed(settings: Settings, joe: PiperVoice, family: AcousticFamily) -> Iterator[ServerThread]:
    from dataclasses import replace

    keyed = replace(settings, api_keys=KEY, cors_origins="https://app.example")
    with ServerThread(app_for(keyed, joe, family)) as srv:
        yield srv


def test_api_keys(keyed: ServerThread) -> None:
    with openai.OpenAI(base_url=f"{keyed.url}/v1", api_key=KEY, max_retries=0) as good:
        assert decode(good.audio.speech.create(model="tts-1", voice="ash", input="Hi.").content)
        assert len(good.models.list().data) == 5
    import httpx

    minted = httpx.post(f"{keyed.url}/v1/tokens", headers={"Authorization": f"Bearer {KEY}"})
    token = minted.json()["token"]  # what a page gets from its backend
    with openai.OpenAI(base_url=f"{keyed.url}/v1", api_key=token, max_retries=0) as page:
        assert page.audio.speech.create(model="tts-1", voice="ash", input="Hi.").content
    with openai.OpenAI(base_url=f"{keyed.url}/v1", api_key="wrong-key", max_retries=0) as bad:
        for call in (
            lambda: bad.audio.speech.create(model="tts-1", voice="ash", input="Hi."),
            lambda: bad.models.list(),
        ):
            with pytest.raises(openai.AuthenticationError) as info:
                call()
            error = error_of(info.value)
            assert (error["code"], error["type"]) == ("unauthorized", "invalid_request_error")


def test_a_page_may_use_the_js_package(keyed: ServerThread) -> None:
    """CORS (cors_origins): the preflight allows the headers the openai packages send, and the
    page may read the speech response's own headers."""
    import httpx

    from emostream.transport.openai_api import SDK_HEADERS

    asked = ",".join(["authorization", "content-type", *(h.lower() for h in SDK_HEADERS)])
    pre = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": asked}  # fmt: skip
    r = httpx.options(f"{keyed.url}/v1/audio/speech", headers=pre)
    assert r.status_code == 200, r.text
    r = httpx.post(f"{keyed.url}/v1/audio/speech",
                   headers={"Origin": "https://app.example", "Authorization": f"Bearer {KEY}"},
                   json={"model": "tts-1", "voice": "ash", "input": "Hi."})  # fmt: skip
    assert r.status_code == 200
    assert "x-emostream-voice" in r.headers["access-control-expose-headers"].lower()
