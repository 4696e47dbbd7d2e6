"""The server with the engine process (EMOSTREAM_ENGINE=process) speaks exactly what the
in-process server speaks (CPU, the EmoStream ONNX voices)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from emostream.config import Settings
from emostream.transport.app import create_app
from tests.conftest import ServerThread

pytestmark = pytest.mark.slow
TEXT = "The engine process batches every worker's calls. Does it sound the same? It should."
# A voice per language: each segment's acoustic call carries its own voice's speaker.
MIXED = "The engine process, 每个片段都用自己的声音。It should sound the same."
VOICES = {"en": "af_heart", "zh": "zf_xiaoxiao"}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=str(tmp_path_factory.mktemp("engine-serve")), acoustic="on",
                    phrase_cache_bytes=0)  # fmt: skip


BODIES: dict[str, dict[str, object]] = {
    "af_heart": {"input": TEXT, "voice": "af_heart"},
    "joe": {"input": TEXT, "voice": "joe"},
    "voices": {"input": MIXED, "voices": VOICES},
    "mixed, af_heart alone": {"input": MIXED, "voice": "af_heart"},
}


def speak(url: str, name: str) -> bytes:
    body = {**BODIES[name], "response_format": "pcm"}
    for _ in range(20):  # a loaded machine's admission may say busy: what is spoken is tested
        r = httpx.post(f"{url}/v1/audio/speech", json=body, timeout=120)
        if r.status_code != 503:
            break
        time.sleep(r.json()["error"].get("retry_after_ms", 1000) / 1000)
    assert r.status_code == 200, r.text
    return r.content


@pytest.fixture(scope="module")
def reference(settings: Settings) -> Iterator[dict[str, bytes]]:
    with ServerThread(create_app(settings)) as srv:
        yield {name: speak(srv.url, name) for name in BODIES}


def test_engine_process_speaks_the_same(settings: Settings, reference: dict[str, bytes]) -> None:
    assert reference["voices"] != reference["mixed, af_heart alone"]  # voices took effect
    with ServerThread(create_app(replace(settings, engine="process"))) as srv:
        for voice, expected in reference.items():
            got = speak(srv.url, voice)
            assert len(got) > 20000
            assert got == expected, voice
