"""Fixtures for the stream tests: the engine tests' acoustic voice over a small random model,
and a throwaway redis-server."""

from __future__ import annotations

from tests.engine.conftest import voice  # noqa: F401
from tests.voices.voice_fixtures import redis_server  # noqa: F401
