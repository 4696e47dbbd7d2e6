"""The interface every voice family implements, and the controls a request may carry.

A voice is split in two stages so that audio can stream:

* ``acoustic(text, controls)`` turns one text segment into a latent frame sequence
  (mels for a FastSpeech2-class model, VITS latents for Piper) plus durations;
* ``decode(frames)`` turns a window of frames into audio, ``hop_length`` samples per frame.

The engine runs ``decode`` on overlapping windows (see :mod:`emostream.engine.chunks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from emostream.voices.words import WordUnits

# Every control a request can name; a voice lists the subset it really honours.
ALL_CONTROLS: tuple[str, ...] = ("speed", "pitch_shift", "energy", "emotion", "speaker")


@dataclass(frozen=True)
class Controls:
    """Per-utterance controls. Defaults mean "as the voice speaks naturally"."""

    speed: float = 1.0  # >1 is faster; 0.5..2.0
    pitch_shift: float = 0.0  # semitones, -12..12
    energy: float = 1.0  # loudness/energy scale, 0.5..2.0
    emotion: str = "neutral"
    intensity: float = 1.0  # 0..1

    def requested(self) -> set[str]:
        """The controls this request sets away from their neutral default."""
        asked: set[str] = set()
        if self.speed != 1.0:
            asked.add("speed")
        if self.pitch_shift != 0.0:
            asked.add("pitch_shift")
        if self.energy != 1.0:
            asked.add("energy")
        if self.emotion != "neutral":
            asked.add("emotion")
        return asked


@dataclass(frozen=True)
class VoiceInfo:
    """What ``GET /v1/voices`` and the ``started`` event say about a voice."""

    id: str
    model: str
    language: str
    sample_rate: int
    controls: tuple[str, ...]
    description: str = ""
    # The voice can time the written words of what it says (``word_units``; README
    # "WebSocket protocol", ``word_timestamps``). Not part of ``as_dict``.
    word_timestamps: bool = False
    # The kinds of pronunciation override it reads (emostream.text.pron.spec.KINDS: pinyin,
    # ipa, respelling); the others are read as written, and the client told. The started event
    # says them; not part of ``as_dict``.
    pronunciation: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "model": self.model,
            "language": self.language,
            "sample_rate": self.sample_rate,
            "controls": list(self.controls),
            "description": self.description,
        }

    def controls_report(self) -> dict[str, bool]:
        """``{control: supported}`` for every control the protocol knows."""
        return {name: name in self.controls for name in ALL_CONTROLS}


@dataclass
class Latent:
    """Output of the acoustic stage for one segment.

    ``before``/``after``: frames ``[channels, n]`` that come just before/after the segment's in
    its sentence, when it was rendered with the words around it (:mod:`emostream.voices.joins`):
    a decoder's context at the segment's edges, never decoded into audio of their own, so that
    the segment's first and last samples sound as inside the sentence."""

    frames: npt.NDArray[np.float32]  # [channels, T]
    unit_frames: npt.NDArray[np.int64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )  # frames per input unit (phoneme), sums to T when known
    units: list[str] = field(default_factory=list)
    before: npt.NDArray[np.float32] | None = None
    after: npt.NDArray[np.float32] | None = None

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[-1])

    def mapped(self, fn: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]) -> Latent:
        """This latent with ``fn`` applied to its frames and to its context frames alike."""

        def apply(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
            return np.ascontiguousarray(fn(x), dtype=np.float32)

        before = None if self.before is None else apply(self.before)
        after = None if self.after is None else apply(self.after)
        return Latent(apply(self.frames), self.unit_frames, self.units, before, after)


def join_latents(parts: list[Latent]) -> Latent:
    """One segment's latent from the latents of its pieces, in order (frames, frame counts
    and units end to end); a single part is returned as it is."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        raise ValueError("no latent to join")
    return Latent(
        frames=np.ascontiguousarray(np.concatenate([p.frames for p in parts], axis=-1)),
        unit_frames=np.concatenate([p.unit_frames for p in parts]).astype(np.int64),
        units=[u for p in parts for u in p.units],
        before=parts[0].before,
        after=parts[-1].after,
    )


@runtime_checkable
class Voice(Protocol):
    """A voice the engine can stream. Implementations must be thread-safe for ``decode``."""

    info: VoiceInfo
    hop_length: int  # audio samples per latent frame
    context_frames: int  # frames of context per side that make chunked == one-shot decode

    def acoustic(self, text: str, controls: Controls) -> Latent: ...

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Frames ``[C, T]`` → mono float32 audio of ``T * hop_length`` samples."""
        ...


@runtime_checkable
class PiecedVoice(Protocol):
    """A voice whose model calls have a size bound (:mod:`emostream.text.pieces`): its
    ``acoustic`` makes a longer segment piece by piece, and says how it would cut one, so
    that a streamer can run the pieces as calls of their own (each cancellable, scheduled
    between other streams' calls) and join their latents (:func:`join_latents`)."""

    def pieces(self, text: str, controls: Controls) -> list[str]:
        """``text`` as the consecutive pieces ``acoustic`` would make it in (``[text]`` when it
        fits one call). G2P work: milliseconds for a long segment."""
        ...


@runtime_checkable
class SpeakerVoice(Protocol):
    """A voice that speaks with a speaker embedding (the EmoStream voices: stock speakers,
    clones and inline references; not the embedded Piper voice). The phrase cache keys on it
    and a Ray ingress sends it to the model replicas with a clone's id."""

    speaker: npt.NDArray[np.float32]  # GE2E, 256-d


@runtime_checkable
class LevelledVoice(Protocol):
    """A voice that realises a request's loudness as a gain on its decoded audio (the EmoStream
    voices: :mod:`emostream.voices.effort`); the streamer applies it to every chunk."""

    def output_gain(self, controls: Controls) -> float: ...


@runtime_checkable
class WordTimedVoice(Protocol):
    """A voice that can say which of a segment's units speak which written word."""

    def word_units(self, text: str, latent: Latent) -> list[WordUnits]:
        """The words of ``text`` (the segment ``latent`` was made from) with their unit
        ranges into ``latent.units`` (see :mod:`emostream.voices.words`)."""
        ...


@dataclass(frozen=True)
class BatchedStage:
    """A stage of a voice that an engine may batch with other streams' calls to the same
    model (``key``: the same in every process that loads that model, e.g. the weights'
    name). ``run`` maps one batch, in the process that has the model (None elsewhere):

    * ``acoustic``: a list of :meth:`StagedVoice.prepare` results -> their :class:`Latent`;
    * ``decode``: frames ``[B, C, L]`` (padded with ``pad_value``) -> audio ``[B, L * hop]``.

    ``batch_sizes`` and ``lengths`` are the padded shapes ``run`` takes (``lengths`` empty:
    any length, unpadded); ``size`` gives an acoustic input's length (units); ``model``: the
    network ``run`` calls, where an engine may capture it in CUDA graphs (the acoustic stage's
    torch model; None where there is none to capture)."""

    key: str
    kind: Literal["acoustic", "decode"]
    run: Callable[[Any], Any] | None = None
    batch_sizes: tuple[int, ...] = (1,)
    lengths: tuple[int, ...] = ()
    pad_value: float = 0.0
    size: Callable[[Any], int] | None = None
    model: Any = field(default=None, compare=False, repr=False)


@runtime_checkable
class StagedVoice(Protocol):
    """A voice whose stages an engine process can run (see :class:`BatchedStage`); the text
    front end (:meth:`prepare`) stays with the caller. The acoustic voices implement it;
    runners and the engine check it with ``isinstance`` (:func:`stage_of` does) before they
    call :meth:`prepare` or :meth:`batched_stages`."""

    def batched_stages(self) -> tuple[BatchedStage, ...]: ...

    def prepare(self, text: str, controls: Controls) -> Any:
        """The acoustic stage's input for ``text`` (G2P, control mapping: CPU work)."""
        ...


def stage_of(voice: object, kind: str) -> BatchedStage | None:
    """``voice``'s declared stage of ``kind``, if it declares one."""
    if not isinstance(voice, StagedVoice):
        return None
    return next((s for s in voice.batched_stages() if s.kind == kind), None)


class UnsupportedControl(ValueError):
    """A request asked a voice for a control it does not have."""

    def __init__(self, voice_id: str, names: set[str]) -> None:
        self.voice_id = voice_id
        self.names = sorted(names)
        super().__init__(f"voice {voice_id!r} does not support control(s): {', '.join(self.names)}")


def check_controls(info: VoiceInfo, controls: Controls) -> None:
    """Raise :class:`UnsupportedControl` if ``controls`` asks for what ``info`` lacks."""
    missing = controls.requested() - set(info.controls)
    if missing:
        raise UnsupportedControl(info.id, missing)
