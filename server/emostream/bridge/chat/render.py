"""A chat event's words as they will be spoken (sans-I/O).

* :func:`clean_text`: the viewer's text without what is not speech: Twitch emotes (by the
  positions the platform gives), Bilibili's ``[表情]`` stickers, cheermotes ("Cheer100") on a
  cheer, control characters, runs of one character past three ("66666666" → "666"), spacing.
* :func:`render`: the line for a kind from its template (``{user} {text} {count} {item}
  {amount}``), without a dangling ": " or ". " when the viewer wrote nothing.
* :func:`describe`: what happened, plainly, for a chat model to answer (the reply step).
"""

from __future__ import annotations

import re

from emostream.bridge.chat.events import ChatEvent

_STICKER = re.compile(r"\[[^\[\]\s]{1,12}\]")  # Bilibili's [doge], [大笑]
_CHEERMOTE = re.compile(r"(?<!\S)[A-Za-z]+\d+(?!\S)")  # Cheer100, Kappa500 (with bits only)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_RUN = re.compile(r"(.)\1{3,}", re.DOTALL)
_SPACE = re.compile(r"\s+")
_DANGLING = re.compile(r"[\s:：,，、-]*$")
_HOLE = "\x00"


def strip_ranges(text: str, ranges: tuple[tuple[int, int], ...]) -> str:
    """``text`` without the code point ranges (inclusive ends); bad ranges are ignored."""
    if not ranges:
        return text
    keep = [True] * len(text)
    for start, end in ranges:
        if 0 <= start <= end < len(text):
            for i in range(start, end + 1):
                keep[i] = False
    return "".join(c if k else " " for c, k in zip(text, keep, strict=True))


def clean_text(event: ChatEvent) -> str:
    text = strip_ranges(event.text, event.emotes)
    if event.platform == "bilibili":
        text = _STICKER.sub(" ", text)
    if event.kind == "bits":
        text = _CHEERMOTE.sub(" ", text)
    text = _CONTROL.sub("", text)
    text = _RUN.sub(r"\1\1\1", text)
    return _SPACE.sub(" ", text).strip()


def _amount(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0")


def render(template: str, event: ChatEvent, text: str) -> str:
    """``template`` filled from ``event`` with ``text`` (cleaned) as its ``{text}``."""
    spoken = template.format(
        user=event.user or "someone", text=text or _HOLE, count=event.count, item=event.item,
        amount=_amount(event.amount),
    )  # fmt: skip
    if not text:  # "Super chat from ann: " → "Super chat from ann"
        parts = spoken.split(_HOLE)
        spoken = "".join(_DANGLING.sub("", p) if i < len(parts) - 1 else p
                         for i, p in enumerate(parts))  # fmt: skip
    return _SPACE.sub(" ", spoken).strip()


def describe(event: ChatEvent, text: str) -> str:
    """One line for a chat model: what the viewer did and said, e.g.
    ``(super chat, 30 CNY) can you sing?`` or ``(gift: 5 × 辣条)``."""
    gifted = f"gifted {event.count} subs" if event.count > 1 else f"gifted a sub to {event.item}"
    what = {
        "chat": "",
        "free_gift": f"free gift: {event.count} × {event.item}",
        "gift": f"gift: {event.count} × {event.item}",
        "bits": f"cheered {_amount(event.amount)} bits",
        "sub": "subscribed",
        "resub": f"subscribed for {event.count} months",
        "subgift": gifted,
        "raid": f"raiding with {event.count} viewers",
        "guard": f"became {event.item}",
        "superchat": "super chat",
    }[event.kind]
    if event.amount and event.kind in ("superchat", "gift", "guard"):
        what += f", {_amount(event.amount)} CNY"
    head = f"({what})" if what else ""
    return " ".join(p for p in (head, text) if p)
