"""Access-log lines without secrets.

uvicorn logs every request target with its query string: HTTP on ``uvicorn.access``, WebSocket
upgrades on ``uvicorn.error`` (``"WebSocket /v1/stream?access_token=…" [accepted]``). A browser's
``?access_token=`` is a credential, and a client may put anything else there. The server reads
no query parameter but ``access_token``, so :class:`RedactQuery` replaces every query string in
those lines with ``REDACTED`` (names included: a client may send a secret as a bare name);
the path stays. :func:`log_config` is uvicorn's logging configuration with that filter on both
loggers (``emostream serve`` passes it to uvicorn).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

REDACTED = "REDACTED"


def redact_target(target: str) -> str:
    """``/path?query`` as ``/path?REDACTED``; a target with no query unchanged."""
    path, sep, _query = target.partition("?")
    return f"{path}?{REDACTED}" if sep else target


def _redacted(value: object) -> object:
    if isinstance(value, str) and value.startswith("/") and "?" in value:
        return redact_target(value)
    return value


class RedactQuery(logging.Filter):
    """A logging filter: every argument of a record that is a request target (``/…?…``) loses
    its query string. Keeps every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(a) for a in record.args)
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration with :class:`RedactQuery` on ``uvicorn.access``
    and ``uvicorn.error`` (a filter on the logger: every handler gets the redacted record)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_query"] = {"()": RedactQuery}
    for name in ("uvicorn.access", "uvicorn.error"):
        config["loggers"].setdefault(name, {})["filters"] = ["redact_query"]
    return config
