"""Access logs hold no secret: query strings are redacted in uvicorn's request lines (HTTP and
WebSocket), first on records built as uvicorn builds them, then in a real ``emostream serve``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from emostream.transport.edge.access_log import RedactQuery, log_config, redact_target
from tests.transport.served import Served

SECRETS = [f"es_0123abcd_secret{i}-0123456789abcdefghij" for i in range(5)]


def test_redact_target() -> None:
    assert redact_target("/v1/stream?access_token=abc&x=1") == "/v1/stream?REDACTED"
    assert redact_target("/v1/stream") == "/v1/stream"
    assert redact_target("/?es_key_as_a_bare_name") == "/?REDACTED"


def test_filter_redacts_uvicorn_records() -> None:
    access = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/v1/voices?access_token={SECRETS[0]}", "1.1", 200), None,
    )  # fmt: skip
    upgrade = logging.LogRecord(
        "uvicorn.error", logging.INFO, __file__, 1, '%s - "WebSocket %s" [accepted]',
        ("127.0.0.1:5000", f"/v1/stream?access_token={SECRETS[1]}"), None,
    )  # fmt: skip
    other = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "%s?", ("a?b",), None)
    for record in (access, upgrade, other):
        assert RedactQuery().filter(record)
    assert access.getMessage() == '127.0.0.1:5000 - "GET /v1/voices?REDACTED HTTP/1.1" 200'
    assert upgrade.getMessage() == '127.0.0.1:5000 - "WebSocket /v1/stream?REDACTED" [accepted]'
    assert other.getMessage() == "a?b?"  # not a request target: left alone
    config = log_config()
    for name in ("uvicorn.access", "uvicorn.error"):
        assert config["loggers"][name]["filters"] == ["redact_query"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("access-log")
    env = {
        "EMOSTREAM_ACOUSTIC": "off",
        "EMOSTREAM_DATA_DIR": str(tmp / "data"),
        "EMOSTREAM_LOG_LEVEL": "info",
        "PYTHONUNBUFFERED": "1",  # the access log is on stdout: written as it comes
    }
    with Served(tmp / "server.log", env) as srv:
        yield srv


@pytest.mark.slow
async def test_serve_logs_no_query_secret(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as client:
        assert (await client.get(f"/healthz?access_token={SECRETS[0]}")).status_code == 200
        assert (await client.get(f"/v1/voices?api_key={SECRETS[1]}&x=1")).status_code == 200
    async with websockets.connect(f"{served.ws_url}?access_token={SECRETS[2]}") as ws:
        await ws.send(json.dumps({"type": "flush"}))
        assert json.loads(await ws.recv())["code"] == "not_started"
    with pytest.raises(InvalidStatus):  # refused upgrades are logged too
        await websockets.connect(
            f"{served.ws_url}?access_token={SECRETS[3]}", origin=Origin("https://evil.example")
        )
    async with httpx.AsyncClient(base_url=served.url) as client:
        assert (await client.get(f"/nowhere?{SECRETS[4]}")).status_code == 404
    served.stop()
    log = Path(served.log).read_text()
    assert not [s for s in SECRETS if s in log], log[-2000:]
    for line in [
        '"GET /healthz?REDACTED HTTP/1.1" 200',
        '"GET /v1/voices?REDACTED HTTP/1.1" 200',
        '"WebSocket /v1/stream?REDACTED" [accepted]',
        '"WebSocket /v1/stream?REDACTED" 403',
        '"GET /nowhere?REDACTED HTTP/1.1" 404',
    ]:
        assert line in log, (line, log[-2000:])
