"""The child side of :mod:`emostream.text.espeak`: espeak-ng in a process of its own.

Run as ``python -m emostream.text.espeak_worker``. It loads piper's native bridge
(``espeakbridge.so``) straight from its file, without importing the ``piper`` package (whose
``__init__`` pulls ONNX Runtime and NumPy: about 100 ms and tens of MB a child), then answers
requests on stdin with replies on stdout until stdin closes. If espeak-ng crashes on a text,
this process dies and the server's side sees the pipe close; nothing else is lost.

Frames, both ways: a 4-byte big-endian length, then that many bytes of UTF-8 JSON.

* ``["init", data_dir]`` → ``["ok", null]`` (piper's is :data:`ESPEAK_DATA_DIR_NAME`
  beside the bridge)
* ``["phonemes", voice, text]`` → ``["ok", [[phonemes, terminator, end_of_sentence], …]]``
  (espeak-ng's clauses, as the bridge's ``get_phonemes`` gives them); the voice is set only
  when it differs from the last one set (each ``set_voice`` call keeps about 1.3 kB of the
  process for good).
* anything else, or a Python error → ``["error", message]`` (the process goes on).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

HEADER = struct.Struct(">I")
ESPEAK_DATA_DIR_NAME = "espeak-ng-data"  # beside the bridge in piper's package


def bridge_path() -> Path:
    """Where piper keeps its native espeak-ng bridge (found without importing ``piper``)."""
    spec = importlib.util.find_spec("piper")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("piper-tts is not installed")
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = Path(folder) / f"espeakbridge{suffix}"
            if candidate.exists():
                return candidate
    raise RuntimeError("piper-tts ships no espeakbridge extension")


def load_bridge() -> ModuleType:
    path = bridge_path()
    spec = importlib.util.spec_from_file_location("espeakbridge", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_frame(stream: BinaryIO) -> Any | None:
    """One JSON frame, or None at a clean end of stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        return None
    return json.loads(body.decode("utf-8"))


def frame(message: Any) -> bytes:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return HEADER.pack(len(body)) + body


class Worker:
    """Request handling, apart from the pipes (a test can drive it with plain calls)."""

    def __init__(self, bridge: ModuleType) -> None:
        self.bridge = bridge
        self.voice: str | None = None

    def handle(self, request: Any) -> list[Any]:
        if not isinstance(request, list) or not request:
            return ["error", "a request is a non-empty JSON array"]
        kind, args = request[0], request[1:]
        try:
            if kind == "init" and len(args) == 1:
                self.bridge.initialize(str(args[0]))
                self.voice = None  # a fresh espeak-ng has no voice set
                return ["ok", None]
            if kind == "phonemes" and len(args) == 2:
                voice, text = str(args[0]), str(args[1])
                if voice != self.voice:
                    self.bridge.set_voice(voice)
                    self.voice = voice
                clauses = self.bridge.get_phonemes(text)
                return ["ok", [[p, t, bool(e)] for p, t, e in clauses]]
        except Exception as exc:  # noqa: BLE001 - reported to the server, which raises it
            return ["error", f"{type(exc).__name__}: {exc}"]
        return ["error", f"unknown request {kind!r} with {len(args)} arguments"]


def main(worker_class: type[Worker] = Worker) -> None:
    worker = worker_class(load_bridge())
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (request := read_frame(stdin)) is not None:
        stdout.write(frame(worker.handle(request)))
        stdout.flush()


if __name__ == "__main__":
    main()
