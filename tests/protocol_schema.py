"""The protocol's JSON Schema (``emostream/transport/schema/protocol.schema.json``) as test
validators, shared by the transport, load-test and plugin tests.

* :func:`check_client` — a message a client sends: valid, and (strict) no field the schema does
  not name, so a typo or a field the server would silently ignore fails the test.
* :func:`check_event` — an event the server sends: valid and strict (every field it writes is
  in the schema); :func:`check_room_event` — one a room listener gets.
* :func:`schema_accepts` — the schema's verdict on a raw text frame, for comparison with the
  server's: the schema's ``x-envelope`` rules (an object, nesting depth, valid Unicode) and then
  ``#/$defs/client_message`` (not strict: the server ignores fields it does not know).
* :func:`record_messages` — every JSON message the server parsed on its sockets (``load_message``
  wrapped), for tests that drive a real client against a real server.

Needs ``jsonschema`` (the ``dev`` extra); the server itself never imports it.
"""

from __future__ import annotations

import copy
import json
import math
import re
from functools import cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from emostream.transport import schema as protocol_schema

CLIENT_DEFS = ("start", "text", "flush", "end", "cancel", "line", "clear", "speech_request")
EVENT_DEFS = ("started", "segment", "timestamps", "words", "mouth", "done", "error",
              "line_dropped", "queue", "room_hello")  # fmt: skip
_SURROGATE = re.compile("[\ud800-\udfff]")


@cache
def _validator(name: str, strict: bool) -> Draft202012Validator:
    root = copy.deepcopy(protocol_schema.schema())
    if strict:
        for key in (*CLIENT_DEFS, *EVENT_DEFS, "format"):
            root["$defs"][key]["unevaluatedProperties"] = False
    root.pop("$id")  # resolved in memory
    return Draft202012Validator({**root, "$ref": f"#/$defs/{name}"})


def errors(instance: Any, name: str = "client_message", *, strict: bool = True) -> list[str]:
    """What is wrong with ``instance`` as ``$defs/<name>`` (empty: valid)."""
    found = _validator(name, strict).iter_errors(instance)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(message)'}: {e.message}" for e in found]


def check_client(msg: dict[str, Any], name: str = "client_message") -> None:
    problems = errors(msg, name)
    assert not problems, (msg, problems)


def check_event(event: dict[str, Any]) -> None:
    problems = errors(event, "server_event")
    assert not problems, (event, problems)


def check_room_event(event: dict[str, Any]) -> None:
    """An event a room listener gets (``$defs/room_event``), strict."""
    problems = errors(event, "room_event")
    assert not problems, (event, problems)


def envelope_ok(value: Any) -> bool:
    """The schema's ``x-envelope`` rules JSON Schema cannot say: nested at most ``max_depth``
    (the message object is level 1), every key and string valid Unicode."""
    limit = protocol_schema.envelope()["max_depth"]
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return False
        elif isinstance(item, (dict, list)):
            if depth > limit:
                return False
            if isinstance(item, dict):
                if any(_SURROGATE.search(k) for k in item):
                    return False
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
    return True


def has_non_finite(value: Any) -> bool:
    """NaN or an infinity anywhere (not JSON: RFC 8259 has no such numbers)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse(raw: str) -> Any:
    """``raw`` as JSON (None when it is not JSON at all)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def schema_accepts(msg: Any) -> bool:
    return isinstance(msg, dict) and envelope_ok(msg) and not errors(msg, strict=False)


class Recorder:
    """Every message the server's WebSocket layer parsed, in order."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def check(self) -> None:
        """Every recorded message is a valid client message (strict)."""
        for msg in self.messages:
            check_client(msg)


def record_messages(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Record what clients send to any in-process server (``ServerThread``) for the rest of
    the test (``monkeypatch`` undoes it)."""
    import emostream.transport.websocket.intake as intake_module

    recorder = Recorder()
    parse_message = intake_module.load_message

    def recording(raw: str | bytes) -> dict[str, Any]:
        msg = parse_message(raw)
        recorder.messages.append(copy.deepcopy(msg))
        return msg

    monkeypatch.setattr(intake_module, "load_message", recording)
    return recorder
