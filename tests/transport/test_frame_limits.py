"""Frame and utterance bounds on ``/v1/stream``: a 25 s inline ``reference_audio`` clip (over the
1 MiB message limit) is accepted in a ``start`` up to ``max_start_bytes``; any other message over
1 MiB gets ``too_large`` and the connection stays usable; past ``max_start_bytes`` the WebSocket
protocol closes 1009; an utterance past ``max_utterance_s`` gets ``utterance_timeout`` and its
``done`` (cancelled); one utterance at a time per connection (``already_started``)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import websockets

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.transport.messages import frame_too_large
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav
from tests.transport.conftest import collect
from tests.transport.served import Served

MIB = 1 << 20
PARAGRAPH = (
    "Good evening everyone, and welcome back to the stream. Tonight we are going to try "
    "something a little different, so stay with me. First we will look at the chat, then at "
    "the map, and after that we will decide together where the team should go next. "
)
LONG = " ".join(["This sentence is here only to make the utterance run for a long while."] * 40)


def test_frame_too_large_core() -> None:
    limits = {"max_message_bytes": MIB, "max_start_bytes": 8 * MIB}
    clip = {"type": "start", "reference_audio": "..."}
    assert frame_too_large(MIB, {"type": "text"}, **limits) is None
    err = frame_too_large(MIB + 1, {"type": "text"}, **limits)
    assert err is not None and err.code == "too_large" and "reference_audio" in err.message
    assert frame_too_large(MIB + 1, {"type": "start"}, **limits) is not None
    assert frame_too_large(8 * MIB, clip, **limits) is None
    assert frame_too_large(8 * MIB + 1, clip, **limits) is not None


def clip_25s(joe: PiperVoice) -> bytes:
    """About 25 s of joe reading, 16 kHz 16-bit WAV (800 kB; 1.07 MB as base64)."""
    audio, rate = sf.read(io.BytesIO(clip_wav(joe, PARAGRAPH * 2)), dtype="float32")
    need = 25 * rate
    audio = np.tile(audio, need // len(audio) + 1)[:need]
    buf = io.BytesIO()
    sf.write(buf, audio, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("frames")
    env = {"EMOSTREAM_ACOUSTIC": "on", "EMOSTREAM_DATA_DIR": str(tmp / "data")}
    with Served(tmp / "server.log", env) as srv:
        yield srv
    assert "Traceback" not in srv.log.read_text()


@pytest.mark.slow
async def test_inline_25s_clip_and_oversized_messages(served: Served, joe: PiperVoice) -> None:
    wav = await asyncio.to_thread(clip_25s, joe)
    start = json.dumps(
        {
            "type": "start",
            "reference_audio": base64.b64encode(wav).decode(),
            "format": {"codec": "pcm_s16le"},
        }
    )
    assert len(start) > MIB  # the frame that used to be closed 1009
    async with websockets.connect(served.ws_url, max_size=None, compression=None) as ws:
        await ws.send(json.dumps({"type": "text", "text": "x" * (MIB + 10)}))
        err = json.loads(await ws.recv())
        assert err["type"] == "error" and err["code"] == "too_large", err
        await ws.send(start)
        await ws.send(json.dumps({"type": "text", "text": "Hello from my own voice."}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws, until=("done", "error"), timeout=120)
        kinds = [e["type"] for e in events]
        assert kinds[0] == "started" and kinds[-1] == "done", events
        assert events[0]["voice"].startswith("ref_") or events[0]["voice"] != "joe", events[0]
        assert sum(len(a) for a in audio) > 8000 and not events[-1]["cancelled"]
    async with websockets.connect(served.ws_url, max_size=None, compression=None) as ws:
        huge = json.dumps({"type": "start", "reference_audio": "A" * (8 * MIB + 4)})
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.send(huge)
            await asyncio.wait_for(ws.recv(), 30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


@pytest.fixture(scope="module")
def short_lived(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    data = str(tmp_path_factory.mktemp("utt"))
    settings = Settings(data_dir=data, max_utterance_s=1.0, max_text_chars=10_000)
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def test_utterance_past_max_time_is_cut(short_lived: ServerThread, tmp_path: Path) -> None:
    async with websockets.connect(short_lived.ws_url, max_size=None, compression=None) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.send(json.dumps({"type": "text", "text": "Still thinking"}))  # never ends
        await ws.send(json.dumps({"type": "start"}))
        events, _ = await collect(ws, until="error", timeout=10)
        assert events[-1]["code"] == "already_started"  # one utterance at a time
        events, _ = await collect(ws, timeout=10)
        assert [e.get("code") or e["type"] for e in events] == ["utterance_timeout", "done"]
        assert events[-1]["cancelled"] is True
        await ws.send(json.dumps({"type": "start"}))
        await ws.send(json.dumps({"type": "text", "text": LONG}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws, timeout=30)
        codes = [e.get("code") or e["type"] for e in events if e["type"] != "segment"]
        assert codes == ["started", "utterance_timeout", "done"], codes
        assert audio and events[-1]["cancelled"] is True
        await ws.send(json.dumps({"type": "start"}))  # the connection is still usable
        await ws.send(json.dumps({"type": "text", "text": "Short."}))
        await ws.send(json.dumps({"type": "end"}))
        events, _ = await collect(ws, timeout=30)
        assert events[-1]["type"] == "done" and events[-1]["cancelled"] is False
