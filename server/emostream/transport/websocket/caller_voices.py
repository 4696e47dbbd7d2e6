"""The voices one WebSocket caller may use, as the protocol looks them up.

A voice id, OpenAI's name or one of the caller's clones by its given name
(:mod:`emostream.transport.voice_access`); an inline reference clip's voice by its ``ref_`` id.
A registry out of reach refuses the ``start`` or ``line`` with ``store_unavailable`` (a
:class:`~emostream.transport.messages.ProtocolError`) and the connection goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager

from starlette.applications import Starlette

from emostream.stream.service import SpeechService
from emostream.transport.edge.guard import voice_visible
from emostream.transport.messages import ProtocolError
from emostream.transport.voice_access import (
    STORE_UNAVAILABLE,
    clone_unavailable,
    resolve_voice,
    store_unavailable_message,
    unknown_voice,
)
from emostream.voices.base import Voice
from emostream.voices.cloning.registry import StoreUnavailable


@contextmanager
def store_down_refused() -> Iterator[None]:
    """The voice registry out of reach: a ``store_unavailable`` refusal (the protocol's)."""
    try:
        yield
    except StoreUnavailable as exc:
        raise ProtocolError(STORE_UNAVAILABLE, store_unavailable_message(exc)) from None


class CallerVoices:
    """``lookup``, ``unavailable`` and ``unknown`` for :class:`SessionProtocol`, as seen by
    ``principal`` (``refs``: the connection's inline reference voices, read at each lookup)."""

    def __init__(self, service: SpeechService, app: Starlette, principal: str | None,
                 refs: Callable[[], Container[str]]) -> None:  # fmt: skip
        self.service, self.app, self.principal, self.refs = service, app, principal, refs

    def lookup(self, voice_id: str) -> Voice | None:
        """The voice to speak (a clone is read from the registry unless built already): the
        one lookup of an utterance's voice, carried on its request to the utterance."""
        with store_down_refused():
            if voice_id in self.refs():
                return self.service.voice(voice_id)
            voice_id = self._resolve(voice_id)
            if self._visible(voice_id):
                return self.service.voice(voice_id)
        return None

    def unavailable(self, voice_id: str) -> str | None:
        with store_down_refused():
            voice_id = self._resolve(voice_id)
            if self._visible(voice_id):
                return clone_unavailable(self.app, voice_id)
        return None

    def unknown(self, voice_id: str) -> str:
        return unknown_voice(self.service.catalog, self.service.registry, self.principal,
                             voice_id)  # fmt: skip

    def _resolve(self, voice_id: str) -> str:
        """A clone's given name as its id (this caller's clones)."""
        return resolve_voice(self.service.catalog, self.service.registry, self.principal,
                             voice_id)  # fmt: skip

    def _visible(self, voice_id: str) -> bool:
        return voice_visible(self.service.registry, self.principal, voice_id)
