"""One SO_REUSEPORT listening socket per worker: the recipe becomes a listening socket where
it is unpickled, a reserved port takes no connections, and connections spread over the
listeners."""

from __future__ import annotations

import pickle
import selectors
import socket

import pytest

from emostream.transport.edge import reuseport

pytestmark = pytest.mark.skipif(not reuseport.SUPPORTED, reason="no SO_REUSEPORT here")


def accepted_per_listener(listeners: list[socket.socket], n: int) -> list[int]:
    """Open ``n`` connections to the listeners' port; how many each listener accepted."""
    port = listeners[0].getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
    counts = [0] * len(listeners)
    sel = selectors.DefaultSelector()
    for i, sock in enumerate(listeners):
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, i)
    conns = []
    while sum(counts) < n:
        events = sel.select(timeout=5)
        assert events, f"only {sum(counts)} of {n} connections were accepted"
        for key, _ in events:
            try:
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            conns.append(conn)
            counts[key.data] += 1
    for s in conns + clients:
        s.close()
    sel.close()
    return counts


def test_the_recipe_is_a_listening_socket_where_it_is_unpickled() -> None:
    held = reuseport.reserve("127.0.0.1", 0)
    port = held.getsockname()[1]
    assert port != 0
    recipe = reuseport.ListenerRecipe("127.0.0.1", port, backlog=512)
    listeners = [pickle.loads(pickle.dumps(recipe)) for _ in range(2)]  # as two workers do
    try:
        for sock in listeners:
            assert isinstance(sock, socket.socket) and sock.getsockname()[1] == port
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
        assert held.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 0
        # Every connection reaches a listener (none waits on the reserved socket), and the
        # kernel spreads them: 200 connections over 2 listeners, each well above a skew.
        counts = accepted_per_listener(listeners, 200)
        assert sum(counts) == 200 and min(counts) >= 60, counts
    finally:
        for sock in [*listeners, held]:
            sock.close()


def test_a_taken_port_fails_at_once() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(OSError):
            reuseport.reserve("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
