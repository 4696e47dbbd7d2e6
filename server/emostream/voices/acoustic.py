"""The project's own acoustic model as a :class:`~emostream.voices.base.Voice`.

``acoustic()`` runs G2P → the acoustic model and returns an 80-bin HiFi-GAN mel ``[80, T]``
with frames per unit. The model is either :class:`~emostream.networks.acoustic.AcousticModel`
(torch: GPU serving, batched) or :class:`~emostream.networks.acoustic_onnx.OnnxAcousticModel`
(ONNX Runtime on CPU, the default install: no torch); both read the same shipped ONNX file.
``decode`` is pluggable: pass any ``mel [80, T] → audio`` callable (the light vocoder or
HiFi-GAN V1) with the context it needs for chunked decoding; without one, ``decode`` raises.

Emotion labels map to variance-adaptor offsets (pitch level and range, rate, pauses) from
:mod:`emostream.text.emotion`, scaled by intensity, plus the model's emotion embedding. The v1
corpus is all neutral, so the embedding has only learned "neutral": emotion is carried by the
prosody offsets alone for now. Loudness (the ``energy`` control times the profile's energy) is
vocal effort after the model (:mod:`emostream.voices.effort`): the segment's spectral balance
in :func:`split_latents`, the level as a gain on the audio (:meth:`AcousticVoice.output_gain`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from emostream.networks.acoustic_onnx import OnnxAcousticModel, Prosody, pack_one
from emostream.text.context import Segment
from emostream.text.emotion import EMOTIONS, ProsodyControls, prosody_controls
from emostream.text.phonemes import G2P, PhonemeSequence
from emostream.text.pieces import fit_pieces, piece_limit
from emostream.text.pron.spec import KINDS
from emostream.voices.base import BatchedStage, Controls, Latent, VoiceInfo, join_latents
from emostream.voices.effort import apply_effort, effort_db, effort_gain, effort_offset
from emostream.voices.joins import Span, cut, locate
from emostream.voices.stock_voices import describe
from emostream.voices.words import WordUnits, safe_align

if TYPE_CHECKING:
    import torch

    from emostream.networks.acoustic import AcousticModel

Decoder = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]
Model = Union["AcousticModel", OnnxAcousticModel]

FAMILY = "emostream-fs2"
CHECKPOINT = "acoustic/emostream-fs2-v0.4.onnx"  # fp16 weights; torch reads them too
SPEAKERS = "acoustic/speakers-v0.4.npz"  # mean GE2E per training speaker
CONTROLS = ("speed", "pitch_shift", "energy", "emotion", "speaker")


# The most units (phonemes, word boundaries, punctuation) one acoustic call takes at rate 1;
# a longer segment is made in pieces. The decoder's self-attention runs over the frames, so a
# call's memory grows with their square: a 295-character segment of digits (1,474 units, 6,180
# frames, 72 s) grew the process by 1.6 GB in one call; a 300-character sentence with no
# punctuation is 323-328 units (1,312-1,355 frames, ~60 MB), under the bound. At a slower
# rate the bound shrinks with it (the frames per unit grow).
MAX_PIECE_UNITS = 400


def _controls(controls: Controls) -> ProsodyControls:
    return prosody_controls(
        controls.emotion,
        max(0.0, min(1.0, controls.intensity)),
        speed=controls.speed,
        pitch_shift=controls.pitch_shift,
        energy=controls.energy,
    )


def prosody_for(controls: Controls) -> Prosody:
    """The request's controls as variance-adaptor controls (emotion profiles from
    :func:`emostream.text.emotion.prosody_controls`). The model's energy input stays at 1:
    energy is vocal effort after the model (:func:`effort_for`)."""
    p = _controls(controls)
    return Prosody(
        rate=p.rate_scale,
        pitch_shift=p.pitch_shift_st,
        pitch_range=p.pitch_range,
        energy=1.0,
        pause=p.pause_scale,
    )


def effort_for(controls: Controls) -> float:
    """The vocal effort the request asks for, dB (:mod:`emostream.voices.effort`): the
    ``energy`` control times the emotion profile's energy at its intensity."""
    return effort_db(_controls(controls).energy_scale)


@dataclass(frozen=True)
class AcousticRequest:
    """One segment, ready for the acoustic model (see :func:`infer_batch`)."""

    seq: PhonemeSequence
    speaker: npt.NDArray[np.float32]  # GE2E, 256-d
    emotion: int  # index into EMOTIONS
    intensity: float
    prosody: Prosody
    timbre: npt.NDArray[np.float32] | None = None  # [2, 80] a refined clone's scale, offset
    effort_db: float = 0.0  # vocal effort: the mels' spectral balance (voices.effort)
    # The units that are the segment's, when ``seq`` renders it with the words around it
    # (emostream.voices.joins); None: all of them.
    span: Span | None = None


