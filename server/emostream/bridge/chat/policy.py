"""Which chat events are spoken, how, and in what order (sans-I/O).

:meth:`ChatPolicy.accept` takes one :class:`~emostream.bridge.chat.events.ChatEvent` and gives
the :class:`~emostream.bridge.lines.ChatLine` to speak now (with its priority and TTL by kind)
or a ``line_dropped`` event (``where: "chat"``) saying why not, checked in this order:

1. ``already_seen``: a message id taken before (a platform sending it again after a
   reconnect), or a sub that a mystery gift already announced (``part_of_gift``);
2. ``blocked``: the user is on the block list, or the text holds a blocked word;
3. ``empty``: nothing left to say once emotes, stickers and control characters are gone;
4. ``too_long``: a chat line over ``max_chars`` (a paid one is cut at a word instead);
5. ``rate_limited``: the user has had ``user_lines`` lines within ``user_window_s``;
6. ``duplicate``: the same or nearly the same text was seen within ``duplicate_window_s``.

Paid events (gifts, bits, subs, guards, super chats) and raids skip 5 and 6. One user's
gifts of one kind that come within ``gift_merge_s`` of each other (a combo) become one line,
given by :meth:`ChatPolicy.due` once the combo has been quiet that long.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from emostream.bridge.chat.events import ChatEvent
from emostream.bridge.chat.render import clean_text, describe, render
from emostream.bridge.chat.rules import ChatRules
from emostream.bridge.chat.spam import Duplicates, SeenIds, UserRate
from emostream.bridge.lines import MAX_ID_CHARS, ChatLine

MAX_USER_CHARS = 40
_NAME_JUNK = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
MERGED_KINDS = ("gift", "free_gift", "subgift")


@dataclass
class _Combo:
    event: ChatEvent
    count: int
    amount: float
    first_at: float
    last_at: float
    ids: list[str]


class ChatPolicy:
    def __init__(self, rules: ChatRules) -> None:
        self.rules = rules
        self.rate = UserRate(lines=rules.user_lines, window_s=rules.user_window_s)
        self.dupes = Duplicates(window_s=rules.duplicate_window_s, similarity=rules.similarity)
        self.seen = SeenIds()
        self.groups = SeenIds(limit=1000)  # mystery gifts announced
        self.dropped: Counter[str] = Counter()
        self.accepted = 0
        self._combos: dict[tuple[str, str, str, str], _Combo] = {}
        self._made = 0

    @classmethod
    def default(cls) -> ChatPolicy:
        return cls(ChatRules())

    # -- events in ------------------------------------------------------------------------
    def accept(self, event: ChatEvent, now: float) -> tuple[list[ChatLine], list[dict[str, Any]]]:
        user = _NAME_JUNK.sub("", event.user).strip()[:MAX_USER_CHARS]
        if user != event.user:
            event = replace(event, user=user)
        if event.msg_id is not None and not self.seen.add(f"{event.platform}:{event.msg_id}"):
            return [], [self._drop(event, "already_seen")]
        if event.kind == "subgift" and event.group is not None:
            if event.count > 1 or event.extra.get("mystery"):
                self.groups.add(event.group)  # a mystery gift: its subs follow one by one
            elif event.group in self.groups:
                return [], [self._drop(event, "part_of_gift")]
        if event.who in self.rules.block_users or event.user.casefold() in self.rules.block_users:
            return [], [self._drop(event, "blocked", detail="user")]
        text = clean_text(event)
        folded = text.casefold()
        if any(w in folded for w in self.rules.block_words):
            return [], [self._drop(event, "blocked", detail="word")]
        if not text and event.kind in ("chat", "superchat"):
            return [], [self._drop(event, "empty")]
        if len(text) > self.rules.max_chars:
            if not event.paid:
                return [], [self._drop(event, "too_long", detail=f"{len(text)} characters")]
            text = _cut(text, self.rules.max_chars)
        if not event.paid and event.kind != "raid":
            if not self.rate.allow(event.who, now):
                wait = self.rate.wait_s(event.who, now)
                return [], [self._drop(event, "rate_limited", detail=f"again in {wait:.0f} s")]
            if text and self.dupes.check(text, now) is not None:
                return [], [self._drop(event, "duplicate")]
        if event.kind in MERGED_KINDS and self.rules.gift_merge_s > 0:
            self._merge(event, now)
            return self.due(now), []
        return [self._line(event, text, now)], []

    def due(self, now: float) -> list[ChatLine]:
        """Gift combos quiet for ``gift_merge_s``: one line each (count and worth summed)."""
        out: list[ChatLine] = []
        for key, combo in list(self._combos.items()):
            if now - combo.last_at >= self.rules.gift_merge_s:
                del self._combos[key]
                ev = replace(combo.event, count=combo.count, amount=combo.amount)
                out.append(self._line(ev, clean_text(ev), combo.first_at))
        return out

    @property
    def merging(self) -> int:
        """Gift combos not yet spoken."""
        return len(self._combos)

    def flush(self) -> list[ChatLine]:
        """Every combo now, whatever its age (the end of input)."""
        return self.due(float("inf"))

    # -- lines out -------------------------------------------------------------------------
    def _merge(self, event: ChatEvent, now: float) -> None:
        key = (event.platform, event.who, event.kind, event.item)
        combo = self._combos.get(key)
        if combo is None:
            self._combos[key] = _Combo(event, event.count, event.amount, now, now,
                                       [event.msg_id or ""])  # fmt: skip
        else:
            combo.count += event.count
            combo.amount += event.amount
            combo.last_at = now
            combo.ids.append(event.msg_id or "")

    def _line(self, event: ChatEvent, text: str, now: float) -> ChatLine:
        kind = event.kind
        template = self.rules.template(event.platform, kind, event.count)
        if template is None:
            template = "{text}" if text else "{user}"
        spoken = render(template, event, text)
        self.accepted += 1
        return ChatLine(
            id=self._line_id(event),
            text=spoken,
            priority=self.rules.priority.get(kind, 0),
            ttl_ms=1000.0 * self.rules.ttl_s.get(kind, 8.0),
            user=event.user or None,
            prompt=f"{event.user}: {describe(event, text)}" if event.user else describe(event, text),
        )  # fmt: skip

    def _line_id(self, event: ChatEvent) -> str:
        self._made += 1
        base = f"{event.platform[:2]}-{event.msg_id}" if event.msg_id else f"{event.platform[:2]}"
        line_id = f"{base}-{self._made}"
        if len(line_id) > MAX_ID_CHARS:
            digest = hashlib.sha1(line_id.encode()).hexdigest()[:16]
            line_id = f"{event.platform[:2]}-{digest}-{self._made}"
        return line_id

    def _drop(self, event: ChatEvent, reason: str, *, detail: str | None = None) -> dict[str, Any]:
        self.dropped[reason] += 1
        out: dict[str, Any] = {
            "type": "line_dropped", "where": "chat", "reason": reason,
            "platform": event.platform, "kind": event.kind, "user": event.user,
        }  # fmt: skip
        if event.msg_id is not None:
            out["msg_id"] = event.msg_id[:MAX_ID_CHARS]
        if detail:
            out["detail"] = detail
        if event.text and reason not in ("blocked",):
            out["text"] = event.text[:80]
        return out


def _cut(text: str, limit: int) -> str:
    """``text`` to at most ``limit`` characters, at a space when there is one near the end."""
    cut = text[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,，.。") + "…"
