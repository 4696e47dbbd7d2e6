"""An admission refusal is decided before any work is spent and is the refused start's one
answer, on every path: the native WebSocket (v1 and v1.1 contexts: the text, flush and end sent
for the refused start are dropped, only counted), ``POST /v1/audio/speech`` and the compatible
HTTP routes (503 with ``Retry-After``) and the compatible WebSockets (an error saying when to
retry). The runner here refuses every utterance and fails the test if a model call comes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from emostream.config import Settings
from emostream.engine.admission import Decision, Verdict
from emostream.stream.service import SpeechService
from emostream.text.frontend import TextFrontEnd
from emostream.transport.app import create_app
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice

RETRY_S = 2.5  # the refusing admission's hint: retry_after_ms 2500, Retry-After 3
WAV = {"container": "wav", "encoding": "pcm_s16le", "sample_rate": 16000}
CARTESIA_BYTES = {"model_id": "sonic-2", "transcript": "Hello there.", "voice": "joe",
                  "output_format": WAV}  # fmt: skip


class RefusingRunner:
    """The engine client's shape: admission refuses; a model call is a test failure."""

    def __init__(self) -> None:
        self.admits = 0
        self.model_calls: list[str] = []

    def admit(self) -> Decision:
        self.admits += 1
        return Decision(Verdict.REFUSE, "utilization", 0.97, 0.0, retry_after_s=RETRY_S)

    async def acoustic(self, *args: Any, **kwargs: Any) -> Any:
        self.model_calls.append("acoustic")
        raise AssertionError("a refused utterance reached the acoustic model")

    async def decode(self, *args: Any, **kwargs: Any) -> Any:
        self.model_calls.append("decode")
        raise AssertionError("a refused utterance reached the vocoder")

    def cancel(self, stream_id: str) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def refusing(
    joe: PiperVoice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, RefusingRunner, list[str]]]:
    """A server whose admission refuses everything; the third item lists the texts the text
    front end was given (by ``TextFrontEnd.normalize``)."""
    fed: list[str] = []
    original = TextFrontEnd.normalize

    def normalize(text: str) -> str:
        fed.append(text)
        return original(text)

    monkeypatch.setattr(TextFrontEnd, "normalize", staticmethod(normalize))
    settings = Settings(data_dir=str(tmp_path), redis_url="", default_voice="joe")
    runner = RefusingRunner()
    service = SpeechService(settings, VoiceCatalog([joe]), runner=runner)
    app = create_app(settings, service=service)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client, runner, fed


def metric(client: TestClient, name: str, **labels: str) -> float:
    text = client.get("/metrics").text
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    match = re.search(rf"^{name}\{{{re.escape(want)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_a_refused_start_is_answered_once_before_any_work(
    refusing: tuple[TestClient, RefusingRunner, list[str]],
) -> None:
    client, runner, fed = refusing
    with client.websocket_connect("ws://127.0.0.1/v1/stream") as ws:
        for _ in range(3):
            t0 = time.monotonic()
            ws.send_json({"type": "start"})
            ws.send_json({"type": "text", "text": "Hello there, this is never spoken. "})
            ws.send_json({"type": "flush"})
            ws.send_json({"type": "end"})
            ws.send_json({"type": "no_such_type"})  # answered: marks where answers end
            busy = ws.receive_json()
            assert busy["type"] == "error" and busy["code"] == "busy", busy
            assert busy["retry_after_ms"] == RETRY_S * 1000
            assert time.monotonic() - t0 < 5.0  # promptly (generous: a loaded 2-core CI box)
            assert ws.receive_json()["code"] == "unknown_type"  # nothing between the two
    assert runner.admits == 3 and runner.model_calls == []
    assert fed == []  # the refused text never reached the text front end
    for kind in ("text", "flush", "end"):
        assert metric(client, "emostream_refused_stream_messages_total", type=kind) == 3
    assert metric(client, "emostream_errors_total", code="not_started") == 0
    assert metric(client, "emostream_admission_refusals_total", reason="utilization") == 3


def test_a_refused_context_is_answered_once(
    refusing: tuple[TestClient, RefusingRunner, list[str]],
) -> None:
    client, runner, fed = refusing
    with client.websocket_connect("ws://127.0.0.1/v1/stream") as ws:
        for context in ("a", "b"):
            ws.send_json({"type": "start", "context_id": context})
            ws.send_json({"type": "text", "context_id": context, "text": "Never spoken."})
            ws.send_json({"type": "cancel", "context_id": context})
        ws.send_json({"type": "no_such_type"})
        answers = [ws.receive_json() for _ in range(3)]
    assert [(a.get("context_id"), a["code"]) for a in answers] == [
        ("a", "busy"), ("b", "busy"), (None, "unknown_type")]  # fmt: skip
    assert all(a["retry_after_ms"] == RETRY_S * 1000 for a in answers[:2])
    assert runner.model_calls == [] and fed == []
    assert metric(client, "emostream_refused_stream_messages_total", type="cancel") == 2
    assert metric(client, "emostream_errors_total", code="unknown_context") == 0


@pytest.mark.parametrize(
    "path,body",
    [
        ("/v1/audio/speech", {"input": "Hello there.", "response_format": "wav"}),
        ("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": "Hello there."}),
        ("/v1/text-to-speech/joe/stream", {"text": "Hello there."}),
        ("/tts/bytes", CARTESIA_BYTES),
    ],
)
def test_http_refusals_say_when_to_retry(
    refusing: tuple[TestClient, RefusingRunner, list[str]], path: str, body: dict[str, Any]
) -> None:
    client, runner, _ = refusing
    r = client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code == 503, r.text
    assert r.headers["Retry-After"] == "3"  # 2.5 s, in whole seconds
    assert r.headers["content-type"].startswith("application/json")
    assert "busy" in r.text
    assert runner.admits == 1 and runner.model_calls == []
    assert metric(client, "emostream_errors_total", code="busy") == 1  # counted once


@pytest.mark.parametrize(
    "path,first,text",
    [
        ("/v1/text-to-speech/joe/stream-input", {"text": " "}, {"text": "Never spoken. "}),
        ("/tts/websocket",
         {"model_id": "sonic-2", "voice": {"mode": "id", "id": "joe"}, "context_id": "c1",
          "transcript": "Never spoken. ", "continue": True,
          "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}},
         None),
    ],
)  # fmt: skip
def test_compatible_sockets_refuse_with_a_retry_hint(
    refusing: tuple[TestClient, RefusingRunner, list[str]],
    path: str,
    first: dict[str, Any],
    text: dict[str, Any] | None,
) -> None:
    client, runner, _ = refusing
    with client.websocket_connect(f"ws://127.0.0.1{path}") as ws:
        ws.send_json(first)
        if text is not None:
            ws.send_json(text)
        error = ws.receive_json()
    assert "busy" in json.dumps(error) and "retry after 2500 ms" in json.dumps(error), error
    assert runner.model_calls == []
