"""Per-key limits (sans-I/O, with an injectable clock): concurrent utterances, text characters
per minute and clone uploads per hour.

Limits apply to authenticated principals (API keys). The anonymous principal (``None``: auth is
off, which only a loopback server or an explicit ``allow_unauthenticated`` allows) is bounded by
the process-wide ``max_streams`` alone. A refusal is :class:`LimitExceeded` with a stable
``code`` and the seconds after which a retry can succeed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from emostream.config import Settings

# Stable error codes (README "Security and limits").
TOO_MANY_STREAMS = "too_many_streams"
RATE_LIMITED = "rate_limited"
CLONE_QUOTA = "clone_quota"


class LimitExceeded(Exception):
    def __init__(self, code: str, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass
class TokenBucket:
    """``capacity`` units, refilled at ``capacity`` per ``period_s`` (continuously)."""

    capacity: float
    period_s: float
    level: float
    at: float

    def take(self, amount: float, now: float) -> float:
        """Take ``amount`` and return 0, or take nothing and return the seconds until it fits."""
        rate = self.capacity / self.period_s
        self.level = min(self.capacity, self.level + (now - self.at) * rate)
        self.at = now
        if amount <= self.level:
            self.level -= amount
            return 0.0
        if amount > self.capacity:
            return float("inf")
        return (amount - self.level) / rate


@dataclass
class _KeyState:
    streams: int = 0
    chars: TokenBucket | None = None
    clones: TokenBucket | None = None


class StreamPermit:
    """One utterance's place under ``key_max_streams``; released exactly once."""

    def __init__(self, limits: KeyLimits | None, principal: str | None) -> None:
        self._limits = limits
        self._principal = principal

    def release(self) -> None:
        limits, self._limits = self._limits, None
        if limits is not None and self._principal is not None:
            limits._release(self._principal)


@dataclass
class KeyLimits:
    max_streams: int = 0  # 0: no cap
    chars_per_minute: int = 0
    clones_per_hour: int = 0
    clock: Callable[[], float] = time.monotonic
    _keys: dict[str, _KeyState] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyLimits:
        return cls(
            max_streams=settings.key_max_streams,
            chars_per_minute=settings.key_chars_per_minute,
            clones_per_hour=settings.key_clones_per_hour,
        )

    def _state(self, principal: str) -> _KeyState:
        state = self._keys.get(principal)
        if state is None:
            state = self._keys[principal] = _KeyState()
        return state

    def open_stream(self, principal: str | None) -> StreamPermit:
        """A permit for one more concurrent utterance, or :class:`LimitExceeded`."""
        if principal is None:
            return StreamPermit(None, None)
        state = self._state(principal)
        if self.max_streams and state.streams >= self.max_streams:
            raise LimitExceeded(
                TOO_MANY_STREAMS,
                f"this key already has {state.streams} utterances open (limit "
                f"{self.max_streams}); finish one first",
            )
        state.streams += 1
        return StreamPermit(self, principal)

    def _release(self, principal: str) -> None:
        state = self._keys.get(principal)
        if state is not None:
            state.streams = max(0, state.streams - 1)

    def charge_chars(self, principal: str | None, count: int) -> None:
        """Count ``count`` characters of text against the key's per-minute budget."""
        if principal is None or not self.chars_per_minute or count <= 0:
            return
        state = self._state(principal)
        if state.chars is None:
            cap = float(self.chars_per_minute)
            state.chars = TokenBucket(cap, 60.0, cap, self.clock())
        wait = state.chars.take(count, self.clock())
        if wait:
            raise LimitExceeded(
                RATE_LIMITED,
                f"this key is over {self.chars_per_minute} characters per minute; this text was "
                f"not spoken (retry in {min(wait, 60.0):.1f} s)",
                retry_after_s=min(wait, 60.0),
            )

    def charge_clone(self, principal: str | None) -> None:
        """Count one clone upload against the key's hourly budget."""
        if principal is None or not self.clones_per_hour:
            return
        state = self._state(principal)
        if state.clones is None:
            cap = float(self.clones_per_hour)
            state.clones = TokenBucket(cap, 3600.0, cap, self.clock())
        wait = state.clones.take(1, self.clock())
        if wait:
            raise LimitExceeded(
                CLONE_QUOTA,
                f"this key has used its {self.clones_per_hour} clone uploads per hour "
                f"(retry in {wait:.0f} s)",
                retry_after_s=wait,
            )

    def open_streams(self, principal: str) -> int:
        state = self._keys.get(principal)
        return state.streams if state is not None else 0
