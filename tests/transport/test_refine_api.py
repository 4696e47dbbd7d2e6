"""Clone refinement through the real server: a clone is usable at once and refined in the
background, shown in GET; refined again with a new clip; bad clips refused with nothing
changed; two speakers skipped with a warning; refinement in the worker process surviving a
restart; a server without the acoustic model says refinement is unavailable."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf
import soxr
import websockets

from emostream.config import Settings
from emostream.transport.app import create_app
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from tests.conftest import ServerThread
from tests.transport.conftest import collect
from tests.voices.voice_fixtures import to_bytes

pytestmark = pytest.mark.slow

Speech = tuple[npt.NDArray[np.float32], int]
WAIT_S = 180.0  # a refinement on a loaded 2-core machine (~5-15 s alone)


@pytest.fixture(scope="module")
def family() -> AcousticFamily:
    loaded = load_acoustic_family(Settings(acoustic="on"))
    assert loaded is not None
    return loaded


def _app(family: AcousticFamily, data_dir: Path, **settings: Any) -> Any:
    stock = [v for v in family.stock_voices() if v.info.id == "af_heart"]
    catalog = VoiceCatalog(stock)
    catalog.family = family
    return create_app(Settings(data_dir=str(data_dir), acoustic="on", **settings),
                      catalog=catalog)  # fmt: skip


@pytest.fixture(scope="module")
def fs2(family: AcousticFamily, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """A server refining on a thread of its own (quicker to start than the worker process)."""
    app = _app(family, tmp_path_factory.mktemp("refine-data"), clone_refine_process=False)
    with ServerThread(app) as srv:
        yield srv


def _16k(speech: Speech) -> npt.NDArray[np.float32]:
    audio, rate = speech
    return np.asarray(audio if rate == 16000 else soxr.resample(audio, rate, 16000), np.float32)


def two_speakers(speech: Speech, other_speech: Speech) -> bytes:
    a, b = _16k(speech), _16k(other_speech)
    return to_bytes(np.concatenate([a[: 4 * 16000], np.zeros(4800, np.float32),
                                    b[: 4 * 16000]]), 16000)  # fmt: skip


_names = itertools.count()


async def create(client: httpx.AsyncClient, wav: bytes, name: str | None = None
                 ) -> httpx.Response:  # fmt: skip
    """A new clone (a new name each time unless given: names are unique per key)."""
    name = f"Me {next(_names)}" if name is None else name
    return await client.post(
        "/v1/voices", files={"file": ("me.wav", wav, "audio/wav")}, data={"name": name}
    )


async def refine(client: httpx.AsyncClient, voice_id: str, wav: bytes | None) -> httpx.Response:
    files = None if wav is None else {"file": ("new.wav", wav, "audio/wav")}
    return await client.post(f"/v1/voices/{voice_id}/refine", files=files)


async def settled(client: httpx.AsyncClient, voice_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        body: dict[str, Any] = (await client.get(f"/v1/voices/{voice_id}")).json()
        if body["state"] != "refining":
            return body
        await asyncio.sleep(0.25)
    raise AssertionError(f"{voice_id} still refining after {WAIT_S} s")


async def speak(url: str, voice_id: str) -> tuple[list[dict[str, Any]], int]:
    async with websockets.connect(url, compression=None) as ws:
        await ws.send(json.dumps({"type": "start", "voice": voice_id,
                                  "format": {"codec": "pcm_s16le", "sample_rate": 24000}}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": "Hello from my own voice."}))
        await ws.send(json.dumps({"type": "end"}))
        events, chunks = await collect(ws, until=("done", "error"), timeout=120)
    return events, sum(len(c) for c in chunks) // 2


def check_figures(refinement: dict[str, Any]) -> None:
    for key in ("ge2e_similarity_before", "ge2e_similarity_after", "spectral_gap_db_before",
                "spectral_gap_db_after", "bandwidth_hz", "iterations", "seconds"):  # fmt: skip
        assert isinstance(refinement[key], int | float), (key, refinement)
    assert refinement["spectral_gap_db_after"] < refinement["spectral_gap_db_before"]
    assert refinement["refined_at"].endswith("+00:00") and len(refinement["clip_sha256"]) == 64


async def test_a_clone_is_usable_at_once_then_refined(fs2: ServerThread, speech: Speech) -> None:
    async with httpx.AsyncClient(base_url=fs2.url, timeout=60) as client:
        r = await create(client, to_bytes(*speech))
        assert r.status_code == 201, r.text
        made = r.json()
        vid = made["id"]
        assert made["state"] == "refining" and made["refinement"] is None
        events, samples = await speak(fs2.ws_url, vid)  # zero-shot, while it refines
        assert events[-1]["type"] == "done" and samples > 24000
        body = await settled(client, vid)
        assert body["state"] == "refined", body
        check_figures(body["refinement"])
        assert body["refinement"]["clip_sha256"] == made["clip_sha256"]
        listed = {v["id"]: v for v in (await client.get("/v1/voices")).json()["voices"]}
        assert listed[vid]["state"] == "refined" and listed[vid]["speakable"] is True
        assert listed[vid]["refinement"] == body["refinement"]
        events, samples = await speak(fs2.ws_url, vid)
        assert events[-1]["type"] == "done" and samples > 24000
        metrics = (await client.get("/metrics")).text
        assert 'emostream_clone_refinements_total{outcome="refined"}' in metrics


async def test_refined_again_with_a_new_clip(
    fs2: ServerThread, speech: Speech, other_speech: Speech
) -> None:
    async with httpx.AsyncClient(base_url=fs2.url, timeout=60) as client:
        vid = (await create(client, to_bytes(*speech))).json()["id"]
        first = await settled(client, vid)
        assert first["state"] == "refined"
        new = to_bytes(*other_speech)
        r = await refine(client, vid, new)
        assert r.status_code == 202, r.text
        assert r.json()["state"] == "refining" and r.headers["location"] == f"/v1/voices/{vid}"
        assert r.json()["refinement"] == first["refinement"]  # still spoken meanwhile
        busy = await refine(client, vid, None)  # one at a time: no queueing behind it
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "refine_in_progress"
        after = await settled(client, vid)
        assert after["state"] == "refined", after
        assert after["clip_sha256"] != first["clip_sha256"]  # the new clip is the voice's now
        assert after["refinement"]["clip_sha256"] == after["clip_sha256"]
        again = await refine(client, vid, None)  # against the stored (new) clip
        assert again.status_code == 202
        last = await settled(client, vid)
        assert last["state"] == "refined" and last["clip_sha256"] == after["clip_sha256"]


async def test_bad_clips_change_nothing(
    fs2: ServerThread, speech: Speech, other_speech: Speech
) -> None:
    async with httpx.AsyncClient(base_url=fs2.url, timeout=60) as client:
        vid = (await create(client, to_bytes(*speech))).json()["id"]
        before = await settled(client, vid)
        silent = io.BytesIO()
        sf.write(silent, np.zeros(16000 * 5, np.int16), 16000, format="WAV")
        cases = [
            (silent.getvalue(), 400, "silent"),
            (b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64), 400, "undecodable"),
            (b"%PDF-1.4 not a clip" * 10, 415, "unsupported_format"),
            (two_speakers(speech, other_speech), 400, "multiple_speakers"),
        ]
        for data, status, code in cases:
            r = await refine(client, vid, data)
            assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
        r = await client.post(f"/v1/voices/{vid}/refine", json={"file": "x"})
        assert r.status_code == 415 and r.json()["error"]["code"] == "bad_content_type"
        missing = await refine(client, "clone_0123456789abcdef", None)
        assert missing.status_code == 404
        assert (await client.get(f"/v1/voices/{vid}")).json() == before


async def test_two_speakers_make_a_usable_clone_whose_refinement_is_skipped(
    fs2: ServerThread, speech: Speech, other_speech: Speech
) -> None:
    async with httpx.AsyncClient(base_url=fs2.url, timeout=60) as client:
        r = await create(client, two_speakers(speech, other_speech), name="Interview")
        assert r.status_code == 201, r.text
        body = await settled(client, r.json()["id"])
        assert body["state"] == "refine_skipped" and body["refinement"] is None
        assert body["warning"]["code"] == "multiple_speakers"
        events, samples = await speak(fs2.ws_url, body["id"])
        assert events[-1]["type"] == "done" and samples > 24000


async def test_the_worker_process_refines_and_the_refinement_survives_a_restart(
    family: AcousticFamily, speech: Speech, tmp_path: Path
) -> None:
    with ServerThread(_app(family, tmp_path)) as srv:  # the default: a niced worker process
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            vid = (await create(client, to_bytes(*speech))).json()["id"]
            body = await settled(client, vid)
            assert body["state"] == "refined", body
            check_figures(body["refinement"])
            assert body["refinement"]["ge2e_similarity_after"] > 0.5
    app = _app(family, tmp_path, clone_refine=False)  # restarted (refinement off, even)
    with ServerThread(app) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            again = (await client.get(f"/v1/voices/{vid}")).json()
            assert again == body
            events, _ = await speak(srv.ws_url, vid)
            assert events[-1]["type"] == "done"
            voice = app.state.service.voice(vid)
            assert voice is not None and voice.timbre is not None  # spoken refined
            r = await refine(client, vid, None)
            assert r.status_code == 409 and r.json()["error"]["code"] == "refine_unavailable"


async def test_a_server_without_the_acoustic_model_cannot_refine(
    server: ServerThread, speech: Speech
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await create(client, to_bytes(*speech))
        assert r.status_code == 201
        body = r.json()
        assert body["state"] == "refine_unavailable" and body["refinement"] is None
        assert "acoustic model" in body["warning"]["message"]
        r = await refine(client, body["id"], None)
        assert r.status_code == 409 and r.json()["error"]["code"] == "refine_unavailable"
        assert "acoustic model" in r.json()["error"]["message"]
