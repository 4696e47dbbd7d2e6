from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import soxr

from emostream.voices.cloning.clip import prepare_clip
from emostream.voices.cloning.encoder import (
    PARTIAL_FRAMES,
    SpeakerEncoder,
    cosine,
    default_model_path,
    mel_filterbank,
    mel_spectrogram,
    partial_slices,
    shorten_pauses,
)
from tests.voices.voice_fixtures import LIBRIVOX, to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


def _quiet_import(name: str) -> ModuleType:
    """Import a reference package whose import warns (pkg_resources, scipy deprecations)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip(name)


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


@pytest.fixture(scope="module")
def reference() -> Any:
    """resemblyzer's own VoiceEncoder (torch) — the implementation we must agree with."""
    _quiet_import("torch")
    resemblyzer = _quiet_import("resemblyzer")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resemblyzer.VoiceEncoder("cpu", verbose=False)


def _at16k(speech: Speech) -> npt.NDArray[np.float32]:
    audio, rate = speech
    return np.asarray(soxr.resample(audio, rate, 16000), dtype=np.float32)


def test_filterbank_and_mels_match_librosa(speech: Speech) -> None:
    librosa = _quiet_import("librosa")
    ref_fb = librosa.filters.mel(sr=16000, n_fft=400, n_mels=40)
    assert np.abs(mel_filterbank() - ref_fb).max() < 1e-8
    audio = _at16k(speech)
    ours = mel_spectrogram(audio)
    theirs = librosa.feature.melspectrogram(
        y=audio, sr=16000, n_fft=400, hop_length=160, n_mels=40
    ).T
    assert ours.shape == theirs.shape == (1 + len(audio) // 160, 40)
    assert np.abs(ours - theirs).max() <= 1e-5 * theirs.max()


@pytest.mark.parametrize("seconds", [0.5, 1.6, 2.0, 3.3, 7.1, 29.9])
def test_partial_slices(seconds: float) -> None:
    n = int(seconds * 16000)
    slices = partial_slices(n)
    assert slices[0].start == 0
    assert all(s.stop - s.start == PARTIAL_FRAMES for s in slices)
    steps = {b.start - a.start for a, b in itertools.pairwise(slices)}
    assert steps <= {77}  # 16000 / 1.3 / 160 rounded
    # the partials cover the utterance up to the coverage rule
    assert slices[-1].stop * 160 >= 0.75 * n or len(slices) == 1


def test_onnx_matches_torch_module() -> None:
    torch = _quiet_import("torch")
    from emostream.networks.ge2e import load_ge2e

    try:
        model = load_ge2e()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    mels = np.random.default_rng(0).gamma(0.5, 2.0, size=(3, PARTIAL_FRAMES, 40)).astype("f4")
    with torch.no_grad():
        ref = model(torch.from_numpy(mels)).numpy()
    ours = SpeakerEncoder().embed_mels(mels)
    assert np.abs(ours - ref).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_same_input_matches_resemblyzer(
    encoder: SpeakerEncoder, reference: Any, speech: Speech
) -> None:
    audio = _at16k(speech)
    ours = encoder.embed_utterance(audio)
    theirs = reference.embed_utterance(audio)
    assert ours.shape == (256,)
    assert cosine(ours, theirs) > 0.9999


def test_clip_pipeline_matches_resemblyzer_pipeline(
    encoder: SpeakerEncoder, reference: Any, speech: Speech
) -> None:
    """Our intake + embedding vs resemblyzer's preprocess_wav + embed_utterance on raw audio."""
    resemblyzer = _quiet_import("resemblyzer")
    audio, rate = speech
    ours = encoder.embed_clip(prepare_clip(to_bytes(audio, rate)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = reference.embed_utterance(resemblyzer.preprocess_wav(audio, rate))
    assert cosine(ours, theirs) > 0.99


def test_speakers_differ(encoder: SpeakerEncoder, speech: Speech, other_speech: Speech) -> None:
    a = encoder.embed_clip(prepare_clip(to_bytes(*speech)))
    other = encoder.embed_clip(prepare_clip(to_bytes(*other_speech)))
    second = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0920.wav"
    if not second.exists():
        pytest.skip("pocketsphinx-testdata not installed (apt-get install pocketsphinx-testdata)")
    same = encoder.embed_clip(prepare_clip(second.read_bytes()))
    assert cosine(a, same) > 0.8  # same reader, different sentence
    assert cosine(a, other) < 0.75  # a different speaker
    assert cosine(a, same) - cosine(a, other) > 0.15


def test_embedding_ignores_upload_level(encoder: SpeakerEncoder, speech: Speech) -> None:
    audio, rate = speech
    loud = encoder.embed_clip(prepare_clip(to_bytes(audio, rate)))
    quiet = encoder.embed_clip(prepare_clip(to_bytes(audio * 0.05, rate)))
    assert cosine(loud, quiet) > 0.999


def test_shorten_pauses() -> None:
    active = np.array([True] * 100 + [False] * 300 + [True] * 100)
    audio = np.ones(len(active) * 160, dtype=np.float32)
    out = shorten_pauses(audio, active, keep_s=0.1)
    assert len(out) == (100 + 10 + 10 + 100) * 160
    assert len(shorten_pauses(audio, np.ones(len(active), dtype=bool))) == len(audio)


@pytest.mark.slow
def test_committed_onnx_equals_fresh_export(tmp_path: Path) -> None:
    _quiet_import("torch")
    from emostream.networks.ge2e import export_onnx, load_ge2e

    try:
        model = load_ge2e()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_onnx(model, tmp_path / "ge2e.onnx")
    mels = np.random.default_rng(1).gamma(0.5, 2.0, size=(2, 200, 40)).astype("f4")
    fresh = SpeakerEncoder(tmp_path / "ge2e.onnx").embed_mels(mels)
    committed = SpeakerEncoder(default_model_path()).embed_mels(mels)
    assert np.abs(fresh - committed).max() < 1e-6
