"""One listening socket per ``serve --workers`` process (SO_REUSEPORT), so that the kernel
spreads new connections evenly over the workers.

uvicorn's own multi-process mode binds one socket in the parent and every worker accepts
from it. A worker that wakes first takes every pending connection (libuv accepts until the
queue is empty), so a burst of connections lands unevenly: the busiest worker got several
times the mean, and on the GPU host the front end with the most streams saturated its core.
With one SO_REUSEPORT socket per worker the kernel hashes each connection to one of them,
close to the mean (docs/measurements.md, "Figures behind the code").

:func:`reserve` binds (never listens) the port in the parent: it fails early when the port
is taken, turns port 0 into a real one, and keeps the port from anyone not sharing it;
a socket that does not listen gets no connections. :class:`ListenerRecipe` goes to uvicorn's
supervisor in place of a socket: each worker process unpickles it into its own listening
socket on that port (also when the supervisor replaces a dead worker).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

SUPPORTED = hasattr(socket, "SO_REUSEPORT")


def _socket(host: str, port: int) -> socket.socket:
    family, kind, proto, _, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    return sock


def reserve(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with SO_REUSEPORT that never listens: keep it open
    while the workers serve. Its port (``getsockname()[1]``) is real where ``port`` is 0.
    Raises OSError when the port is in use."""
    return _socket(host, port)


def listen(host: str, port: int, backlog: int) -> socket.socket:
    """This process's own listening socket on ``host:port`` (SO_REUSEPORT)."""
    sock = _socket(host, port)
    sock.listen(backlog)
    return sock


@dataclass(frozen=True)
class ListenerRecipe:
    """Stands for a listening socket in the arguments uvicorn sends to a worker process:
    unpickled there, it is that process's own :func:`listen` socket."""

    host: str
    port: int
    backlog: int = 2048

    def __reduce__(self) -> tuple[object, tuple[str, int, int]]:
        return listen, (self.host, self.port, self.backlog)