def infer_batch(model: Model, requests: Sequence[AcousticRequest], *, device: str = "cpu"
                ) -> list[Latent]:  # fmt: skip
    """Run ``requests`` through ``model``: torch as one padded batch (unit id 0 is padding;
    every layer masks it, so each result equals that request run alone, up to float
    rounding); ONNX Runtime one request after another (its graph is batch 1)."""
    if not requests:
        return []
    if isinstance(model, OnnxAcousticModel):
        return [infer_onnx(model, r) for r in requests]
    import torch

    width = max(len(r.seq.units) for r in requests)
    with torch.inference_mode():
        mel, dur = model.infer(*(t.to(device) for t in collate(requests, width=width)))
        mels = mel.float().cpu().numpy()
        durs = dur.cpu().numpy().astype(np.int64)
    return split_latents(requests, mels, durs)


def infer_onnx(model: OnnxAcousticModel, r: AcousticRequest) -> Latent:
    inputs = pack_one(r.seq.ids(), r.seq.tones, r.seq.langs, r.speaker, r.emotion,
                      r.intensity, r.prosody)  # fmt: skip
    mel, durations = model.infer(inputs)
    return split_latents([r], mel[None], durations[None])[0]


def collate(
    requests: Sequence[AcousticRequest], *, width: int, rows: int | None = None
) -> tuple[torch.Tensor, ...]:
    """Host tensors for :meth:`AcousticModel.infer`: ids, tones, langs ``[rows, width]``
    (0-padded), speaker, emotion, intensity, controls; ``rows`` (default: one per request)
    pads the batch with empty rows."""
    import torch

    rows = len(requests) if rows is None else rows
    tokens = torch.zeros(3, rows, width, dtype=torch.long)
    speaker = torch.zeros(rows, requests[0].speaker.shape[-1])
    emotion = torch.zeros(rows, dtype=torch.long)
    intensity = torch.ones(rows)
    controls = torch.ones(rows, 5)
    for i, r in enumerate(requests):
        n = len(r.seq.units)
        for k, row in enumerate((r.seq.ids(), r.seq.tones, r.seq.langs)):
            tokens[k, i, :n] = torch.tensor(row, dtype=torch.long)
        speaker[i] = torch.from_numpy(np.asarray(r.speaker, dtype=np.float32))
        emotion[i] = r.emotion
        intensity[i] = float(r.intensity)
        controls[i] = torch.tensor(r.prosody.row())
    return tokens[0], tokens[1], tokens[2], speaker, emotion, intensity, controls


# Silence the teacher (Kokoro) puts around every utterance, which the model learned: 0.3-0.5 s
# before the first phone (the ``^`` unit: 29-45 frames on four v0.3 voices) and 0.45-0.95 s
# after the last one (inside the last phone's and the punctuation's frames). Every segment
# carried both, so the first word came ~0.4 s after the first packet and sentences were 0.85-
# 1.45 s apart (joe: 0.28 s; bench/speech_onset.py). Kept: LEAD_FRAMES before the first phone
# or the first loud frame, whichever comes first, and TAIL_FRAMES after the last loud frame (58 ms
# and 232 ms at hop 256, 22.05 kHz). The first phone's sound often starts inside ``^``'s frames
# (v0.4: 5-11 frames before the boundary, an initial /s/ or /n/), so a cut at the boundary alone
# took the onset of the first consonant ("Sick." heard as "Take", "Same." as "I'm";
# lab/short_replies.py).
LEAD_FRAMES = 5
TAIL_FRAMES = 20
QUIET_NATS = 5.0  # a frame is quiet when its loudest mel bin is this far (~43 dB) below loud


