"""Every route against a server with API keys: no key, a wrong key, a key, a token, another
key's clone. ``/healthz`` stays open; everything else answers 401 (a WebSocket upgrade too)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from emostream.transport.edge.auth import TokenSigner, new_key
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav
from tests.transport.test_cloning_flow import CLIP_TEXT

SECRET = "t" * 40
ENV_KEY = "env-key-0123456789abcdef"


@pytest.fixture(scope="module")
def keyed(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerThread, dict[str, str]]]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    tmp = tmp_path_factory.mktemp("keyed")
    alice, alice_entry = new_key("alice")
    bob, bob_entry = new_key("bob")
    (tmp / "keys").write_text(f"{alice_entry.line()}\n{bob_entry.line()}\n", encoding="utf-8")
    settings = Settings(
        data_dir=str(tmp / "data"),
        api_keys_file=str(tmp / "keys"),
        api_keys=ENV_KEY,
        token_secret=SECRET,
        key_clones_per_hour=100,
    )
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv, {"alice": alice, "bob": bob}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/metrics", {}),
    ("GET", "/v1/voices", {}),
    ("GET", "/v1/voices/clone_0123456789abcdef", {}),
    ("DELETE", "/v1/voices/clone_0123456789abcdef", {}),
    ("POST", "/v1/voices", {"files": {"file": ("a.wav", b"RIFF", "audio/wav")}}),
    ("POST", "/v1/audio/speech", {"json": {"input": "Hi."}}),
    ("POST", "/v1/tokens", {}),
    ("GET", "/v1/models", {}),
    ("GET", "/v1/models/tts-1", {}),
]


@pytest.mark.parametrize("method,path,extra", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
@pytest.mark.parametrize("credential", ["none", "wrong", "not-bearer"])
async def test_every_route_but_healthz_needs_a_key(
    keyed: tuple[ServerThread, dict[str, str]],
    method: str,
    path: str,
    extra: dict[str, Any],
    credential: str,
) -> None:
    server, _ = keyed
    headers = {
        "none": {},
        "wrong": auth("es_00000000_" + "x" * 43),
        "not-bearer": {"Authorization": f"Basic {ENV_KEY}"},
    }[credential]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.request(method, path, headers=headers, **extra)
        assert r.status_code == 401, (path, r.text)
        assert r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"


async def test_keys_open_every_route(keyed: tuple[ServerThread, dict[str, str]]) -> None:
    server, keys = keyed
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for key in [keys["alice"], ENV_KEY]:
            assert (await client.get("/metrics", headers=auth(key))).status_code == 200
            r = await client.get("/v1/voices", headers=auth(key))
            assert r.status_code == 200 and r.json()["voices"][0]["id"] == "joe"
            r = await client.post(
                "/v1/audio/speech",
                json={"input": "Hi there.", "response_format": "wav"},
                headers=auth(key),
            )
            assert r.status_code == 200 and len(r.content) > 44 + 4800
        metrics = (await client.get("/metrics", headers=auth(ENV_KEY))).text
    assert 'emostream_errors_total{code="unauthorized"}' in metrics


async def ws_first_event(url: str, **kwargs: Any) -> dict[str, Any]:
    async with websockets.connect(url, compression=None, **kwargs) as ws:
        await ws.send(json.dumps({"type": "start"}))
        event: dict[str, Any] = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "cancel"}))
        return event


async def test_websocket_keys_and_tokens(keyed: tuple[ServerThread, dict[str, str]]) -> None:
    server, keys = keyed
    for kwargs in [{}, {"additional_headers": auth("wrong-key-0123456789")}]:
        with pytest.raises(InvalidStatus) as refused:
            await ws_first_event(server.ws_url, **kwargs)
        assert refused.value.response.status_code == 401
        assert json.loads(refused.value.response.body)["error"]["code"] == "unauthorized"
    started = await ws_first_event(server.ws_url, additional_headers=auth(keys["bob"]))
    assert started["type"] == "started"

    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.post("/v1/tokens", headers=auth(keys["alice"]))
        assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
        token = r.json()["token"]
        assert r.json()["expires_in"] == 300
        # A token opens HTTP routes as its key's principal but cannot mint another token.
        assert (await client.get("/v1/voices", headers=auth(token))).status_code == 200
        again = await client.post("/v1/tokens", headers=auth(token))
        assert again.status_code == 401
    # Browsers: the token as a subprotocol (the server answers with emostream.v1) or a query.
    async with websockets.connect(
        server.ws_url, compression=None, subprotocols=["emostream.v1", f"emostream.token.{token}"]
    ) as ws:
        assert ws.subprotocol == "emostream.v1"
        await ws.send(json.dumps({"type": "start"}))
        assert json.loads(await ws.recv())["type"] == "started"
    assert (await ws_first_event(f"{server.ws_url}?access_token={token}"))["type"] == "started"
    # Expired and forged tokens.
    old, _ = TokenSigner(SECRET.encode(), ttl_s=10, clock=lambda: time.time() - 60).mint("alice")
    forged, _ = TokenSigner(b"f" * 40).mint("alice")
    for bad, code in [(old, "token_expired"), (forged, "unauthorized")]:
        with pytest.raises(InvalidStatus) as refused:
            await ws_first_event(f"{server.ws_url}?access_token={bad}")
        assert json.loads(refused.value.response.body)["error"]["code"] == code


async def test_keys_are_refused_in_queries_and_subprotocols(
    keyed: tuple[ServerThread, dict[str, str]],
) -> None:
    """A long-lived key where URLs and subprotocol lists travel (access logs, history,
    proxies) is refused, with a message naming the header; the same key in it still opens."""
    server, keys = keyed
    for key in [keys["alice"], ENV_KEY]:
        offers: list[dict[str, Any]] = [
            {"uri": f"{server.ws_url}?access_token={key}"},
            {"uri": server.ws_url, "subprotocols": ["emostream.v1", f"emostream.token.{key}"]},
            {"uri": server.ws_url, "subprotocols": [f"emostream.token.{key}"]},
        ]
        for offer in offers:
            with pytest.raises(InvalidStatus) as refused:
                await ws_first_event(offer.pop("uri"), **offer)
            assert refused.value.response.status_code == 401
            body = json.loads(refused.value.response.body)["error"]
            assert body["code"] == "unauthorized"
            assert "Authorization: Bearer" in body["message"] and "token" in body["message"]
        started = await ws_first_event(server.ws_url, additional_headers=auth(key))
        assert started["type"] == "started"
    async with httpx.AsyncClient(base_url=server.url) as client:  # HTTP reads no query at all
        r = await client.get(f"/v1/voices?access_token={keys['alice']}")
        assert r.status_code == 401


async def test_a_clone_belongs_to_its_key(
    keyed: tuple[ServerThread, dict[str, str]], joe: PiperVoice, tmp_path: Path
) -> None:
    server, keys = keyed
    alice, bob = auth(keys["alice"]), auth(keys["bob"])
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post(
            "/v1/voices",
            files={"file": ("me.wav", wav, "audio/wav")},
            data={"name": "Alice"},
            headers=alice,
        )
        assert r.status_code == 201, r.text
        vid = r.json()["id"]

        def ids(resp: httpx.Response) -> set[str]:
            return {v["id"] for v in resp.json()["voices"]}

        assert vid in ids(await client.get("/v1/voices", headers=alice))
        assert vid not in ids(await client.get("/v1/voices", headers=bob))
        assert vid not in ids(await client.get("/v1/voices", headers=auth(ENV_KEY)))
        assert (await client.get(f"/v1/voices/{vid}", headers=alice)).status_code == 200
        assert (await client.get(f"/v1/voices/{vid}", headers=bob)).status_code == 404
        speech = {"input": "Hi.", "voice": vid}
        r = await client.post("/v1/audio/speech", json=speech, headers=bob)
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_voice"
        r = await client.post("/v1/audio/speech", json=speech, headers=alice)
        # This server has no model that speaks clones: the owner is told so; bob is not.
        assert r.status_code == 409 and r.json()["error"]["code"] == "voice_unavailable"
        assert (await client.delete(f"/v1/voices/{vid}", headers=bob)).status_code == 404
        async with websockets.connect(server.ws_url, additional_headers=bob) as ws:
            await ws.send(json.dumps({"type": "start", "voice": vid}))
            assert json.loads(await ws.recv())["code"] == "unknown_voice"
        async with websockets.connect(server.ws_url, additional_headers=alice) as ws:
            await ws.send(json.dumps({"type": "start", "voice": vid}))
            assert json.loads(await ws.recv())["code"] == "voice_unavailable"
        assert (await client.get(f"/v1/voices/{vid}", headers=alice)).status_code == 200
        assert (await client.delete(f"/v1/voices/{vid}", headers=alice)).status_code == 204
        assert (await client.get(f"/v1/voices/{vid}", headers=alice)).status_code == 404
