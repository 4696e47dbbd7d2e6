"""Which voice a caller means, and the voices a caller cannot speak, said the same way on every
route: a clone named by the name it was given (:func:`resolve_voice`), a voice not found
(:func:`unknown_voice`: one short line with the closest names), a clone this process has no
model for (:func:`clone_unavailable`), and the voice registry out of reach
(:data:`STORE_UNAVAILABLE`). The WebSocket (:mod:`emostream.transport.websocket.connection`)
and the HTTP routes (:mod:`emostream.transport.http`) both answer with these; neither imports
the other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from emostream.voices.catalog import VoiceCatalog
from emostream.voices.cloning.registry import (
    ClonedVoice,
    StoreUnavailable,
    VoiceStore,
    is_cloned_id,
)
from emostream.voices.names import ambiguous_message, closest, named, unknown_voice_message

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


def clone_unavailable(request_app: Any, voice_id: str) -> str | None:
    """Why a cloned voice cannot speak in this process (None if it is not a known clone)."""
    if request_app.state.service.can_clone or request_app.state.registry.get(voice_id) is None:
        return None
    return f"voice {voice_id!r}: {CLONE_UNAVAILABLE}"


def _direct(catalog: VoiceCatalog, voice_id: str) -> bool:
    """An id that is looked up as it is: a stock voice, a clone's id, an inline reference."""
    return voice_id in catalog or is_cloned_id(voice_id) or voice_id.startswith("ref_")


def resolve_voice(
    catalog: VoiceCatalog, registry: VoiceStore | None, principal: str | None, asked: str
) -> str:
    """The voice id ``asked`` means to ``principal``: an id as it is, else the id of the one
    clone of theirs given that name (any case), else ``asked`` (then unknown). Raises
    :class:`StoreUnavailable` when a name must be looked up and the registry is out of reach."""
    if registry is None or _direct(catalog, asked):
        return asked
    found = named(registry.voices(owner=principal), asked)
    return found[0].id if len(found) == 1 else asked


def unknown_voice(
    catalog: VoiceCatalog, registry: VoiceStore | None, principal: str | None, asked: str,
    *, aliases: Sequence[str] = (),
) -> str:  # fmt: skip
    """The one-line answer to a voice ``principal`` cannot find: the closest of the stock ids,
    their clones' names and ``aliases`` (OpenAI's voice names), else a few voices to try (the
    aliases, or the default voices); or, for a name shared by several clones, their ids."""
    clones: list[ClonedVoice] = []
    if registry is not None and not _direct(catalog, asked):
        try:
            clones = registry.voices(owner=principal)
        except StoreUnavailable:  # suggestions without the clones' names
            pass
    several = named(clones, asked)
    if len(several) > 1:
        return ambiguous_message(asked, several)
    ids = [info.id for info in catalog.infos()]
    near = closest(asked, [*ids, *(c.name for c in clones), *aliases])
    others = list(aliases) or list(dict.fromkeys(catalog.language_defaults().values())) or ids
    return unknown_voice_message(asked, near, others)
