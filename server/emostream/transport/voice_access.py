"""Voices a caller cannot speak, said the same way on every route: a clone this process has no
model for (:func:`clone_unavailable`), and the voice registry out of reach
(:data:`STORE_UNAVAILABLE`). The WebSocket (:mod:`emostream.transport.websocket.connection`)
and the HTTP routes (:mod:`emostream.transport.http`) both answer with these; neither imports
the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emostream.transport.messages import ProtocolError
from emostream.voices.cloning.registry import StoreUnavailable

STORE_UNAVAILABLE = "store_unavailable"
CLONE_UNAVAILABLE = (
    "cloned voices need the EmoStream acoustic model (speaker-embedding input), which this "
    "server did not load (it needs torch: the [gpu] extra; see /healthz)"
)


def retry_after_s(exc: StoreUnavailable) -> int:
    """Whole seconds for ``Retry-After`` (at least 1)."""
    return max(1, math.ceil(exc.retry_after_s))


def store_unavailable_message(exc: StoreUnavailable) -> str:
    """What a client is told (the store's address stays in the server log)."""
    return (
        "the voice registry cannot be reached, so cloned voices are unavailable; "
        f"retry in {retry_after_s(exc)} s"
    )


@contextmanager
def store_down_refused() -> Iterator[None]:
    """The voice registry out of reach: a ``store_unavailable`` refusal (the protocol's)."""
    try:
        yield
    except StoreUnavailable as exc:
        raise ProtocolError(STORE_UNAVAILABLE, store_unavailable_message(exc)) from None


def clone_unavailable(request_app: Any, voice_id: str) -> str | None:
    """Why a cloned voice cannot speak in this process (None if it is not a known clone)."""
    if request_app.state.service.can_clone or request_app.state.registry.get(voice_id) is None:
        return None
    return f"voice {voice_id!r}: {CLONE_UNAVAILABLE}"
