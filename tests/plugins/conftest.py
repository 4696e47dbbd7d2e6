"""Shared pieces of the bot-framework plugin tests: a real EmoStream server on loopback (the
session's ``server`` fixture, embedded voice ``joe``) and quiet framework imports."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from types import ModuleType

import pytest

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.protocol_schema import record_messages

# Long enough that the server is still speaking when a test interrupts it (about 25 s of
# audio from joe, several seconds of synthesis even on a fast machine).
LONG_TEXT = " ".join(
    f"This is sentence number {n} of a long answer that the listener will interrupt."
    for n in range(1, 13)
)


@pytest.fixture(autouse=True)
def messages_follow_the_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every message a plugin sends to the in-process servers during a test is a valid client
    message of the protocol's JSON Schema, naming no field the schema lacks (checked after
    the test)."""
    recorder = record_messages(monkeypatch)
    yield
    recorder.check()


def import_framework(name: str) -> ModuleType:
    """``pytest.importorskip`` with the framework's import-time deprecation warnings (e.g.
    pipecat's ``audioop``) not turned into errors by the project's ``filterwarnings``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip(name)


def words_of(text: str) -> list[str]:
    """The words of ``text`` as the server times them (letters/digits, punctuation dropped)."""
    return re.findall(r"[\w']+", text)


@pytest.fixture(scope="session")
def idle_server(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    """A server that closes a socket idle for 1 s (``error`` ``idle_timeout``, close 1000), as a
    real one does after 60 s: a bot's next turn must reconnect by itself."""
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(max_streams=8, ws_idle_timeout_s=1.0,
                        data_dir=str(tmp_path_factory.mktemp("emostream-idle")))  # fmt: skip
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv
