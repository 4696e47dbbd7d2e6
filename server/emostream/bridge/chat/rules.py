"""What the chat policy does: priorities and TTLs by kind, limits, the block list, templates.

:class:`ChatRules` is plain data with defaults; :func:`load_rules` reads a TOML file (every key
optional; an unknown key or a wrong type is an error that names it) and :meth:`ChatRules.with_`
applies command-line flags over it::

    [priority]            # -1000..1000; the server speaks higher first
    chat = 0
    superchat = 5
    [ttl_s]               # how long a line may wait to be heard (seconds)
    chat = 8
    gift = 30
    [limits]
    user_lines = 3        # lines a user may have spoken ...
    user_window_s = 30    # ... within this many seconds (paid events are not counted)
    max_chars = 200       # a longer chat line is dropped (a paid one is cut)
    duplicate_window_s = 30
    similarity = 0.85     # 0..1: lines this alike count as the same (1: identical only)
    gift_merge_s = 2.0    # one user's gifts of one kind this close together: one line
    [block]
    users = ["spambot"]   # names or user ids, any case
    words = ["badword"]   # any line containing one (any case) is dropped
    [templates.twitch]    # {user} {text} {count} {item} {amount}
    bits = "{user} cheered {amount} bits. {text}"
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from emostream.bridge.chat.events import KINDS

MAX_PRIORITY = 1000

DEFAULT_PRIORITY: dict[str, int] = {
    "chat": 0, "free_gift": 1, "gift": 2, "bits": 2, "sub": 3, "resub": 3, "subgift": 3,
    "raid": 3, "guard": 4, "superchat": 5,
}  # fmt: skip
DEFAULT_TTL_S: dict[str, float] = {
    "chat": 8.0, "free_gift": 10.0, "gift": 30.0, "bits": 30.0, "sub": 30.0, "resub": 30.0,
    "subgift": 30.0, "raid": 30.0, "guard": 60.0, "superchat": 60.0,
}  # fmt: skip

# Spoken text by platform and kind; ``<kind>_many``: when ``count`` > 1. A template's text is
# cleaned of a dangling ": " or ". " when ``{text}`` is empty.
ZH = {
    "chat": "{text}",
    "free_gift": "谢谢{user}送的{count}个{item}",
    "gift": "谢谢{user}送的{count}个{item}",
    "guard": "感谢{user}开通{item}",
    "superchat": "{user}的醒目留言：{text}",
}
EN = {
    "chat": "{text}",
    "free_gift": "Thanks {user} for the {item}!",
    "gift": "Thanks {user} for the {item}!",
    "gift_many": "Thanks {user} for {count} {item}!",
    "bits": "{user} cheered {amount} bits. {text}",
    "sub": "Thanks for subscribing, {user}! {text}",
    "resub": "{user} subscribed for {count} months. {text}",
    "subgift": "{user} gifted a sub to {item}!",
    "subgift_many": "{user} gifted {count} subs!",
    "raid": "{user} is raiding with {count} viewers!",
    "guard": "Thanks {user} for the {item}!",
    "superchat": "Super chat from {user}: {text}",
}
DEFAULT_TEMPLATES: dict[str, dict[str, str]] = {"bilibili": ZH, "twitch": EN, "default": EN}
TEMPLATE_FIELDS = {"user", "text", "count", "item", "amount"}

LIMIT_KEYS = ("user_lines", "user_window_s", "max_chars", "duplicate_window_s", "similarity",
              "gift_merge_s")  # fmt: skip


class RulesError(ValueError):
    """A rules file or flag that cannot be used (the message says which key and why)."""


@dataclass(frozen=True)
class ChatRules:
    priority: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PRIORITY))
    ttl_s: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TTL_S))
    user_lines: int = 3  # 0: no per-user limit
    user_window_s: float = 30.0
    max_chars: int = 200
    duplicate_window_s: float = 30.0  # 0: no de-duplication of text
    similarity: float = 0.85
    gift_merge_s: float = 2.0  # 0: every gift event its own line
    block_users: frozenset[str] = frozenset()  # casefolded
    block_words: tuple[str, ...] = ()  # casefolded
    templates: dict[str, dict[str, str]] = field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_TEMPLATES.items()}
    )
    chat_template: str | None = None  # --template: a chat line's text on every platform

    def __post_init__(self) -> None:
        _check_limits(self)

    def template(self, platform: str, kind: str, count: int = 1) -> str | None:
        """The template for ``kind`` on ``platform`` (``<kind>_many`` when ``count`` > 1),
        the platform's own before the defaults."""
        if kind == "chat" and self.chat_template is not None:
            return self.chat_template
        keys = (f"{kind}_many", kind) if count > 1 else (kind,)
        for table in (self.templates.get(platform, {}), self.templates["default"]):
            for key in keys:
                if key in table:
                    return table[key]
        return None

    def with_(self, **changes: Any) -> ChatRules:
        """A copy with ``changes`` (``None`` values are left as they are); checked again.
        ``block_users``/``block_words`` given here are added to those already held."""
        given = {k: v for k, v in changes.items() if v is not None}
        if "block_users" in given:
            given["block_users"] = self.block_users | {u.casefold() for u in given["block_users"]}
        if "block_words" in given:
            words = [w.casefold() for w in given["block_words"] if w.strip()]
            given["block_words"] = (*self.block_words, *words)
        return replace(self, **given)


def _check_limits(r: ChatRules) -> None:
    for kind, p in r.priority.items():
        if kind not in KINDS:
            raise RulesError(f"priority: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        if isinstance(p, bool) or not isinstance(p, int) or abs(p) > MAX_PRIORITY:
            raise RulesError(f"priority.{kind} must be a whole number from -1000 to 1000")
    for kind, t in r.ttl_s.items():
        if kind not in KINDS:
            raise RulesError(f"ttl_s: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        if not _number(t) or not 0.001 <= t <= 600:
            raise RulesError(f"ttl_s.{kind} must be from 0.001 to 600 seconds")
    if isinstance(r.user_lines, bool) or not isinstance(r.user_lines, int) or r.user_lines < 0:
        raise RulesError("limits.user_lines must be a whole number >= 0 (0: no limit)")
    if isinstance(r.max_chars, bool) or not isinstance(r.max_chars, int) or r.max_chars < 1:
        raise RulesError("limits.max_chars must be a whole number >= 1")
    for name in ("user_window_s", "duplicate_window_s", "gift_merge_s"):
        value = getattr(r, name)
        if not _number(value) or value < 0 or value > 3600:
            raise RulesError(f"limits.{name} must be from 0 to 3600 seconds")
    if not _number(r.similarity) or not 0.0 < r.similarity <= 1.0:
        raise RulesError("limits.similarity must be above 0 and at most 1")
    for platform, table in r.templates.items():
        for key, text in table.items():
            _check_template(f"templates.{platform}.{key}", text)
    if r.chat_template is not None:
        _check_template("--template", r.chat_template)


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _check_template(where: str, text: object) -> None:
    import string

    if not isinstance(text, str) or not text.strip():
        raise RulesError(f"{where} must be a non-empty string")
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(text) if n is not None}
    except ValueError as exc:
        raise RulesError(f"{where}: {exc}") from None
    if names - TEMPLATE_FIELDS:
        raise RulesError(f"{where} takes {{{'}, {'.join(sorted(TEMPLATE_FIELDS))}}} only, "
                         f"not {{{', '.join(sorted(names - TEMPLATE_FIELDS))}}}")  # fmt: skip


def rules_from_dict(data: dict[str, Any], base: ChatRules | None = None) -> ChatRules:
    """Rules from a parsed TOML document over ``base`` (default: the defaults)."""
    rules = base or ChatRules()
    unknown = set(data) - {"priority", "ttl_s", "limits", "block", "templates"}
    if unknown:
        raise RulesError(f"unknown section(s) {sorted(unknown)}; sections: priority, ttl_s, "
                         "limits, block, templates")  # fmt: skip
    changes: dict[str, Any] = {}
    for section in ("priority", "ttl_s"):
        table = _table(data, section)
        if table:
            changes[section] = {**getattr(rules, section), **table}
    limits = _table(data, "limits")
    if set(limits) - set(LIMIT_KEYS):
        raise RulesError(f"limits: unknown key(s) {sorted(set(limits) - set(LIMIT_KEYS))}; "
                         f"keys: {', '.join(LIMIT_KEYS)}")  # fmt: skip
    changes.update(limits)
    block = _table(data, "block")
    if set(block) - {"users", "words"}:
        raise RulesError("block takes users and words (lists of strings)")
    for key in ("users", "words"):
        items = block.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise RulesError(f"block.{key} must be a list of strings")
        changes[f"block_{key}"] = items
    templates = _table(data, "templates")
    if templates:
        merged = {k: dict(v) for k, v in rules.templates.items()}
        for platform, table in templates.items():
            if not isinstance(table, dict):
                raise RulesError(f"templates.{platform} must be a table")
            merged.setdefault(platform, {}).update(table)
        changes["templates"] = merged
    try:
        return rules.with_(**changes)
    except TypeError as exc:  # a wrong type reached a comparison in the checks
        raise RulesError(str(exc)) from None


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise RulesError(f"[{name}] must be a table")
    return table


def load_rules(path: str | Path, base: ChatRules | None = None) -> ChatRules:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise RulesError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{path}: not valid TOML ({exc})") from None
    return rules_from_dict(data, base)
