"""Start-up loads what the first request would otherwise wait for."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from emostream.config import Settings
from emostream.text import handles
from emostream.transport.app import create_app
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.piper_voice import PiperVoice


def test_startup_loads_the_handle_word_list(joe: PiperVoice, tmp_path: Path) -> None:
    """The handle splitter's word list (~0.15 s to load) is read when the app starts, not
    in the first line that names a handle."""
    handles._lexicon.cache_clear()
    settings = Settings(data_dir=str(tmp_path), redis_url="")
    app = create_app(settings, catalog=VoiceCatalog([joe]))
    assert handles._lexicon.cache_info().currsize == 0
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback Host
        assert client.get("/healthz").status_code == 200
        assert handles._lexicon.cache_info().currsize == 1
