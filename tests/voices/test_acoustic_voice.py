from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from emostream.networks.acoustic import AcousticModel
from emostream.text.phonemes import G2P
from emostream.voices.acoustic import AcousticRequest, AcousticVoice, prosody_for
from emostream.voices.base import Controls, Latent, SpeakerVoice, Voice, VoiceInfo, stage_of


def test_prosody_for_scales_with_intensity() -> None:
    full = prosody_for(Controls(emotion="sad", intensity=1.0))
    half = prosody_for(Controls(emotion="sad", intensity=0.5))
    assert full.pitch_shift < half.pitch_shift < 0 and full.rate < half.rate < 1.0
    assert prosody_for(Controls(speed=1.5)).rate == 1.5


def test_voice_protocol_and_frames() -> None:
    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("test", "acoustic", "en", 22050, ("speed", "pitch_shift", "energy", "emotion"))
    decoded: list[int] = []

    def dec(frames: np.ndarray) -> np.ndarray:
        decoded.append(frames.shape[1])
        return np.zeros(frames.shape[1] * 256, np.float32)

    v = AcousticVoice(
        info,
        model,
        np.random.default_rng(0).standard_normal(256).astype(np.float32),
        G2P(),
        decoder=dec,
    )
    assert isinstance(v, Voice) and isinstance(v, SpeakerVoice)
    lat = v.acoustic("Hello there.", Controls())
    assert lat.frames.shape[0] == 80 and lat.num_frames == int(lat.unit_frames.sum())
    assert len(lat.units) == len(lat.unit_frames)
    assert v.decode(lat.frames).shape == (lat.num_frames * 256,)


def test_batched_inference_equals_one_at_a_time() -> None:
    """infer_batch pads to the longest request; every layer masks the padding, so each result
    is what that request gives alone (the GPU runner batches across streams on this)."""
    from emostream.voices.acoustic import infer_batch

    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("t", "acoustic", "en", 22050, ("speed", "emotion"))
    rng = np.random.default_rng(1)
    voices = [
        AcousticVoice(info, model, rng.standard_normal(256).astype(np.float32), G2P())
        for _ in range(3)
    ]
    texts = ["Hi.", "A somewhat longer sentence, with a pause in it.", "Good morning, everyone."]
    controls = [Controls(), Controls(speed=1.3, emotion="happy"), Controls(pitch_shift=-2.0)]
    requests = [v.prepare(t, c) for v, t, c in zip(voices, texts, controls, strict=True)]
    together = infer_batch(model, requests)
    for request, batched in zip(requests, together, strict=True):
        alone = infer_batch(model, [request])[0]
        np.testing.assert_array_equal(batched.unit_frames, alone.unit_frames)
        assert batched.frames.shape == alone.frames.shape
        np.testing.assert_allclose(batched.frames, alone.frames, atol=1e-4)


def _frames(levels: list[float]) -> np.ndarray:
    """[80, T] log-mel frames whose loudest bin is each level (silence at the floor)."""
    out = np.full((80, len(levels)), -11.5, np.float32)
    out[10] = levels
    return out


def test_trim_silence_cuts_the_teachers_lead_and_tail() -> None:
    from emostream.voices.acoustic import LEAD_FRAMES, TAIL_FRAMES, trim_silence

    # ^ = 40 quiet frames, three phones of 10 loud frames, a last one of 40 (10 loud, 30
    # quiet), punctuation 30 quiet, $ 2 quiet: 142 frames.
    levels = [-11.5] * 40 + [0.0] * 40 + [-11.5] * 62
    durations = np.array([40, 10, 10, 10, 40, 30, 2], np.int64)
    frames, d = trim_silence(_frames(levels), durations)
    assert int(d.sum()) == frames.shape[1] == LEAD_FRAMES + 40 + TAIL_FRAMES
    assert d[0] == LEAD_FRAMES and list(d[1:4]) == [10, 10, 10]
    assert d[4] == 30 and d[5] == 0 and d[6] == 0  # shortened from the end backwards
    assert frames[10, LEAD_FRAMES] == 0.0 and frames[10, LEAD_FRAMES - 1] == -11.5
    assert (frames[10, -TAIL_FRAMES:] == -11.5).all()
    # No ^ at the start (leading=False): the opening frames stay; a longer tail when asked.
    frames, d = trim_silence(_frames(levels), durations, leading=False, tail_frames=50)
    assert d[0] == 40 and frames.shape[1] == int(d.sum()) == 40 + 40 + 50
    # Nothing to cut: a segment that is all speech comes back whole.
    loud = np.array([0.0] * 12, np.float32)
    frames, d = trim_silence(_frames(list(loud)), np.array([2, 5, 5], np.int64), lead_frames=2)
    assert frames.shape[1] == 12 and list(d) == [2, 5, 5]


