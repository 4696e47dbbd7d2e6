"""Give the memory an utterance freed back to the operating system.

glibc's malloc keeps freed memory in its heaps for reuse, and a long utterance leaves holes
its pieces' tensors (ONNX Runtime runs without its own arena: :mod:`emostream.networks.ort_cpu`)
went through; ``malloc_trim(0)`` after one gives tens of MB of RSS back in a few ms
(docs/measurements.md, "Figures behind the code"; docs/hardening.md).
:class:`HeapTrimmer` is the rule (after an utterance, at most once per ``interval_s``, none
skipped), with no I/O; :func:`libc_malloc_trim` finds the call (none where libc has none: musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable


class HeapTrimmer:
    """When to trim after an utterance ends: at once, unless the last trim was less than
    ``interval_s`` ago; then when that interval is up (one trim pending at a time, so a burst
    of utterances ending costs one trim, and the last of them is never left out).
    ``interval_s`` <= 0: never."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last: float | None = None
        self._pending = False

    def request(self, now: float) -> float | None:
        """An utterance ended at ``now``: the seconds to wait before trimming, or None (off,
        or a trim is already pending, which will cover this one)."""
        if self.interval_s <= 0 or self._pending:
            return None
        self._pending = True
        if self._last is None:
            return 0.0
        return max(0.0, self._last + self.interval_s - now)

    def trimmed(self, now: float) -> None:
        """The pending trim ran at ``now`` (or was given up: call it too)."""
        self._pending = False
        self._last = now


def libc_malloc_trim() -> Callable[[], bool] | None:
    """glibc's ``malloc_trim(0)`` as a function (None where libc has none: musl, macOS). It
    returns the free memory at the top of every malloc heap, and whole free pages inside them,
    to the OS; blocks for milliseconds (call it off the event loop); True when libc released
    something."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: bool(trim(0))
