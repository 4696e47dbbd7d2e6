"""Per-key limits (sans-I/O with a fake clock), then the same limits, the idle timeout, the
origin allow-list, CORS and the body cap through a real server; each refusal counted."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from emostream.transport.edge.limits import KeyLimits, LimitExceeded, TokenBucket
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread

KEY_A = "key-a-0123456789abcdef"
KEY_B = "key-b-0123456789abcdef"


def test_token_bucket_refills_over_its_period() -> None:
    bucket = TokenBucket(capacity=60, period_s=60, level=60, at=0.0)
    assert bucket.take(50, 0.0) == 0 and bucket.level == 10
    assert bucket.take(20, 0.0) == pytest.approx(10.0)  # 10 more units at 1 per second
    assert bucket.level == 10  # a refused take takes nothing
    assert bucket.take(20, 10.0) == 0
    assert bucket.take(61, 1000.0) == float("inf")  # never fits


def test_key_limits_per_principal() -> None:
    now = [0.0]
    limits = KeyLimits(max_streams=2, chars_per_minute=100, clones_per_hour=2,
                       clock=lambda: now[0])  # fmt: skip
    a1, a2 = limits.open_stream("a"), limits.open_stream("a")
    with pytest.raises(LimitExceeded) as busy:
        limits.open_stream("a")
    assert busy.value.code == "too_many_streams"
    limits.open_stream("b").release()  # another key is not affected
    a1.release()
    a1.release()  # twice is once
    assert limits.open_streams("a") == 1
    limits.open_stream("a")
    a2.release()
    limits.charge_chars("a", 80)
    with pytest.raises(LimitExceeded) as chars:
        limits.charge_chars("a", 30)
    assert chars.value.code == "rate_limited" and chars.value.retry_after_s == pytest.approx(6.0)
    now[0] = 6.0
    limits.charge_chars("a", 30)
    limits.charge_clone("a")
    limits.charge_clone("a")
    with pytest.raises(LimitExceeded) as clones:
        limits.charge_clone("a")
    assert clones.value.code == "clone_quota" and clones.value.retry_after_s > 1000
    # The anonymous principal (auth off) is bounded by max_streams alone.
    for _ in range(10):
        limits.open_stream(None)
        limits.charge_chars(None, 10_000)
        limits.charge_clone(None)


@pytest.fixture(scope="module")
def limited(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("limited")),
        api_keys=f"{KEY_A},{KEY_B}",
        key_max_streams=1,
        key_chars_per_minute=120,
        key_clones_per_hour=1,
        ws_idle_timeout_s=1.0,
        max_body_bytes=2000,
        allowed_origins="https://app.example",
        cors_origins="https://app.example",
    )
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def recv_event(ws: Any) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            msg = await ws.recv()
            if isinstance(msg, str):
                event: dict[str, Any] = json.loads(msg)
                return event


def error_count(metrics: str, code: str) -> float:
    found = re.search(rf'emostream_errors_total{{code="{code}"}} ([0-9.e+]+)', metrics)
    return float(found.group(1)) if found else 0.0


async def metrics_text(server: ServerThread) -> str:
    async with httpx.AsyncClient(base_url=server.url) as client:
        return (await client.get("/metrics", headers=bearer(KEY_B))).text


async def test_streams_and_characters_per_key(limited: ServerThread) -> None:
    before = await metrics_text(limited)
    async with (
        websockets.connect(limited.ws_url, additional_headers=bearer(KEY_A)) as a1,
        websockets.connect(limited.ws_url, additional_headers=bearer(KEY_A)) as a2,
        websockets.connect(limited.ws_url, additional_headers=bearer(KEY_B)) as b,
    ):
        await a1.send(json.dumps({"type": "start"}))
        assert (await recv_event(a1))["type"] == "started"
        await a2.send(json.dumps({"type": "start"}))
        refused = await recv_event(a2)
        assert refused["code"] == "too_many_streams", refused
        await b.send(json.dumps({"type": "start"}))
        assert (await recv_event(b))["type"] == "started"  # another key has its own budget
        async with httpx.AsyncClient(base_url=limited.url) as client:
            r = await client.post("/v1/audio/speech", json={"input": "Hi."}, headers=bearer(KEY_A))
            assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_streams"
        # 120 characters a minute: the second 100-character message is refused, not spoken.
        await a1.send(json.dumps({"type": "text", "text": "x" * 100}))
        await a1.send(json.dumps({"type": "text", "text": "y" * 100}))
        event = await recv_event(a1)
        while event["type"] == "segment":
            event = await recv_event(a1)
        assert event["code"] == "rate_limited", event
        await a1.send(json.dumps({"type": "cancel"}))
        while (await recv_event(a1))["type"] != "done":
            pass
        # The slot is free again; the connection still works.
        await a2.send(json.dumps({"type": "start"}))
        assert (await recv_event(a2))["type"] == "started"
        await a2.send(json.dumps({"type": "cancel"}))
        await b.send(json.dumps({"type": "cancel"}))
    async with httpx.AsyncClient(base_url=limited.url) as client:
        r = await client.post("/v1/audio/speech", json={"input": "z" * 100}, headers=bearer(KEY_A))
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
        assert int(r.headers["retry-after"]) >= 1
    after = await metrics_text(limited)
    for code, n in [("too_many_streams", 2), ("rate_limited", 2)]:
        assert error_count(after, code) - error_count(before, code) == n, code


async def test_clone_uploads_per_hour(limited: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=limited.url) as client:
        form = {"files": {"file": ("a.wav", b"RIFFjunk", "audio/wav")}, "data": {"name": "x"}}
        first = await client.post("/v1/voices", headers=bearer(KEY_B), **form)  # type: ignore[arg-type]
        assert first.status_code != 429  # refused as a clip, but counted
        second = await client.post("/v1/voices", headers=bearer(KEY_B), **form)  # type: ignore[arg-type]
        assert second.status_code == 429 and second.json()["error"]["code"] == "clone_quota"
        assert int(second.headers["retry-after"]) > 60
    assert error_count(await metrics_text(limited), "clone_quota") >= 1


async def test_idle_connection_is_closed(limited: ServerThread) -> None:
    async with websockets.connect(limited.ws_url, additional_headers=bearer(KEY_B)) as ws:
        event = await recv_event(ws)  # nothing sent: the server speaks first after 1 s
        assert event["code"] == "idle_timeout"
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    # Activity resets the clock: messages every 0.5 s keep a connection open past 1 s.
    async with websockets.connect(limited.ws_url, additional_headers=bearer(KEY_B)) as ws:
        for _ in range(4):
            await asyncio.sleep(0.5)
            await ws.send(json.dumps({"type": "flush"}))
            assert (await recv_event(ws))["code"] == "not_started"
    assert error_count(await metrics_text(limited), "idle_timeout") >= 1


@pytest.mark.parametrize(
    "origin,allowed",
    [
        (None, True),
        ("https://app.example", True),
        ("http://localhost:3000", True),
        ("https://evil.example", False),
        ("null", False),
    ],
)
async def test_websocket_origin_allow_list(
    limited: ServerThread, origin: str | None, allowed: bool
) -> None:
    kwargs: dict[str, Any] = {"additional_headers": bearer(KEY_B)}
    if origin is not None:
        kwargs["origin"] = origin
    if allowed:
        async with websockets.connect(limited.ws_url, **kwargs) as ws:
            await ws.send(json.dumps({"type": "flush"}))
            assert (await recv_event(ws))["code"] == "not_started"
        return
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(limited.ws_url, **kwargs):
            pass
    assert refused.value.response.status_code == 403
    assert json.loads(refused.value.response.body)["error"]["code"] == "origin_not_allowed"


async def test_cors_and_body_cap(limited: ServerThread, server: ServerThread) -> None:
    pre = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization,content-type"}  # fmt: skip
    async with httpx.AsyncClient(base_url=limited.url) as client:
        r = await client.options("/v1/audio/speech", headers=pre)
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        r = await client.options("/v1/audio/speech", headers={**pre, "Origin": "https://e.x"})
        assert "access-control-allow-origin" not in r.headers
        r = await client.post("/v1/audio/speech", headers=bearer(KEY_B), json={"input": "a" * 3000})
        assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"

        async def chunks() -> Any:  # no content-length: the cap still holds
            for _ in range(10):
                yield b" " * 500

        r = await client.post("/v1/audio/speech", headers=bearer(KEY_B), content=chunks())
        assert r.status_code == 413
    async with httpx.AsyncClient(base_url=server.url) as client:  # default: no CORS at all
        r = await client.options("/v1/audio/speech", headers=pre)
        assert "access-control-allow-origin" not in r.headers
