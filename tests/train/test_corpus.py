"""The corpus pipeline end to end at tiny scale: G2P → Kokoro (CPU) → shard → manifest."""

from pathlib import Path

import numpy as np
import pytest

from emostream.train import corpus

DATA = Path(__file__).resolve().parents[1] / "data"


def test_unit_mel_frames_sum_and_pads() -> None:
    frames = np.array([10, 2, 3, 4, 1, 6])  # pad, 4 tokens, pad
    spans = [(0, 0), (0, 1), (1, 3), (3, 4), (4, 4)]  # ^, a, bc, d, $
    d = corpus.unit_mel_frames(frames, spans, num_frames=52)
    assert d.sum() == 52 and len(d) == 5
    assert d[0] == round(10 * corpus.FRAMES_PER_KOKORO_FRAME)


def test_quantize_roundtrip() -> None:
    mel = np.linspace(corpus.MEL_LO, corpus.MEL_HI, 1000, dtype=np.float32)
    back = corpus.dequantize_mel(corpus.quantize_mel(mel))
    assert np.abs(back - mel).max() <= (corpus.MEL_HI - corpus.MEL_LO) / 255 / 2 + 1e-5


def test_make_speakers_caps_blends() -> None:
    names = [f"af_{i}" for i in range(5)] + [f"zf_{i}" for i in range(3)]
    spk = corpus.make_speakers(names, blends_en=10, blends_zh=4, seed=1)
    blends = [s for s in spk if "blend" in s.name]
    assert len(blends) == 14 and all(max(s.weights.values()) <= 0.7 + 1e-3 for s in blends)
    assert all(len(s.weights) >= 2 for s in blends)


@pytest.mark.slow
def test_tiny_corpus_with_kokoro(tmp_path: Path) -> None:
    pytest.importorskip("kokoro_onnx")
    from emostream.train.teacher import assemble_model

    model = assemble_model(tmp_path / "kokoro.onnx")
    with np.load(DATA / "kokoro_styles_rows0-95.npz") as z:
        voices = {k: z[k] for k in z.files}
    speakers = [
        corpus.Speaker("af_heart", "en", {"af_heart": 1.0}),
        corpus.Speaker("zf_xiaobei", "zh", {"zf_xiaobei": 1.0}),
    ]
    jobs = corpus.plan({"en": ["Hello there."], "zh": ["你好。"]}, speakers)
    styles = corpus.job_styles(jobs, speakers, voices)
    out = tmp_path / "corpus"
    summary = corpus.synthesize(
        jobs,
        speakers,
        model=model,
        voices=None,
        styles=styles,
        out_dir=out,
        workers=1,
        budget_s=300,
    )
    assert sorted(summary["utterances"]) == ["en00000", "zh00000"]
    utts = list(corpus.read_shard(out / summary["shards"][0]))
    for u in utts:
        assert int(u.durations.sum()) == u.mel.shape[0] > 20
        assert len(u.durations) == len(u.ids) and (u.durations[1:-1] > 0).mean() > 0.8
        assert float(np.median(u.f0[u.f0 > 60])) > 80
    man = corpus.write_manifest(out, speakers, {})
    assert man["utterances"] == 2 and set(man["hours_per_language"]) == {"en", "zh"}
