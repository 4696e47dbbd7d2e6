"""One thing that happened in a live stream's chat, whatever the platform said it in.

The platform codecs (:mod:`emostream.bridge.sources`) turn their wire messages into
:class:`ChatEvent`; the policy (:mod:`emostream.bridge.chat.policy`) decides whether and how
each is spoken. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

# What a viewer did. ``free_gift``: a gift that costs nothing (Bilibili's silver gifts);
# ``gift``: a paid one; ``guard``: Bilibili's captain/admiral/governor membership; ``sub``,
# ``resub``, ``subgift``: Twitch subscriptions (new, renewed, given to someone); ``bits``: a
# Twitch cheer; ``superchat``: a paid, pinned message (Bilibili's 醒目留言); ``raid``: another
# channel's viewers arriving.
Kind = Literal[
    "chat", "free_gift", "gift", "bits", "sub", "resub", "subgift", "raid", "guard", "superchat"
]
KINDS: tuple[str, ...] = get_args(Kind)
PAID_KINDS = frozenset({"gift", "bits", "sub", "resub", "subgift", "guard", "superchat"})


@dataclass(frozen=True)
class ChatEvent:
    """``msg_id``: the platform's id of the message (Twitch's ``id`` tag, Bilibili's
    ``id_str``, a super chat's id) or one made from what identifies it (user, time, gift), so
    that the same message seen again after a reconnect is known; None when nothing does.
    ``amount``: what it was worth in the platform's unit (bits; CNY for a super chat, a gift or
    a guard); ``count``: gifts given, months subscribed, subs gifted, raiders; ``item``: the
    gift's or tier's name, or who received a gifted sub. ``emotes``: ``(start, end)`` code
    point ranges of ``text`` (end inclusive) that are emotes, not words. ``group``: an id
    that ties events into one (a Twitch mystery gift and the subs it gave)."""

    platform: str
    kind: Kind
    user: str
    text: str = ""
    msg_id: str | None = None
    user_id: str = ""
    amount: float = 0.0
    count: int = 1
    item: str = ""
    roles: frozenset[str] = frozenset()  # "broadcaster", "moderator", "vip", "subscriber"
    emotes: tuple[tuple[int, int], ...] = ()
    group: str | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def paid(self) -> bool:
        return self.kind in PAID_KINDS

    @property
    def who(self) -> str:
        """The key a user is known by (rate limits, block list): the id, else the name."""
        return self.user_id or self.user.casefold()