def test_trim_silence_keeps_an_onset_that_starts_inside_the_lead() -> None:
    """The model often starts the first phone's sound in ``^``'s last frames (an initial /s/
    or /n/); the lead is cut ``lead_frames`` before that sound, not at the unit boundary
    (which took the onset: "Sick." was heard as "Take")."""
    from emostream.voices.acoustic import LEAD_FRAMES, TAIL_FRAMES, trim_silence

    # ^ = 40 frames of which the last 8 already sound, two phones of 10 loud frames, then quiet
    levels = [-11.5] * 32 + [-3.0] * 8 + [0.0] * 20 + [-11.5] * 40
    durations = np.array([40, 10, 10, 38, 2], np.int64)
    frames, d = trim_silence(_frames(levels), durations)
    assert d[0] == LEAD_FRAMES + 8  # ^ keeps its sounding frames and LEAD_FRAMES before them
    assert (frames[10, :LEAD_FRAMES] == -11.5).all() and frames[10, LEAD_FRAMES] == -3.0
    assert list(d[1:3]) == [10, 10] and int(d.sum()) == frames.shape[1]
    assert frames.shape[1] == LEAD_FRAMES + 28 + TAIL_FRAMES
    # A sound that starts after the boundary: as before, LEAD_FRAMES before the first phone.
    levels = [-11.5] * 45 + [0.0] * 15 + [-11.5] * 40
    frames, d = trim_silence(_frames(levels), durations)
    assert d[0] == LEAD_FRAMES and (frames[10, : LEAD_FRAMES + 5] == -11.5).all()


def test_shipped_voice_keeps_the_first_consonant() -> None:
    """Short replies that open with a consonant (own set, lab/short_replies.py): the served
    latent opens with quiet frames, not in the middle of the first sound."""
    from pathlib import Path

    from emostream.networks.acoustic_onnx import OnnxAcousticModel
    from emostream.voices.acoustic import CHECKPOINT, LEAD_FRAMES, QUIET_NATS, SPEAKERS

    models = Path(__file__).resolve().parents[2] / "models"
    model = OnnxAcousticModel(models / CHECKPOINT, threads=1)
    info = VoiceInfo("v", "acoustic", "en", 22050, ("speed",))
    with np.load(models / SPEAKERS) as table:
        for name in ("af_heart", "bm_george"):
            voice = AcousticVoice(info, model, table[name].astype(np.float32), G2P())
            for text in ("Sick.", "Same.", "Nope.", "Facts."):
                peak = voice.acoustic(text, Controls()).frames.max(axis=0)
                quiet = peak < np.percentile(peak, 95) - QUIET_NATS
                assert quiet[:LEAD_FRAMES].all(), (name, text)


def test_shipped_voice_starts_and_ends_near_its_speech() -> None:
    """The shipped model opens each segment with ~0.3-0.5 s of silence and closes it with more
    (learned from the teacher); the served latent keeps about LEAD_FRAMES before its first
    sound and TAIL_FRAMES after the last loud frame."""
    from pathlib import Path

    from emostream.networks.acoustic_onnx import OnnxAcousticModel
    from emostream.voices.acoustic import CHECKPOINT, LEAD_FRAMES, SPEAKERS, TAIL_FRAMES

    models = Path(__file__).resolve().parents[2] / "models"
    model = OnnxAcousticModel(models / CHECKPOINT, threads=1)
    with np.load(models / SPEAKERS) as table:
        speaker = table["af_heart"].astype(np.float32)
    info = VoiceInfo("af_heart", "acoustic", "en", 22050, ("speed",))
    voice = AcousticVoice(info, model, speaker, G2P())
    lat = voice.acoustic("Thanks for the follow, see you tomorrow!", Controls())
    assert lat.unit_frames[0] >= LEAD_FRAMES and lat.num_frames == int(lat.unit_frames.sum())
    peak = lat.frames.max(axis=0)
    loud = np.flatnonzero(peak >= np.percentile(peak, 95) - 5.0)
    assert LEAD_FRAMES - 1 <= loud[0] <= LEAD_FRAMES + 3  # speech within ~35 ms of the lead
    assert lat.num_frames - 1 - loud[-1] == TAIL_FRAMES


def test_clone_embedding_moves_away_from_the_centre_at_the_same_norm() -> None:
    import numpy as np

    from emostream.voices.acoustic import clone_embedding

    rng = np.random.default_rng(0)
    centre = rng.standard_normal(256).astype(np.float32)
    centre /= np.linalg.norm(centre) / 0.8
    emb = centre + 0.3 * rng.standard_normal(256).astype(np.float32)
    emb /= np.linalg.norm(emb)
    assert clone_embedding(emb, centre, 1.0) is emb  # as measured
    moved = clone_embedding(emb, centre, 1.5)
    assert moved.dtype == np.float32 and abs(np.linalg.norm(moved) - 1.0) < 1e-5

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    # further from the centre's direction, same direction of departure
    assert cos(moved, centre) < cos(emb, centre)
    assert cos(moved - centre, emb - centre) > 0.95  # (the renormalising bends it a little)


