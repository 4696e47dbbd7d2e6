"""The protocol's one machine-readable definition: ``protocol.schema.json`` (JSON Schema, draft
2020-12, shipped with the package), and what the server reads from it.

The schema names every client message (``start``, ``text``, ``flush``, ``end``, ``cancel``,
``line``, ``clear``) with each field's type, bounds and enum, every server event, the HTTP
speech body and the v1.1 binary frame header (``x-binary-frame``). The server's validators in
:mod:`emostream.transport.messages` take their field lists, ranges and enums from here (no
validator library at run time); the JS client (``client_js/src/protocol-schema.js``, made from
this file by ``client_js/scripts/schema.mjs``), the load generator and the plugins are tested
against it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_NAME = "protocol.schema.json"


@cache
def schema() -> dict[str, Any]:
    """The schema as parsed JSON (read once)."""
    text = resources.files(__package__).joinpath(SCHEMA_NAME).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def definition(name: str) -> dict[str, Any]:
    """``$defs/<name>``."""
    found: dict[str, Any] = schema()["$defs"][name]
    return found


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` (a pointer into this schema) resolved, its own keys winning."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target: dict[str, Any] = schema()
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        return {**_resolve(target), **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def fields(name: str) -> dict[str, dict[str, Any]]:
    """Every property of ``$defs/<name>``, those it takes through ``allOf`` ``$ref`` included
    (its own win), each with its ``$ref`` resolved."""
    node = definition(name)
    out: dict[str, dict[str, Any]] = {}
    for part in node.get("allOf", ()):
        ref = part.get("$ref", "")
        if ref.startswith("#/$defs/"):
            out.update(fields(ref.removeprefix("#/$defs/")))
    for key, prop in node.get("properties", {}).items():
        out[key] = _resolve(prop)
    return out


def own_fields(name: str) -> tuple[str, ...]:
    """The properties ``$defs/<name>`` declares itself (not those of its ``allOf``)."""
    return tuple(definition(name).get("properties", {}))


def number_range(name: str, key: str) -> tuple[float, float]:
    """``minimum`` and ``maximum`` of a numeric field, as floats."""
    prop = fields(name)[key]
    return float(prop["minimum"]), float(prop["maximum"])


def int_range(name: str, key: str) -> tuple[int, int]:
    prop = fields(name)[key]
    return int(prop["minimum"]), int(prop["maximum"])


def default(name: str, key: str) -> Any:
    return fields(name)[key]["default"]


def choices(name: str, key: str) -> tuple[Any, ...]:
    """A field's ``enum`` without ``null``, in the schema's order."""
    return tuple(v for v in fields(name)[key]["enum"] if v is not None)


def max_length(name: str, key: str) -> int:
    """``maxLength`` of a string field (also inside an ``anyOf`` with ``null``)."""
    prop = fields(name)[key]
    for option in (prop, *prop.get("anyOf", ())):
        if "maxLength" in option:
            return int(option["maxLength"])
    raise KeyError(f"{name}.{key} has no maxLength")


def message_types() -> tuple[str, ...]:
    """The client message types, in the schema's order."""
    return tuple(definition("client_message")["properties"]["type"]["enum"])


def envelope() -> dict[str, Any]:
    found: dict[str, Any] = schema()["x-envelope"]
    return found


PROTOCOL_VERSION: str = schema()["x-protocol-version"]