def trim_silence(
    frames: npt.NDArray[np.float32],
    unit_frames: npt.NDArray[np.int64],
    *,
    leading: bool = True,
    lead_frames: int = LEAD_FRAMES,
    tail_frames: int = TAIL_FRAMES,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """``frames`` ``[80, T]`` and the units' frame counts with the leading unit (``^``, when
    ``leading``) cut to the ``lead_frames`` frames before the first phone or before the first
    loud frame, whichever is earlier (a sound that starts inside ``^`` keeps its onset), and
    everything later than ``tail_frames`` after the last loud frame removed, the counts
    shortened to match (from the last unit backwards), so word timings stay on the audio."""
    d = unit_frames.copy()
    total = int(d.sum())
    if total <= 0 or frames.shape[1] < total:
        return frames, d
    before_phone = max(int(d[0]) - lead_frames, 0) if leading and len(d) else 0
    peak = frames[:, :total].max(axis=0)
    # "loud" against the frames after the boundary cut (what the tail rule always measured)
    loud = np.flatnonzero(peak >= np.percentile(peak[before_phone:], 95) - QUIET_NATS)
    cut = min(before_phone, max(int(loud[0]) - lead_frames, 0)) if len(loud) else before_phone
    d[0] -= cut
    keep = min(int(loud[-1]) + 1 - cut + tail_frames, total - cut) if len(loud) else total - cut
    extra = total - cut - keep
    for k in range(len(d) - 1, -1, -1):
        if extra <= 0:
            break
        take = min(int(d[k]), extra)
        d[k] -= take
        extra -= take
    return np.ascontiguousarray(frames[:, cut : cut + keep]), d


def split_latents(
    requests: Sequence[AcousticRequest],
    mels: npt.NDArray[np.float32],
    durs: npt.NDArray[np.int64],
) -> list[Latent]:
    """One :class:`Latent` per request from batched mel ``[B, T, 80]`` and durations, with
    the teacher's silence around the segment trimmed (:func:`trim_silence`)."""
    latents = []
    for i, r in enumerate(requests):
        d = durs[i, : len(r.seq.units)]
        frames = np.ascontiguousarray(mels[i, : max(int(d.sum()), 1)].T, dtype=np.float32)
        units = r.seq.symbols
        leading = bool(r.seq.units) and r.seq.units[0].symbol == "^"
        tail = max(round(TAIL_FRAMES * r.prosody.pause), 1)  # the pause control scales it
        context = None
        if r.span is not None:  # rendered in context: keep the segment's own frames
            context = cut(frames, d, r.span)
            frames, d = context.frames, context.unit_frames
            units = units[r.span.lo : r.span.hi]
            leading = leading and r.span.lo == 0
            if r.span.hi < len(r.seq.units):  # no end silence to trim
                tail = 1 << 30
        frames, d = trim_silence(frames, d, leading=leading, tail_frames=tail)
        latent = Latent(frames=frames, unit_frames=d, units=units)
        if context is not None:
            latent.before, latent.after = context.before, context.after
        if r.timbre is not None:  # a refined clone's correction (voices.cloning.refine)
            latent = latent.mapped(partial(_timbre, r.timbre))
        if r.effort_db:  # louder is brighter: the balance here, the level as a gain
            offset = effort_offset(latent.frames, r.effort_db)
            latent = latent.mapped(partial(apply_effort, offset=offset))
        latents.append(latent)
    return latents


def _timbre(timbre: npt.NDArray[np.float32], frames: npt.NDArray[np.float32]
            ) -> npt.NDArray[np.float32]:  # fmt: skip
    corrected: npt.NDArray[np.float32] = frames * timbre[0][:, None] + timbre[1][:, None]
    return corrected


@dataclass
class AcousticVoice:
    """One speaker of the acoustic model (a stock speaker's or a cloned GE2E embedding)."""

    info: VoiceInfo
    model: Model
    speaker: npt.NDArray[np.float32]  # GE2E, 256-d
    g2p: G2P
    decoder: Decoder | None = None
    hop_length: int = 256
    context_frames: int = 14  # mel frames each side a chunked decode needs (V1 14, light 29)
    trained_emotions: tuple[str, ...] = ("neutral",)  # labels with a trained embedding row
    device: str = "cpu"
    stages: tuple[BatchedStage, ...] = ()  # what an engine process may batch (the family's)
    timbre: npt.NDArray[np.float32] | None = None  # a refined clone's log-mel scale, offset [2, 80]

    def batched_stages(self) -> tuple[BatchedStage, ...]:
        return self.stages

    def prepare(self, text: str, controls: Controls) -> AcousticRequest:
        """The CPU part of :meth:`acoustic`: G2P and the control mapping."""
        # Only labels the checkpoint was trained on reach its emotion embedding (v0.1: neutral
        # only; an untrained row wrecks the durations). The others act through prosody_for.
        label = controls.emotion if controls.emotion in self.trained_emotions else "neutral"
        segment = Segment.parse(text)
        seq, span = locate(self.g2p, segment) if segment.has_context else (self.g2p(text), None)
        return AcousticRequest(
            seq=seq,
            speaker=self.speaker,
            emotion=EMOTIONS.index(label),
            intensity=controls.intensity if label != "neutral" else 1.0,  # as trained
            prosody=prosody_for(controls),
            timbre=self.timbre,
            effort_db=effort_for(controls),
            span=span,
        )

    def output_gain(self, controls: Controls) -> float:
        """The gain on this request's audio: its effort's level (:func:`effort_for`)."""
        return effort_gain(effort_for(controls))

    def acoustic(self, text: str, controls: Controls) -> Latent:
        """The segment's mels; a segment over :data:`MAX_PIECE_UNITS` (at the request's rate)
        is made piece by piece (:meth:`pieces`) and joined."""
        request = self.prepare(text, controls)
        if len(request.seq.units) <= piece_limit(MAX_PIECE_UNITS, request.prosody.rate):
            return infer_batch(self.model, [request], device=self.device)[0]
        return join_latents(
            [infer_batch(self.model, [self.prepare(p, controls)], device=self.device)[0]
             for p in self.pieces(text, controls)]
        )  # fmt: skip

    def pieces(self, text: str, controls: Controls) -> list[str]:
        """``text`` cut until each piece is at most :data:`MAX_PIECE_UNITS` units at the
        request's rate (:func:`~emostream.text.pieces.fit_pieces`; one piece when it fits)."""
        g2p = self.g2p
        limit = piece_limit(MAX_PIECE_UNITS, prosody_for(controls).rate)
        segment = Segment.parse(text)  # its context goes with its first and last pieces
        return segment.wire_pieces(fit_pieces(segment.text, lambda p: len(g2p(p).units), limit))

    def word_units(self, text: str, latent: Latent) -> list[WordUnits]:
        """Written words of ``text`` and the units of ``latent`` that speak them: each word
        said alone by the same G2P, matched against the segment's units
        (:mod:`emostream.voices.words`; Mandarin per character)."""
        g2p = self.g2p
        return safe_align(text, latent.units, lambda word: _spoken(g2p, word))

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if self.decoder is None:
            raise RuntimeError(f"voice {self.info.id!r} has no vocoder attached")
        return self.decoder(frames)


def _request_units(request: AcousticRequest) -> int:
    return max(1, len(request.seq.units))


def _decode_rows(decoder: Decoder, mel: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """A per-window decoder over a batch ``[B, C, L]`` (row by row)."""
    return np.stack([decoder(np.ascontiguousarray(row)) for row in mel])


@lru_cache(maxsize=8192)
def _spoken(g2p: G2P, word: str) -> tuple[str, ...]:
    """The units ``g2p`` gives ``word`` said alone (``^``/``$`` dropped); shared by every
    voice of a family (one G2P)."""
    return tuple(g2p(word).symbols[1:-1])


def clone_embedding(
    embedding: npt.NDArray[np.float32], centre: npt.NDArray[np.float32], gain: float
) -> npt.NDArray[np.float32]:
    """A clone's conditioning vector: its GE2E ``embedding`` moved away from ``centre`` (the
    mean of the model's training speakers) by ``gain`` (1.0: as measured), at its own norm.

    The model was conditioned on GE2E vectors of clean teacher speech; a real clip's vector
    pulls it toward the middle of that cloud, and a clone comes out closer to the average
    training voice than its speaker. A gain above 1 keeps what sets the speaker apart.
    ``lab.clone_gain`` chose the served value on validation speakers that the cloning
    criterion never scores (README, Cloning)."""
    if gain == 1.0:
        return embedding
    moved = centre + gain * (embedding - centre)
    scale = float(np.linalg.norm(embedding)) / max(float(np.linalg.norm(moved)), 1e-12)
    return np.asarray(moved * scale, dtype=np.float32)


def speaker_centre(speakers: dict[str, npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
    """The mean of the training speakers' vectors: what :func:`clone_embedding` moves from."""
    centre: npt.NDArray[np.float32] = np.mean(np.stack(list(speakers.values())), axis=0).astype(
        np.float32
    )
    return centre


def speaker_language(name: str) -> str:
    """Corpus speaker names: Kokoro's ``a*``/``b*`` English, ``z*`` Mandarin; blends say so."""
    if name.startswith(("zh_", "z")):
        return "zh-CN"
    return "en-GB" if name.startswith("b") else "en-US"


class AcousticFamily:
    """The shipped model, its stock speakers, and voices for any GE2E embedding (clones).

    ``backend``: ``"onnx"`` runs the shipped ONNX file in ONNX Runtime on CPU (``threads``
    intra-op threads; no torch needed), ``"torch"`` loads its weights into
    :class:`~emostream.networks.acoustic.AcousticModel` on ``device`` (GPU serving, batched).
    ``context_frames``: what ``decoder`` needs each side of a chunk (see ``AcousticVoice``)."""

    def __init__(
        self,
        models_dir: Path,
        *,
        decoder: Decoder | None,
        backend: str = "onnx",
        context_frames: int = 14,
        device: str = "cpu",
        dtype: Any = None,
        threads: int = 1,
        vocoder_key: str = "",
        clone_gain: float = 1.0,
    ) -> None:
        """``vocoder_key``: the vocoder's name (the same in every process that loads it),
        so an engine process can batch its windows; empty: the decode stage is not
        declared. ``clone_gain``: :func:`clone_embedding`'s gain for :meth:`clone`."""
        path = models_dir / CHECKPOINT
        self.model: Model
        if backend == "onnx":
            self.model = OnnxAcousticModel(path, threads=threads)
            device = "cpu"
        elif backend == "torch":
            from emostream.networks.acoustic import AcousticModel

            self.model = AcousticModel.load(path).to(device=device, dtype=dtype).eval()
        else:
            raise ValueError(f"unknown acoustic backend {backend!r} (onnx or torch)")
        with np.load(models_dir / SPEAKERS) as table:
            self.speakers = {k: table[k].astype(np.float32) for k in table.files}
        self.centre = speaker_centre(self.speakers)
        self.clone_gain = clone_gain
        self.g2p = G2P()
        # Load the front ends' dictionaries now (jieba's takes over a second), not in the first
        # Mandarin request (docs/measurements.md, "Figures behind the code").
        self.g2p("你好，hello.")
        self.decoder = decoder
        self.context_frames = context_frames
        self.device = device
        self.backend = backend
        self.stages = self._stages(vocoder_key)

    def _stages(self, vocoder_key: str) -> tuple[BatchedStage, ...]:
        """The acoustic model (batched in torch; ONNX Runtime's graph is batch 1) and, with
        ``vocoder_key``, the vocoder (``run`` None where this process has no decoder)."""
        batches = (1,) if self.backend == "onnx" else (1, 2, 4, 8, 16, 32)
        stages = [
            BatchedStage(
                Path(CHECKPOINT).stem,
                "acoustic",
                partial(infer_batch, self.model, device=self.device),
                batch_sizes=batches,
                size=_request_units,
                model=self.model,
            )
        ]
        if vocoder_key:
            decoder = self.decoder
            run = None if decoder is None else partial(_decode_rows, decoder)
            stages.append(BatchedStage(vocoder_key, "decode", run))
        return tuple(stages)

    def voice(self, voice_id: str, embedding: npt.NDArray[np.float32], *, language: str,
              description: str, timbre: npt.NDArray[np.float32] | None = None,
              ) -> AcousticVoice:  # fmt: skip
        """A voice speaking with ``embedding`` (GE2E, as the model is conditioned) and, for a
        refined clone, its ``timbre`` correction (:mod:`emostream.voices.cloning.refine`)."""
        info = VoiceInfo(voice_id, FAMILY, language, 22050, CONTROLS, description,
                         word_timestamps=True, pronunciation=KINDS)  # fmt: skip
        return AcousticVoice(
            info,
            self.model,
            embedding,
            self.g2p,
            self.decoder,
            context_frames=self.context_frames,
            device=self.device,
            stages=self.stages,
            timbre=None if timbre is None else np.asarray(timbre, dtype=np.float32),
        )

    def clone(self, voice_id: str, embedding: npt.NDArray[np.float32], *,
              description: str, timbre: npt.NDArray[np.float32] | None = None,
              ) -> AcousticVoice:  # fmt: skip
        """A voice for a cloned speaker's GE2E ``embedding`` (see :func:`clone_embedding`),
        with its refinement's ``timbre`` when it has one."""
        moved = clone_embedding(embedding, self.centre, self.clone_gain)
        return self.voice(voice_id, moved, language="multi", description=description,
                          timbre=timbre)  # fmt: skip

    def stock_voices(self) -> list[AcousticVoice]:
        return [
            self.voice(
                name,
                emb,
                language=speaker_language(name),
                description=describe(name),
            )
            for name, emb in sorted(self.speakers.items())
        ]


def find_models_dir(models_dir: str = "") -> Path | None:
    """``Settings.models_dir`` or the ``models/`` folder above this package, if it holds the
    acoustic checkpoint."""
    if models_dir:
        path = Path(models_dir).expanduser()
        return path if (path / CHECKPOINT).is_file() else None
    for parent in Path(__file__).resolve().parents:
        if (parent / "models" / CHECKPOINT).is_file():
            return parent / "models"
    return None
