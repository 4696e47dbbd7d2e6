"""Shared pieces of the transport tests."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.voices.voice_fixtures import other_speech, redis_server, speech  # noqa: F401


async def collect(
    ws: Any, *, until: str | tuple[str, ...] = "done", timeout: float = 60
) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Events and binary frames from ``ws`` up to the first event whose type is ``until``
    (one type or several)."""
    stop = (until,) if isinstance(until, str) else until
    events: list[dict[str, Any]] = []
    audio: list[bytes] = []
    async with asyncio.timeout(timeout):
        while True:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                audio.append(msg)
                continue
            events.append(json.loads(msg))
            if events[-1]["type"] in stop:
                return events, audio


class LogRecords(logging.Handler):
    """Warnings and errors logged while a test runs (attach to the loggers to watch)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_log() -> Iterator[list[logging.LogRecord]]:
    """Warnings and errors the server logs (uvicorn's own loggers do not reach the root)."""
    handler = LogRecords()
    loggers = [logging.getLogger(name) for name in ("uvicorn", "emostream")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler.records
    for logger in loggers:
        logger.removeHandler(handler)
