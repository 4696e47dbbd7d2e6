"""Durability of cloned voices: ``kill -9`` during 20 concurrent uploads, then a restart on the
same data dir: every acknowledged clone is listed, every listed clone is whole (embedding and
clip) and speakable, none is half-written."""

from __future__ import annotations

import asyncio
import io
import signal
import sqlite3
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import clip_wav
from tests.transport.served import Served

CLIP_TEXT = "This is my own voice, and I would like the stream to use it from now on."
UPLOADS = 20
KILL_AFTER = 6  # acknowledged uploads before the kill (the rest are in flight)

pytestmark = pytest.mark.slow


def variants(wav: bytes, n: int) -> list[bytes]:
    """``n`` clips of the same speech at slightly different gains: different bytes, so each
    upload is decoded, embedded and stored on its own (no cache hit)."""
    audio, rate = sf.read(io.BytesIO(wav), dtype="float32")
    out = []
    for i in range(n):
        buf = io.BytesIO()
        sf.write(buf, audio * (0.9 - 0.02 * i), rate, format="WAV", subtype="PCM_16")
        out.append(buf.getvalue())
    return out


async def upload_until_killed(srv: Served, clips: list[bytes]) -> set[str]:
    """Upload every clip at once; SIGKILL the server after ``KILL_AFTER`` are acknowledged.
    Returns the acknowledged ids."""
    acked: set[str] = set()
    enough = asyncio.Event()

    async def one(client: httpx.AsyncClient, i: int, wav: bytes) -> None:
        try:
            r = await client.post(
                "/v1/voices", files={"file": ("c.wav", wav, "audio/wav")}, data={"name": f"v{i}"}
            )
        except httpx.HTTPError:
            return  # cut by the kill
        assert r.status_code == 201, r.text
        acked.add(r.json()["id"])
        if len(acked) >= KILL_AFTER:
            enough.set()

    async with httpx.AsyncClient(base_url=srv.url, timeout=120) as client:
        tasks = [asyncio.create_task(one(client, i, w)) for i, w in enumerate(clips)]
        async with asyncio.timeout(180):
            await enough.wait()
        srv.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        await asyncio.gather(*tasks)
    srv.proc.wait()  # type: ignore[union-attr]
    return acked


def whole_rows(db: Path) -> dict[str, str]:
    """Every stored clone checked field by field: id → '' when whole, else what is wrong."""
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = con.execute("SELECT id, name, embedding, clip_flac FROM cloned_voices").fetchall()
    finally:
        con.close()
    verdict: dict[str, str] = {}
    for vid, name, emb, flac in rows:
        problem = ""
        vec = np.frombuffer(emb or b"", dtype="<f4")
        if vec.size == 0 or not np.isfinite(vec).all() or np.linalg.norm(vec) < 1e-3:
            problem = "embedding"
        elif not name:
            problem = "name"
        else:
            try:
                audio, _ = sf.read(io.BytesIO(flac), dtype="float32")
                if audio.size < 16000:
                    problem = "clip too short"
            except Exception as exc:  # noqa: BLE001 - any decode failure is a half-written clip
                problem = f"clip: {exc}"
        verdict[str(vid)] = problem
    return verdict


async def test_kill_9_during_uploads_then_every_listed_voice_speaks(
    tmp_path: Path, joe: PiperVoice
) -> None:
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    clips = variants(wav, UPLOADS)
    env = {"EMOSTREAM_DATA_DIR": str(tmp_path / "data"), "EMOSTREAM_ACOUSTIC": "on"}
    log = tmp_path / "server.log"
    first = Served(log, env).start()
    try:
        async with httpx.AsyncClient(base_url=first.url, timeout=5) as client:
            health = (await client.get("/healthz")).json()
        assert health["cloning"] is True, "the acoustic model did not load (models/ missing?)"
        acked = await upload_until_killed(first, clips)
    finally:
        first.stop()
    assert first.proc is not None and first.proc.returncode == -signal.SIGKILL

    with Served(log, env) as second:
        async with httpx.AsyncClient(base_url=second.url, timeout=120) as client:
            listed = {
                v["id"]: v
                for v in (await client.get("/v1/voices")).json()["voices"]
                if v.get("type") == "cloned"
            }
            assert acked <= set(listed), f"acknowledged but lost: {acked - set(listed)}"
            rows = whole_rows(Path(env["EMOSTREAM_DATA_DIR"]) / "voices.sqlite3")
            assert set(rows) == set(listed)
            assert not {k: v for k, v in rows.items() if v}, rows
            for vid, voice in listed.items():
                assert voice["speakable"] is True, voice
                r = await client.post(
                    "/v1/audio/speech",
                    json={"input": "Hello there.", "voice": vid, "response_format": "pcm"},
                )
                assert r.status_code == 200, r.text
                pcm = np.frombuffer(r.content, dtype=np.int16)
                assert pcm.size > 4000 and np.abs(pcm).max() > 500, vid
    text = log.read_text()
    print(f"kill -9 after {len(acked)} acknowledged of {UPLOADS}: {len(listed)} listed, all speak")
    assert "Traceback" not in text.split("Started server process")[-1]
