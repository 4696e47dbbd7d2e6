"""espeak-ng, kept where a crash costs one utterance and not the server.

Every English phoneme the server makes comes from espeak-ng through piper's native bridge
(``piper.espeakbridge``: ``initialize``, ``set_voice``, ``get_phonemes``), for the embedded
Piper voice and for the EmoStream voices' G2P alike. espeak-ng is C that parses user text,
and it has crashed on it: text of short dot-separated letters (``"a."`` x 100, ``"x.y."`` x
50) overflows a fixed 80-byte stack buffer in its ``CheckDottedAbbrev`` (the letters of a
dotted abbreviation are copied into it without a bound; fixed upstream in espeak-ng's pull
request 2428, 2026-06, after the espeak-ng that piper-tts 1.8.0 ships) and killed the whole
process with SIGSEGV.

Two defences, each enough alone for that input:

* :func:`defuse` rewrites what is known to crash before it reaches the library: in a run
  of more than :data:`MAX_DOTTED_LETTERS` dotted single letters, the letters after the
  :data:`MAX_DOTTED_LETTERS`-th lose their dots, so no abbreviation espeak-ng builds can
  pass 4 x 8 = 32 bytes (spaces, commas or semicolons between the letters do not stop it
  chaining them: each still crashed). U.S.A. and e.g. read as before.
* :class:`IsolatedEspeak` runs the bridge in a child process
  (:mod:`emostream.text.espeak_worker`) behind the same three functions. A crash, a hang
  past ``call_timeout_s`` or a broken pipe raises :class:`EspeakCrashed` for that call
  only (the utterance gets an ``internal`` error), and the next call starts a fresh child.
  :func:`install` puts it where piper's code looks for its bridge, so piper's own
  phonemizer (and so :class:`emostream.voices.piper_voice.PiperVoice` and
  :class:`emostream.text.phonemes.G2P`) run unchanged on top of it, and the native bridge
  is never loaded into the server process.

A call costs one round trip over a pipe on top of espeak-ng's own time (measured in
``docs/hardening.md``). Calls are serialised by a lock, as espeak-ng is not thread-safe.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any, NoReturn

from emostream.text.espeak_worker import HEADER, frame
from emostream.text.frontend import EspeakCrashed

log = logging.getLogger(__name__)

MAX_DOTTED_LETTERS = 8  # letters kept together in one dotted abbreviation (U.S.A. is 3)

# One letter (with any combining marks) and its dot, then anything but a letter or digit:
# espeak-ng chains "a.b.c.", "a. b. c." and even "a.b., c.d.; e.f." into one abbreviation
# (each crashed at 100 letters; groups of 4 joined by ", " too).
_DOTTED = r"[^\W\d_][\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]*\.[\W_]*"
_RUN = re.compile(rf"(?<![^\W\d_])(?:{_DOTTED}){{{MAX_DOTTED_LETTERS + 1},}}")
_ONE = re.compile(_DOTTED)


def defuse(text: str) -> str:
    """``text`` with every run of more than :data:`MAX_DOTTED_LETTERS` dotted single
    letters cut short: the first :data:`MAX_DOTTED_LETTERS` keep their dots, the letters
    after them lose theirs (each then stands as a word of its own, and espeak-ng spells
    it). Any other text is returned unchanged (see the module docs)."""
    if "." not in text:
        return text

    def cut(run: re.Match[str]) -> str:
        parts = _ONE.findall(run.group(0))
        kept = "".join(parts[:MAX_DOTTED_LETTERS])
        rest = "".join(p.replace(".", " ", 1) for p in parts[MAX_DOTTED_LETTERS:])
        if kept[-1].isalnum() or kept[-1] == ".":
            kept += " "
        return kept + rest

    return _RUN.sub(cut, text)


class IsolatedEspeak:
    """piper's ``espeakbridge`` interface, served by a supervised child process.

    ``call_timeout_s``: the longest one call may take before the child is killed (espeak-ng
    phonemises a 5,000-character text in well under a second). ``argv``: the child's command
    (tests give another). The child starts on the first call, or at once with
    :meth:`start`.
    """

    def __init__(self, *, call_timeout_s: float = 10.0, argv: list[str] | None = None) -> None:
        self.call_timeout_s = call_timeout_s
        self.argv = argv or [sys.executable, "-m", "emostream.text.espeak_worker"]
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._data_dir: str | None = None
        self._voice: str | None = None
        self.crashes = 0  # children lost (crash, hang or broken pipe)
        self.starts = 0  # children started

    # -- piper.espeakbridge's interface --------------------------------------------------
    def initialize(self, data_dir: str) -> None:
        with self._lock:
            self._data_dir = str(data_dir)
            if self._proc is not None:
                self._call(["init", self._data_dir])

    def set_voice(self, voice: str) -> None:
        self._voice = voice  # sent with each text: a restarted child needs it again

    def get_phonemes(self, text: str) -> list[tuple[str, str, bool]]:
        if self._voice is None:
            raise RuntimeError("set_voice was never called")
        with self._lock:
            clauses = self._call(["phonemes", self._voice, defuse(text)], text_len=len(text))
        return [(str(p), str(t), bool(e)) for p, t, e in clauses]

    # -- the child ------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        with self._lock:
            self._ensure()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        if self._data_dir is None:
            raise RuntimeError("initialize was never called")
        proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True
        )
        self._proc = proc
        self.starts += 1
        self._exchange(proc, ["init", self._data_dir], text_len=0)
        return proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def _call(self, request: list[Any], *, text_len: int = 0) -> Any:
        return self._exchange(self._ensure(), request, text_len=text_len)

    def _exchange(self, proc: subprocess.Popen[bytes], request: list[Any], *, text_len: int) -> Any:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            data = memoryview(frame(request))
            while data:
                data = data[os.write(proc.stdin.fileno(), data) :]
            reply = json.loads(_read_frame(proc.stdout.fileno(), self.call_timeout_s))
        except (OSError, ValueError, TimeoutError) as exc:
            self._lost(proc, exc, request[0], text_len)
        if reply[0] != "ok":
            raise RuntimeError(f"espeak-ng worker: {reply[1]}")
        return reply[1]

    def _lost(
        self, proc: subprocess.Popen[bytes], exc: Exception, kind: str, text_len: int
    ) -> NoReturn:
        timed_out = isinstance(exc, TimeoutError)
        self._stop()
        code = proc.returncode
        self.crashes += 1
        if timed_out:
            what = f"took longer than {self.call_timeout_s:g} s"
        elif code is not None and code < 0:
            what = f"died of {signal.Signals(-code).name}"
        else:
            what = f"stopped (exit {code}: {exc})"
        log.warning(
            "espeak-ng %s on a %s request (text of %d characters); a fresh process serves the "
            "next call",
            what,
            kind,
            text_len,
        )
        raise EspeakCrashed(f"the English phonemiser (espeak-ng) {what} on this text") from exc


def _read_frame(fd: int, timeout_s: float) -> bytes:
    """One reply frame's body from ``fd`` within ``timeout_s`` (TimeoutError; BrokenPipeError
    when the child is gone). The child writes a frame in one write, so one read is the rule."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    need = HEADER.size
    while True:
        while len(buf) < need:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
            chunk = os.read(fd, max(65536, need - len(buf)))
            if not chunk:
                raise BrokenPipeError("the espeak-ng process closed its pipe")
            buf += chunk
        if need == HEADER.size:
            need += HEADER.unpack_from(buf)[0]
            continue
        return buf[HEADER.size : need]


def install(bridge: IsolatedEspeak | None = None) -> IsolatedEspeak:
    """Make ``bridge`` (a new :class:`IsolatedEspeak` when not given) the ``espeakbridge``
    that piper's code imports, unless one is installed already; returns the one in place.

    espeak-ng's state is one per process, so is its stand-in: this is the one place that
    sets it, called by every voice that phonemises with espeak-ng before its first use."""
    import piper  # the package; its native bridge is never imported here

    current = sys.modules.get("piper.espeakbridge")
    if isinstance(current, IsolatedEspeak):
        return current
    bridge = bridge or IsolatedEspeak()
    atexit.register(bridge.close)  # the child goes with the process, not after a warning
    sys.modules["piper.espeakbridge"] = bridge  # type: ignore[assignment]
    piper.espeakbridge = bridge  # type: ignore[attr-defined]
    return bridge
