"""A segment rendered with the words around it, cut to its own frames (voices.joins)."""

from pathlib import Path

import numpy as np
import pytest

from emostream.text.context import Segment
from emostream.text.phonemes import G2P
from emostream.voices.base import Controls, VoiceInfo
from emostream.voices.joins import CONTEXT_FRAMES, Span, cut, locate


@pytest.fixture(scope="module")
def g2p() -> G2P:
    return G2P()


def kept(g2p: G2P, segment: Segment) -> tuple[str, Span | None]:
    seq, span = locate(g2p, segment)
    symbols = seq.symbols if span is None else seq.symbols[span.lo : span.hi]
    return "".join(s for s in symbols if s not in "ˈˌ"), span


def test_the_span_is_the_segments_units_and_the_word_space_after(g2p: G2P) -> None:
    alone = "".join(s for s in g2p("I think the easiest way").symbols[:-1] if s not in "ˈˌ")
    units, span = kept(g2p, Segment("I think the easiest way", "", " to fix"))
    assert span is not None and span.lo == 0
    assert units == alone + " "  # from ^ to the space before "to"


def test_left_context_starts_the_span_at_the_segments_first_unit(g2p: G2P) -> None:
    units, span = kept(g2p, Segment("to fix this.", "easiest way ", ""))
    assert span is not None and span.lo > 0
    seq, _ = locate(g2p, Segment("to fix this.", "easiest way ", ""))
    assert span.hi == len(seq.units) and units.startswith("tə f")  # to the $: no right context


def test_mandarin_context(g2p: G2P) -> None:
    units, span = kept(g2p, Segment("我觉得最简单的", "", "办法"))
    assert span is not None and units.endswith("zh:dzh:e ")


def test_a_side_that_cannot_be_found_is_rendered_without_its_context(g2p: G2P) -> None:
    """espeak reads "not a" as one run (nɑːɾə): no word space to cut at, so no right context."""
    seq, span = locate(g2p, Segment("It's not", "", " a big deal"))
    assert span is None and seq.text == "It's not"
    seq, span = locate(g2p, Segment("a big deal.", "It's not ", ""))
    assert span is None and seq.text == "a big deal."


def test_no_context_is_the_plain_render(g2p: G2P) -> None:
    seq, span = locate(g2p, Segment("Hello there."))
    assert span is None and seq.symbols == g2p("Hello there.").symbols


def test_cut_keeps_the_span_and_context_frames_either_side() -> None:
    counts = np.array([5, 40, 3, 50], dtype=np.int64)  # ^, the segment, its space, the context
    frames = np.arange(98, dtype=np.float32)[None, :].repeat(2, axis=0)
    latent = cut(frames, counts, Span(1, 3))
    assert latent.frames[0].tolist() == list(range(5, 48))
    assert latent.unit_frames.tolist() == [40, 3]
    assert latent.before is not None and latent.before[0].tolist() == list(range(5))
    assert latent.after is not None and latent.after.shape[1] == CONTEXT_FRAMES
    assert latent.after[0, 0] == 48
    plain = cut(frames, counts, Span(0, 4))
    assert plain.before is None and plain.after is None and plain.num_frames == 98


def test_shipped_voice_says_a_cut_segment_as_inside_its_sentence() -> None:
    """With the model: the last word of a segment cut before "to" is as long as inside the
    whole sentence (no final lengthening, no end silence), and its edges carry context."""
    from emostream.networks.acoustic_onnx import OnnxAcousticModel
    from emostream.voices.acoustic import CHECKPOINT, SPEAKERS, AcousticVoice

    models = Path(__file__).resolve().parents[2] / "models"
    model = OnnxAcousticModel(models / CHECKPOINT, threads=1)
    with np.load(models / SPEAKERS) as table:
        speaker = table["af_heart"].astype(np.float32)
    voice = AcousticVoice(VoiceInfo("af_heart", "acoustic", "en", 22050, ()), model, speaker, G2P())
    text = "I think the easiest way to fix this is to restart the router."
    whole = voice.acoustic(text, Controls())
    alone = voice.acoustic("I think the easiest way", Controls())
    first = voice.acoustic(Segment("I think the easiest way", "", " to fix").wire(), Controls())
    rest = voice.acoustic(
        Segment("to fix this is to restart the router.", "easiest way ", "").wire(), Controls()
    )
    assert first.after is not None and first.before is None and first.units[-1] == " "
    assert rest.before is not None and rest.after is None and rest.units[0] == "t"
    # "I think the easiest way" spoken inside the sentence, not as an utterance of its own
    assert first.num_frames < alone.num_frames - 15
    assert abs(first.num_frames + rest.num_frames - whole.num_frames) < 0.05 * whole.num_frames


def test_a_frame_map_applies_to_the_context_frames_too() -> None:
    """A refined clone's timbre correction (Latent.mapped) reaches the context frames the
    decoder reads beside a cut, not only the segment's own."""
    from emostream.voices.base import Latent

    latent = Latent(np.ones((2, 3), np.float32), before=np.zeros((2, 4), np.float32))
    out = latent.mapped(lambda f: f * 2 + 1)
    assert out.frames.tolist() == [[3.0] * 3] * 2
    assert out.before is not None and out.before.tolist() == [[1.0] * 4] * 2
    assert out.after is None
