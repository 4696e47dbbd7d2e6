"""A cloned voice as every registry stores it: its record, and the values a refinement writes.

:class:`ClonedVoice` is a name, an id, the speaker embedding of its reference clip (with the
encoder version that made it), the clip's measures and, since schema 3 (SQLite) / 2 (Redis),
its refinement (:class:`~emostream.voices.cloning.refine_state.RefineRecord`). The clip itself is
stored beside it as 16 kHz FLAC (:func:`flac_clip`). A refinement is written by
``VoiceStore.update_refine`` as a :class:`RefineUpdate` (the new record, and a new clip as a
:class:`Reenrolment` when the attempt brought one). Shared by
:mod:`emostream.voices.cloning.registry` (SQLite, and the store protocol) and
:mod:`emostream.voices.cloning.registry_redis`.
"""

from __future__ import annotations

import io
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import soundfile as sf

from emostream.voices.cloning.refine_state import RefineRecord

FloatArray = npt.NDArray[np.float32]

ID_PREFIX = "clone_"
_ID_RE = re.compile(r"^clone_[0-9a-f]{16}$")
NAME_MAX = 64


def is_cloned_id(voice_id: str) -> bool:
    """Whether ``voice_id`` has the shape of a cloned-voice id (stock ids never do)."""
    return bool(_ID_RE.match(voice_id))


def clean_name(name: str, *, max_chars: int = NAME_MAX) -> str:
    """Trimmed display name; raises ``ValueError`` when empty, too long or holding control chars."""
    name = name.strip()
    if not name:
        raise ValueError("'name' must not be empty")
    if len(name) > max_chars:
        raise ValueError(f"'name' is over {max_chars} characters")
    if any(not ch.isprintable() for ch in name):
        raise ValueError("'name' holds control characters")
    return name


@dataclass(frozen=True)
class ClonedVoice:
    id: str
    name: str
    created: float  # unix seconds
    clip_sha256: str
    duration_s: float
    speech_s: float
    encoder: str
    embedding: FloatArray
    owner: str | None = None  # the API-key principal that made it; None: made with auth off
    source_rate: int | None = None  # the upload's sample rate (None: stored before schema 3)
    refine: RefineRecord = field(default_factory=RefineRecord)

    @property
    def timbre(self) -> FloatArray | None:
        """The refined timbre the voice speaks with (None: zero-shot)."""
        return self.refine.timbre

    @classmethod
    def new(
        cls,
        *,
        name: str,
        embedding: FloatArray,
        encoder: str,
        clip_sha256: str,
        duration_s: float,
        speech_s: float,
        owner: str | None = None,
        source_rate: int | None = None,
    ) -> ClonedVoice:
        """A voice being registered now: a fresh id, the name cleaned (every store)."""
        return cls(
            id=new_voice_id(),
            name=clean_name(name),
            created=time.time(),
            clip_sha256=clip_sha256,
            duration_s=float(duration_s),
            speech_s=float(speech_s),
            encoder=encoder,
            embedding=np.asarray(embedding, dtype=np.float32),
            owner=owner,
            source_rate=source_rate,
        )

    def as_dict(self) -> dict[str, object]:
        """What the voices API shows (the embedding stays on the server)."""
        return {
            "id": self.id,
            "name": self.name,
            "type": "cloned",
            "created": datetime.fromtimestamp(self.created, UTC).isoformat(timespec="seconds"),
            "clip_sha256": self.clip_sha256,
            "duration_s": round(self.duration_s, 3),
            "speech_s": round(self.speech_s, 3),
            "encoder": self.encoder,
        }


@dataclass(frozen=True)
class Reenrolment:
    """A new clip for a voice (``POST /v1/voices/{id}/refine`` with a file): written with the
    refinement fitted to it, in the same transaction, so the voice's clip, embedding and timbre
    always belong together."""

    embedding: FloatArray
    encoder: str
    clip_sha256: str
    duration_s: float
    speech_s: float
    source_rate: int
    clip_audio: FloatArray
    sample_rate: int = 16000


@dataclass(frozen=True)
class RefineUpdate:
    """What :meth:`VoiceStore.update_refine` writes: the voice's new refinement record, and a
    new clip when the attempt brought one."""

    record: RefineRecord
    enrolment: Reenrolment | None = None


# The move an update applies to the stored voice: pure, may raise (nothing is written then).
RefineMove = Callable[[ClonedVoice], RefineUpdate]


def new_voice_id() -> str:
    return ID_PREFIX + secrets.token_hex(8)


def flac_clip(audio: FloatArray, sample_rate: int) -> bytes:
    """A reference clip as stored: 16-bit FLAC."""
    buf = io.BytesIO()
    sf.write(buf, audio, sample_rate, format="FLAC", subtype="PCM_16")
    return buf.getvalue()


def read_flac(data: bytes) -> tuple[FloatArray, int]:
    audio, rate = sf.read(io.BytesIO(data), dtype="float32")
    return np.asarray(audio, dtype=np.float32), int(rate)
