"""Which voice registry a server uses: the one ``Settings.voice_registry_url`` names.

Kept apart from both stores so that neither imports the other (the Redis one builds on the
SQLite module's shared types; the choice needs both)."""

from __future__ import annotations

from pathlib import Path

from emostream.voices.cloning.registry import Registry, VoiceRegistry

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_registry(
    url: str, data_dir: str | Path, *, timeout_s: float = 1.0, retry_after_s: float = 5.0
) -> Registry:
    """Empty or ``sqlite:`` -> SQLite at ``<data_dir>/voices.sqlite3`` (one host, the default);
    ``redis://`` / ``rediss://`` / ``unix://`` -> the shared Redis registry (the ``redis``
    package), with ``timeout_s`` per Redis call and ``retry_after_s`` of refusals after it
    fails (``Settings.voice_registry_timeout_s`` / ``voice_registry_retry_s``).

    Raises :class:`~emostream.voices.cloning.registry.StoreUnavailable` when that Redis cannot be
    reached, ``ValueError`` for any other URL."""
    if not url or url == "sqlite:":
        return VoiceRegistry.in_data_dir(data_dir)
    if url.startswith(REDIS_SCHEMES):
        from emostream.voices.cloning.registry_redis import RedisVoiceRegistry  # only with Redis

        return RedisVoiceRegistry(url, timeout_s=timeout_s, retry_after_s=retry_after_s)
    raise ValueError(f"voice_registry_url {url!r}: use '' (SQLite) or a redis:// URL")
