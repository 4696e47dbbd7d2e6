"""The in-lease corpus renderer on CPU: plan → Kokoro (torch) → shards with GE2E, manifest."""

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from emostream.networks.mel import mel_spectrogram
from train import corpus

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.slow
def test_render_tiny_plan_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("kokoro_onnx")
    pytest.importorskip("transformers")
    from train.render_gpu import render
    from train.teacher import assemble_model

    model = assemble_model(tmp_path / "kokoro.onnx")
    plan = tmp_path / "plan"
    plan.mkdir()
    with np.load(DATA / "kokoro_styles_rows0-95.npz") as z:
        np.savez(plan / "voices.npz", **{k: z[k] for k in z.files})
    speakers = [
        corpus.Speaker("af_heart", "en", {"af_heart": 1.0}),
        corpus.Speaker("mix", "zh", {"zf_xiaobei": 0.5, "af_heart": 0.5}),
    ]
    (plan / "speakers.json").write_text(json.dumps([asdict(s) for s in speakers]))
    jobs = corpus.plan({"en": ["Hello there."], "zh": ["你好，朋友。"]}, speakers)
    corpus.save_jobs(jobs, plan / "jobs.jsonl.xz")
    summary = render(plan, model, tmp_path / "out", workers=1, batch=2, device="cpu",
                     keep_audio=True)  # fmt: skip
    assert summary["utterances"] == 2 and summary["x_real_time"] > 0
    shards = sorted((tmp_path / "out").glob("*.npz.xz"))
    utts = [u for s in shards for u in corpus.read_shard(s)]
    assert sorted(u.utt for u in utts) == ["en00000", "zh00000"]
    kept = {k: v for s in shards for k, v in corpus.read_audio(s).items()}
    for u in utts:
        assert int(u.durations.sum()) == u.mel.shape[0] > 20
        assert not np.isnan(u.ge2e.astype(np.float32)).any()
        # the kept audio is what the mel was computed from (frame k = samples k*hop..)
        wav = kept[u.utt].astype(np.float32) / 32767
        assert len(wav) == u.mel.shape[0] * corpus.MEL.hop_length
        mel = mel_spectrogram(wav, corpus.MEL).T
        assert np.abs(mel - corpus.dequantize_mel(u.mel)).mean() < 0.1
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["utterances"] == 2 and man["render"]["utterances"] == 2
