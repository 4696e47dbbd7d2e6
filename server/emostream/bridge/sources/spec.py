"""``--source bilibili:ROOM`` or ``twitch:CHANNEL``: which platform and where, checked, and
the source that reads it."""

from __future__ import annotations

from dataclasses import dataclass

from emostream.bridge.sources.connect import ChatSource

PLATFORMS = ("bilibili", "twitch")


@dataclass(frozen=True)
class SourceSpec:
    platform: str
    target: str  # a Bilibili room number, a Twitch channel
    url: str | None = None  # Bilibili: the API's base URL; Twitch: the IRC WebSocket's URL


def parse_source(spec: str, url: str | None = None) -> SourceSpec:
    platform, sep, target = spec.partition(":")
    platform = platform.strip().lower()
    target = target.strip()
    if not sep or platform not in PLATFORMS or not target:
        raise ValueError(f"--source takes bilibili:ROOM or twitch:CHANNEL, not {spec!r}")
    if platform == "bilibili" and not (target.isdigit() and 0 < int(target) < 2**32):
        raise ValueError(f"a Bilibili room is a number (live.bilibili.com/NUMBER), not {target!r}")
    if platform == "twitch":
        target = target.lstrip("#").lower()
        if not target or len(target) > 25 or not all(c.isalnum() or c == "_" for c in target):
            raise ValueError(f"not a Twitch channel name: {target!r}")
    return SourceSpec(platform, target, url)


def make_source(spec: SourceSpec) -> ChatSource:
    if spec.platform == "bilibili":
        from emostream.bridge.sources.bilibili import BilibiliSource

        return BilibiliSource(int(spec.target), api=spec.url)
    from emostream.bridge.sources.twitch import TwitchSource

    return TwitchSource(spec.target, url=spec.url)
