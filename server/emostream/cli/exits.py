"""The command line's exit statuses beyond 0 (done), 1 (failed) and 2 (refused: bad options)."""

# ``serve``'s exit status when a store it needs (the voice registry's Redis) cannot be reached
EXIT_UNAVAILABLE = 3
