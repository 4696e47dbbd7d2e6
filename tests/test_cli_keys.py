"""``emostream keys add`` and the start-up refusal of a public server with no keys."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from emostream.cli import main
from emostream.config import Settings
from emostream.transport.edge.auth import authenticator


def test_keys_add_prints_the_key_once_and_stores_its_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conf" / "keys"
    assert main(["keys", "add", "alice", "--file", str(path)]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("es_")
    assert main(["keys", "add", "bob", "--file", str(path)]) == 0
    bob = capsys.readouterr().out.strip()
    text = path.read_text()
    assert key not in text and bob not in text and len(text.splitlines()) == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    auth = authenticator(Settings(host="0.0.0.0", api_keys_file=str(path)))
    assert auth.principal(key) == "alice" and auth.principal(bob) == "bob"
    assert main(["keys", "add", "alice", "--file", str(path)]) == 2  # names are unique
    assert main(["keys", "add", "bad name", "--file", str(path)]) == 2


def test_serve_refuses_a_public_host_without_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (
        "EMOSTREAM_API_KEYS",
        "EMOSTREAM_API_KEYS_FILE",
        "EMOSTREAM_ALLOW_UNAUTHENTICATED",
    ):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "1"]) == 2
    assert "refusing to serve 0.0.0.0 with no API keys" in capsys.readouterr().err
