"""A live server on loopback (the embedded voice ``joe``) with an API key, for the compatible
APIs' official clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread

KEY = "compat-test-key-0123456789abcdef"
VOICE = "joe"
TEXT = "Hello from a compatible client. This is the second sentence, and it goes on a while."


@pytest.fixture(scope="module")
def keyed_server(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(api_keys=KEY, data_dir=str(tmp_path_factory.mktemp("compat-data")),
                        max_contexts_per_connection=4)  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv
