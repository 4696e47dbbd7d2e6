"""Where ``emostream say`` puts the audio as it arrives: a WAV or raw PCM file, stdout, or the
speakers (an installed command-line player). Standard library only: s16le mono in, bytes out.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from typing import BinaryIO, Protocol

# Players that take raw s16le mono on stdin, the first found on PATH is used ({rate}: Hz).
PLAYERS: tuple[tuple[str, ...], ...] = (
    ("aplay", "-q", "-t", "raw", "-f", "S16_LE", "-c", "1", "-r", "{rate}", "-"),
    ("paplay", "--raw", "--format=s16le", "--channels=1", "--rate={rate}"),
    ("pw-play", "--format=s16", "--channels=1", "--rate={rate}", "-"),
    ("ffplay", "-loglevel", "error", "-nodisp", "-autoexit", "-f", "s16le", "-ar", "{rate}",
     "-ch_layout", "mono", "-i", "-"),
)  # fmt: skip
UNKNOWN = 0xFFFFFFFF  # a streamed WAV's sizes, as players accept ("unknown length")


class AudioOut(Protocol):
    def write(self, pcm: bytes) -> None: ...

    def close(self) -> None: ...


def wav_header(rate: int, data_bytes: int | None) -> bytes:
    """RIFF/WAVE header, 16-bit mono; ``None``: the sizes of a stream of unknown length."""
    size = UNKNOWN if data_bytes is None else data_bytes
    riff = UNKNOWN if data_bytes is None else 36 + data_bytes
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVE" + b"fmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", size))  # fmt: skip


def _seekable(f: BinaryIO) -> bool:
    try:
        return f.seekable()
    except (OSError, ValueError):
        return False


class FileOut:
    """WAV (``wav``) or raw s16le (``pcm``) to ``f`` as it arrives. A WAV whose file can seek
    gets its true sizes at the end; one that cannot (a pipe) keeps the streaming sizes."""

    def __init__(self, f: BinaryIO, *, rate: int, wav: bool, own: bool) -> None:
        self.f = f
        self.wav = wav
        self.own = own
        self.bytes = 0
        self._start = f.tell() if wav and _seekable(f) else None
        if wav:
            f.write(wav_header(rate, None))
        self.rate = rate

    def write(self, pcm: bytes) -> None:
        self.f.write(pcm)
        self.bytes += len(pcm)

    def close(self) -> None:
        if self.wav and self._start is not None:
            self.f.seek(self._start)
            self.f.write(wav_header(self.rate, self.bytes))
            self.f.seek(0, io.SEEK_END)
        self.f.flush()
        if self.own:
            self.f.close()


class PlayerOut:
    """The first player of :data:`PLAYERS` found, fed raw PCM on its stdin."""

    def __init__(self, rate: int) -> None:
        command = find_player(rate)
        if command is None:
            names = ", ".join(p[0] for p in PLAYERS)
            raise OSError(f"no audio player found ({names}); write a file with -o instead")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE)
        assert self.proc.stdin is not None
        self.stdin = self.proc.stdin

    def write(self, pcm: bytes) -> None:
        self.stdin.write(pcm)

    def close(self) -> None:
        try:
            self.stdin.close()
        finally:
            self.proc.wait()


class Tee:
    """Every output at once (``-o FILE --play``)."""

    def __init__(self, outs: list[AudioOut]) -> None:
        self.outs = outs

    def write(self, pcm: bytes) -> None:
        for out in self.outs:
            out.write(pcm)

    def close(self) -> None:
        for out in self.outs:
            out.close()


def find_player(rate: int) -> list[str] | None:
    for command in PLAYERS:
        if shutil.which(command[0]):
            return [part.format(rate=rate) for part in command]
    return None


def open_output(path: str | None, *, fmt: str | None, rate: int, play: bool) -> AudioOut:
    """The outputs ``say`` was asked for: ``path`` (``-``: stdout) in ``fmt`` (None: ``pcm``
    for ``.pcm``/``.raw``, else ``wav``), and the speakers with ``play``. Raises OSError."""
    outs: list[AudioOut] = []
    try:
        if path is not None:
            wav = (fmt or ("pcm" if path.lower().endswith((".pcm", ".raw")) else "wav")) == "wav"
            f = sys.stdout.buffer if path == "-" else open(path, "wb")  # noqa: SIM115
            outs.append(FileOut(f, rate=rate, wav=wav, own=path != "-"))
        if play:
            outs.append(PlayerOut(rate))
    except OSError:
        Tee(outs).close()
        raise
    return outs[0] if len(outs) == 1 else Tee(outs)
