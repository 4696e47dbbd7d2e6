"""The espeak-ng worker for tests that force a crash: the real one, except that a text holding
:data:`CRASH_WORD` kills it with SIGSEGV. espeak-ng's own crash on 100 dotted letters comes
9 runs in 10 (a stack overflow: what it hits varies), so tests that need a crash every time
use this; ``tests/text/test_espeak.py`` also checks the real one.

    python -m tests.text.crashing_worker
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from emostream.text.espeak_worker import Worker, main

CRASH_WORD = "crashmenow"
ARGV = [sys.executable, "-m", "tests.text.crashing_worker"]


class CrashingWorker(Worker):
    def handle(self, request: Any) -> list[Any]:
        if request[:1] == ["phonemes"] and CRASH_WORD in str(request[-1]):
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().handle(request)


if __name__ == "__main__":
    main(CrashingWorker)
