"""Origin and Host checks: parsed, never by prefix (sans-I/O), then through a real server:
``http://127.evil.example`` opens no stream, a DNS-rebinding Host gets 421, and a page that
is not allowed cannot POST or DELETE (requests with no Origin still can)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from emostream.cli import main
from emostream.config import Settings
from emostream.transport.edge.auth import ConfigError
from emostream.transport.edge.origins import EdgeRules, HostPolicy, OriginPolicy, parse_origin
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread

OWN = "tts.example:8000"
LOOKALIKES = [
    "http://127.evil.example",
    "http://127.0.0.1.evil.example",
    "http://localhost.evil.example:8000",
    "http://evil.example#@127.0.0.1",
    "http://127.0.0.1@evil.example",
    "http://[::1].evil.example",
    "null",
    "file://",
]


@pytest.mark.parametrize("origin", LOOKALIKES)
def test_lookalike_loopback_origins_are_refused(origin: str) -> None:
    assert not OriginPolicy("").allows(origin, OWN)
    assert not OriginPolicy("http://127.0.0.1").allows(origin, OWN)


def test_origins_are_parsed() -> None:
    default = OriginPolicy("")
    for origin in ["http://127.0.0.1:9000", "http://127.0.0.2", "http://[::1]:8000",
                   "http://LOCALHOST:5173", "https://tts.example:8000"]:  # fmt: skip
        assert default.allows(origin, OWN), origin
    assert default.allows("https://tts.example", "tts.example")  # no port: the scheme's own
    assert not default.allows("https://tts.example", "tts.example:8443")
    listed = OriginPolicy("https://app.example:443, http://b.example:8080/")
    assert listed.allows("https://app.example", "x") and listed.allows("http://B.example:8080", "x")
    assert not listed.allows("http://app.example", "x")  # another scheme, another origin
    assert not listed.allows("https://app.example.evil.example", "x")
    assert parse_origin("https://app.example/path") is None
    for bad in ["app.example", "https://app.example/path", "ftp://a.example", "https://"]:
        with pytest.raises(ConfigError, match="allowed_origins"):
            OriginPolicy(bad)


def test_a_loopback_server_answers_loopback_hosts_only() -> None:
    hosts = HostPolicy("127.0.0.1")
    for ok in ["127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:9", "127.0.0.2", None]:
        assert hosts.allows(ok), ok
    for bad in ["rebind.evil.example:8000", "127.evil.example", "localhost.evil.example",
                "localhost.", "", "a@127.0.0.1", "127.0.0.1:99999", "127.0.0.1/x"]:  # fmt: skip
        assert not hosts.allows(bad), bad
    assert HostPolicy("localhost").enabled and HostPolicy("::1").enabled
    extra = HostPolicy("127.0.0.1", "tts.internal, Other.Example")
    assert extra.allows("tts.internal:8000") and extra.allows("other.example")
    assert not extra.allows("tts.internal.evil.example")
    assert not HostPolicy("0.0.0.0").enabled  # a public bind: any Host (keys guard it)
    assert HostPolicy("0.0.0.0", "tts.example").enabled  # unless hosts are named
    assert HostPolicy("127.0.0.1", "*").allows("anything.example")
    for bad in ["tts.internal:80", "http://tts.internal", "a b"]:
        with pytest.raises(ConfigError, match="allowed_hosts"):
            HostPolicy("127.0.0.1", bad)


def test_malformed_rules_refuse_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="cors_origins"):
        EdgeRules.from_settings(Settings(cors_origins="app.example"))
    monkeypatch.setenv("EMOSTREAM_ALLOWED_ORIGINS", "app.example")

    def run(*args: object, **kwargs: object) -> None:
        raise AssertionError("serve went on to run the server")

    monkeypatch.setattr("uvicorn.run", run)
    assert main(["serve"]) == 2  # before any model loads
    assert "is not an origin" in capsys.readouterr().err


def upgrade(host: str) -> dict[str, str]:
    """Headers of a WebSocket upgrade asking for ``host``."""
    return {"Host": host, "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}  # fmt: skip


async def test_rebinding_host_is_refused(
    server: ServerThread, server_log: list[logging.LogRecord]
) -> None:
    rebound = f"rebind.evil.example:{server.port}"
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        for path in ["/", "/healthz", "/v1/voices"]:
            r = await client.get(path, headers={"Host": rebound})
            assert r.status_code == 421, (path, r.text[:80])
            assert r.json()["error"]["code"] == "host_not_allowed"
            assert rebound in r.json()["error"]["message"]
            assert (await client.get(path, headers={"Host": f"localhost:{server.port}"})).is_success
        r = await client.get("/v1/stream", headers=upgrade(rebound))
        assert r.status_code == 421 and r.json()["error"]["code"] == "host_not_allowed"
        metrics = (await client.get("/metrics")).text
    assert 'emostream_errors_total{code="host_not_allowed"}' in metrics
    assert [rec.getMessage() for rec in server_log] == []


async def first_event(url: str, **kwargs: Any) -> dict[str, Any]:
    async with websockets.connect(url, compression=None, **kwargs) as ws:
        await ws.send(json.dumps({"type": "flush"}))
        event: dict[str, Any] = json.loads(await ws.recv())
        return event


async def test_lookalike_origin_opens_no_stream(server: ServerThread) -> None:
    for origin in ["http://127.evil.example", f"http://127.0.0.1.evil.example:{server.port}"]:
        with pytest.raises(InvalidStatus) as refused:
            await first_event(server.ws_url, origin=origin)
        assert refused.value.response.status_code == 403
        error = json.loads(refused.value.response.body)["error"]
        assert error["code"] == "origin_not_allowed"
    for origin in [f"http://127.0.0.1:{server.port}", "http://localhost:5173"]:
        assert (await first_event(server.ws_url, origin=origin))["code"] == "not_started"


SPEECH = json.dumps({"input": "Hi.", "response_format": "pcm"})


async def test_cross_site_posts_are_refused(server: ServerThread) -> None:
    """What a page on another site can send without a preflight (a text/plain POST) is refused
    by its Origin; the demo page (same origin) and clients with no Origin still work."""
    evil = {"Origin": "https://evil.example", "Content-Type": "text/plain"}
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        requests: list[tuple[str, str, dict[str, Any]]] = [
            ("POST", "/v1/audio/speech", {"content": SPEECH}),
            ("POST", "/v1/voices", {"files": {"file": ("a.wav", b"RIFF", "audio/wav")}}),
            ("DELETE", "/v1/voices/clone_0123456789abcdef", {}),
            ("POST", "/v1/tokens", {}),
        ]
        for method, path, extra in requests:
            headers = evil if "content" in extra else {"Origin": evil["Origin"]}
            r = await client.request(method, path, headers=headers, **extra)
            assert r.status_code == 403, (path, r.text[:80])
            assert r.json()["error"]["code"] == "origin_not_allowed"
            assert "https://evil.example" in r.json()["error"]["message"]
        for headers in [
            {"Content-Type": "text/plain"},  # curl, SDKs: no Origin
            {"Content-Type": "text/plain", "Origin": server.url},  # the demo page
            {"Content-Type": "application/json", "Origin": "http://localhost:5173"},
        ]:
            r = await client.post("/v1/audio/speech", content=SPEECH, headers=headers)
            assert r.status_code == 200 and len(r.content) > 1000, (headers, r.text[:80])
        r = await client.get("/v1/voices", headers={"Origin": evil["Origin"]})
        assert r.status_code == 200  # a read: the browser keeps the answer from that page


@pytest.fixture(scope="module")
def named(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """A loopback server that also answers ``tts.internal`` and gives CORS to app.example."""
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("named")),
        allowed_hosts="tts.internal",
        cors_origins="https://app.example",
    )
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def test_allowed_hosts_and_cors_origins(named: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=named.url, timeout=60) as client:
        assert (await client.get("/healthz", headers={"Host": "tts.internal"})).status_code == 200
        assert (await client.get("/healthz", headers={"Host": "tts.other"})).status_code == 421
        r = await client.post(
            "/v1/audio/speech", content=SPEECH, headers={"Origin": "https://app.example"}
        )
        assert r.status_code == 200
        r = await client.post(
            "/v1/audio/speech", content=SPEECH, headers={"Origin": "https://app.example.evil"}
        )
        assert r.status_code == 403
    with pytest.raises(InvalidStatus):  # CORS is for HTTP; WebSockets follow allowed_origins
        await first_event(named.ws_url, origin="https://app.example")
