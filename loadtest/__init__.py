"""EmoStream load generator: N concurrent WebSocket streams with a simulated playback clock.

Sans-I/O cores (arrival schedules, playback-clock underrun accounting, statistics, the
``--find-max`` search) live in their own modules and are unit-tested; :mod:`loadtest.client`
is the thin asyncio layer and :mod:`loadtest.cli` the command line (``python -m loadtest``).
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