def test_family_clone_applies_the_gain_and_stock_voices_do_not() -> None:
    import numpy as np

    from emostream.voices.acoustic import AcousticFamily, clone_embedding, find_models_dir

    models = find_models_dir()
    assert models is not None
    family = AcousticFamily(models, decoder=None, clone_gain=1.4)
    emb = next(iter(family.speakers.values()))
    voice = family.clone("c1", emb, description="a clone")
    want = clone_embedding(emb, family.centre, 1.4)
    assert np.allclose(voice.speaker, want) and not np.allclose(voice.speaker, emb)
    stock = {v.info.id: v for v in family.stock_voices()}
    name = next(iter(family.speakers))
    assert np.allclose(stock[name].speaker, family.speakers[name])  # stock: unmoved


def test_the_acoustic_stage_names_the_model_it_runs() -> None:
    """What the GPU engine captures in CUDA graphs (engine.gpu.stages): the stage's model."""
    from emostream.voices.acoustic import AcousticFamily, find_models_dir

    models = find_models_dir()
    assert models is not None
    family = AcousticFamily(models, decoder=None, vocoder_key="lite")
    voice = next(iter(family.stock_voices()))
    acoustic, decode = stage_of(voice, "acoustic"), stage_of(voice, "decode")
    assert acoustic is not None and acoustic.model is family.model is voice.model
    assert decode is not None and decode.model is None


def test_a_segment_read_out_long_is_made_in_bounded_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """295 written characters of digits: 1,474 units in one call (the decoder's attention over
    6,180 frames took 1.6 GB; espeak also dropped every number past the 20th). Now at most
    MAX_PIECE_UNITS units a call, and every number is spoken."""
    from emostream.voices import acoustic
    from emostream.voices.acoustic import MAX_PIECE_UNITS

    calls: list[int] = []
    infer = acoustic.infer_batch

    def recording(model: Any, requests: Sequence[AcousticRequest], **kw: Any) -> list[Latent]:
        calls.extend(len(r.seq.units) for r in requests)
        return infer(model, requests, **kw)

    monkeypatch.setattr(acoustic, "infer_batch", recording)
    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.0)
    info = VoiceInfo("t", "acoustic", "en", 22050, ("speed",))
    g2p = G2P()
    v = AcousticVoice(info, model, np.zeros(256, np.float32), g2p)
    text = "1234567 " * 37
    latent = v.acoustic(text, Controls())
    assert len(calls) >= 3 and max(calls) <= MAX_PIECE_UNITS
    assert len(latent.units) == len(latent.unit_frames) == sum(calls)
    assert int(latent.unit_frames.sum()) == latent.num_frames
    one = len(g2p("1234567").units) - 2  # without ^ and $
    assert sum(calls) >= 37 * one  # every number read
    calls.clear()
    v.acoustic("Hello there, this is short.", Controls())
    assert len(calls) == 1  # ordinary text: one call
    calls.clear()
    v.acoustic(text, Controls(speed=0.5))
    assert max(calls) <= MAX_PIECE_UNITS // 2


def test_energy_is_effort_after_the_model_not_its_input() -> None:
    """The model's energy input stays at 1; the request's effort (energy × the profile's
    energy at its intensity) goes to the mels' balance and the audio's gain."""
    from emostream.text.emotion import PROFILES
    from emostream.voices.acoustic import effort_for

    assert prosody_for(Controls(energy=1.4)).energy == 1.0
    assert prosody_for(Controls(emotion="angry")).energy == 1.0
    assert effort_for(Controls()) == 0.0
    assert effort_for(Controls(energy=1.4)) == pytest.approx(20 * np.log10(1.4))
    angry = 20 * np.log10(PROFILES["angry"].energy)
    assert effort_for(Controls(emotion="angry")) == pytest.approx(angry)
    # neutral + (label - neutral) x intensity, in dB
    assert effort_for(Controls(emotion="angry", intensity=0.5)) == pytest.approx(angry / 2)
    assert effort_for(Controls(emotion="sad", energy=2.0)) == pytest.approx(
        20 * np.log10(PROFILES["sad"].energy * 2.0)
    )


def test_effort_reaches_the_mels_and_the_gain() -> None:
    from emostream.voices.effort import apply_effort, effort_offset

    torch.manual_seed(0)
    model = AcousticModel().eval()
    torch.nn.init.constant_(model.duration.out.bias, 1.5)
    info = VoiceInfo("t", "acoustic", "en", 22050, ("energy", "emotion"))
    v = AcousticVoice(info, model, np.random.default_rng(0).standard_normal(256).astype(np.float32),
                      G2P())  # fmt: skip
    from emostream.voices.base import LevelledVoice

    assert isinstance(v, LevelledVoice)
    assert v.output_gain(Controls()) == 1.0
    assert v.output_gain(Controls(energy=1.4)) == pytest.approx(1.4)
    text = "Hello there, how are you?"
    plain = v.acoustic(text, Controls())
    louder = v.acoustic(text, Controls(energy=2.0))
    assert v.prepare(text, Controls(energy=2.0)).effort_db == pytest.approx(20 * np.log10(2.0))
    np.testing.assert_array_equal(plain.unit_frames, louder.unit_frames)
    want = apply_effort(plain.frames, effort_offset(plain.frames, 20 * np.log10(2.0)))
    np.testing.assert_allclose(louder.frames, want, atol=1e-4)
    assert not np.allclose(louder.frames, plain.frames, atol=1e-2)
