"""The official ``elevenlabs`` package against a live server on loopback: only ``api_key`` and
``base_url`` set. The HTTP routes (audio, streamed audio, with timestamps), the input-streaming
WebSocket (``convert_realtime``, which speaks only ``wss://``: served with a throwaway
certificate) through a whole turn and through one cut off mid-stream, errors in ElevenLabs'
shape, and the API key (``xi-api-key``)."""

from __future__ import annotations

import datetime
import io
import ipaddress
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import elevenlabs
import httpx
import numpy as np
import pytest
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError

from tests.conftest import ServerThread, free_port
from tests.transport.compat.conftest import KEY, TEXT, VOICE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(keyed_server: ServerThread) -> Iterator[ElevenLabs]:
    with httpx.Client(timeout=120) as http:
        yield ElevenLabs(api_key=KEY, base_url=keyed_server.url, httpx_client=http)


def mp3_seconds(data: bytes) -> tuple[int, float]:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        samples = sum(f.samples for f in container.decode(stream))
        return stream.rate, samples / stream.rate


def test_convert_is_mp3_44100_by_default(client: ElevenLabs) -> None:
    data = b"".join(client.text_to_speech.convert(VOICE, text="Hello there, friend."))
    rate, seconds = mp3_seconds(data)
    assert rate == 44100 and 0.5 < seconds < 3


@pytest.mark.parametrize("fmt", ["pcm_16000", "pcm_22050", "ulaw_8000"])
def test_stream_in_raw_formats(client: ElevenLabs, fmt: str) -> None:
    data = b"".join(client.text_to_speech.stream(VOICE, text="Hello there, friend.",
                                                 output_format=fmt))  # type: ignore[arg-type]
    width = 1 if fmt.startswith("ulaw") else 2
    rate = int(fmt.split("_")[1])
    assert 0.5 < len(data) / width / rate < 3


def test_with_timestamps_aligns_every_character(client: ElevenLabs) -> None:
    text = "Hello there, friend. How are you?"
    r = client.text_to_speech.convert_with_timestamps(VOICE, text=text, output_format="pcm_24000")
    audio = np.frombuffer(__import__("base64").b64decode(r.audio_base_64), "<i2")
    assert r.alignment is not None
    assert "".join(r.alignment.characters) == text
    ends = r.alignment.character_end_times_seconds
    assert r.alignment.character_start_times_seconds == sorted(r.alignment.character_start_times_seconds)
    assert 0 < ends[-1] <= len(audio) / 24000 + 0.05
    chunks = list(client.text_to_speech.stream_with_timestamps(VOICE, text=text,
                                                               output_format="pcm_24000"))  # fmt: skip
    chars = [c for ch in chunks if ch.alignment for c in ch.alignment.characters]
    assert "".join(chars) == text


def test_http_errors_in_elevenlabs_shape(client: ElevenLabs, keyed_server: ServerThread) -> None:
    with pytest.raises(ApiError) as missing:
        b"".join(client.text_to_speech.convert("nobody", text="Hi."))
    assert missing.value.status_code == 404
    body: Any = missing.value.body
    assert body["detail"]["status"] == "unknown_voice" and "joe" in body["detail"]["message"]
    with pytest.raises(ApiError) as bad:
        b"".join(client.text_to_speech.convert(VOICE, text="Hi.", output_format="opus_48000_64"))  # type: ignore[arg-type]
    assert bad.value.status_code == 400
    assert bad.value.body["detail"]["status"] == "invalid_output_format"  # type: ignore[index]
    with httpx.Client() as http, pytest.raises(ApiError) as denied:
        stranger = ElevenLabs(api_key="wrong-key-0123456789", base_url=keyed_server.url,
                              httpx_client=http)  # fmt: skip
        b"".join(stranger.text_to_speech.convert(VOICE, text="Hi."))
    assert denied.value.status_code == 401
    assert denied.value.body["detail"]["status"] == "unauthorized"  # type: ignore[index]


def test_voice_settings_with_no_equivalent_are_named(keyed_server: ServerThread) -> None:
    r = httpx.post(f"{keyed_server.url}/v1/text-to-speech/{VOICE}?output_format=pcm_16000",
                   headers={"xi-api-key": KEY}, timeout=60,
                   json={"text": "Hi there.", "voice_settings": {"stability": 0.2, "speed": 1.1}})  # fmt: skip
    assert r.status_code == 200
    assert "voice_settings.stability" in r.headers["x-emostream-ignored"]


# -- the input-streaming WebSocket (the package's convert_realtime, wss:// only) ------------
def _certificate(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


@pytest.fixture(scope="module")
def tls_url(keyed_server: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same app over TLS (its own uvicorn); SSL_CERT_FILE trusts the certificate."""
    import uvicorn

    cert, key = _certificate(tmp_path_factory.mktemp("tls"))
    port = free_port()
    app = keyed_server.server.config.app
    config = uvicorn.Config(app, host="127.0.0.1", port=port, loop="asyncio", lifespan="on",
                            ws="websockets-sansio", log_level="warning",
                            ssl_certfile=str(cert), ssl_keyfile=str(key))  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.02)
    mp = pytest.MonkeyPatch()
    mp.setenv("SSL_CERT_FILE", str(cert))
    yield f"https://127.0.0.1:{port}"
    mp.undo()
    server.should_exit = True
    thread.join(timeout=10)


def test_realtime_turn_then_one_cut_off(tls_url: str) -> None:
    client = ElevenLabs(api_key=KEY, base_url=tls_url, httpx_client=httpx.Client())

    def tokens(text: str) -> Iterator[str]:
        yield from (word + " " for word in text.split())

    audio = b"".join(client.text_to_speech.convert_realtime(
        VOICE, text=tokens("Hello from the input streaming socket. It speaks as words come."),
        output_format="pcm_22050"))  # fmt: skip
    assert 2.0 < len(audio) / 2 / 22050 < 8
    # barge-in: the caller stops reading after the first audio (the socket closes mid-stream)
    chunks = client.text_to_speech.convert_realtime(VOICE, text=tokens(TEXT * 3),
                                                    output_format="mp3_22050_32")  # fmt: skip
    first = next(chunks)
    assert first
    chunks.close()
    again = b"".join(client.text_to_speech.convert_realtime(
        VOICE, text=tokens("After the interruption."), output_format="mp3_44100_128"))  # fmt: skip
    assert mp3_seconds(again)[1] > 0.5
    assert elevenlabs.__version__
