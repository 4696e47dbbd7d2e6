import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from train import corpus
from train.train import TrainConfig, train, unit_average

V1 = Path(__file__).resolve().parents[2] / "models" / "corpus" / "v1"
TINY = {
    "d_model": 64,
    "n_heads": 2,
    "enc_layers": 1,
    "dec_layers": 1,
    "ff_dim": 128,
    "var_filters": 64,
}


def test_unit_average() -> None:
    v = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    d = np.array([2, 0, 3])
    assert unit_average(v, d).tolist() == [2.0, 0.0, 7.0]
    m = np.array([True, False, False, False, True])
    assert unit_average(v, d, m).tolist() == [1.0, 0.0, 9.0]


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dozen real teacher utterances from the committed corpus, re-packed."""
    shard = max(V1.glob("*.npz.xz"))
    recs = []
    for u in itertools.islice(corpus.read_shard(shard), 12):
        assert int(u.durations.sum()) == u.mel.shape[0]
        recs.append(corpus.Record.from_utterance(u))
    out = tmp_path_factory.mktemp("tiny")
    corpus.write_shard(recs, out / "shard-000.npz.xz", preset=1)
    shutil.copy(V1 / "speakers.npz", out / "speakers.npz")
    return out


def test_trains_and_resumes(tiny_corpus: Path, tmp_path: Path) -> None:
    tc = TrainConfig(frames_per_batch=1500, eval_every=2, save_every=100, warmup=10)
    first = train(tiny_corpus, tmp_path, max_steps=3, tc=tc, model_config=TINY, device="cpu")
    assert first["step"] == 3 and (tmp_path / "last.pt").exists()
    assert all(math.isfinite(v) for v in first["eval"].values())
    second = train(tiny_corpus, tmp_path, max_steps=6, tc=tc, device="cpu")
    assert second["step"] == 6  # resumed, not restarted
    assert json.loads((tmp_path / "summary-0000006.json").read_text())["step"] == 6
    assert (tmp_path / "model_fp16.pt").stat().st_size < 5_000_000


def test_warm_starts_from_a_shipped_onnx_file(tiny_corpus: Path, tmp_path: Path) -> None:
    """A version ships as ONNX only; the next training window starts from that file."""
    import torch

    from emostream.networks.acoustic import AcousticModel

    tc = TrainConfig(frames_per_batch=1500, eval_every=2, save_every=100, warmup=10)
    first = train(tiny_corpus, tmp_path / "a", max_steps=2, tc=tc, model_config=TINY, device="cpu")
    shipped = AcousticModel.load(tmp_path / "a" / "model_fp16.pt")
    shipped.export_onnx(tmp_path / "v.onnx", half=True, extra={"step": first["step"]})
    again = AcousticModel.load(tmp_path / "v.onnx")
    for k, v in shipped.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k
    warm = train(tiny_corpus, tmp_path / "b", max_steps=4, tc=tc, device="cpu",
                 init=tmp_path / "v.onnx")  # fmt: skip
    assert warm["step"] == 4  # continued from step 2, not from 0


def test_cooldown_brings_the_rate_down_at_the_end(tiny_corpus: Path, tmp_path: Path) -> None:
    from train.train import cooldown_factor, lr_at

    tc = TrainConfig(frames_per_batch=1500, eval_every=100, save_every=100, warmup=10,
                     cooldown=0.5)  # fmt: skip
    assert [cooldown_factor(p, tc) for p in (0.0, 0.5, 0.75, 1.0)] == [1.0, 1.0, 0.5, 0.02]
    assert cooldown_factor(0.99, TrainConfig()) == 1.0  # off unless asked for
    run = train(tiny_corpus, tmp_path, max_steps=4, tc=tc, model_config=TINY, device="cpu")
    # The last of 4 steps runs at 3/4 of the way: half the scheduled rate.
    assert run["last_lr"] == pytest.approx(lr_at(3, tc) * 0.5, rel=1e-6)


def test_validation_speakers_pick_the_best_step(tiny_corpus: Path, tmp_path: Path) -> None:
    """``val_corpus``: scored at every evaluation beside the held-out split; the model at
    its lowest validation mel L1 is kept as best_fp16.pt."""
    import torch

    shard = min(V1.glob("*.npz.xz"))  # other utterances than tiny_corpus's (the last shard)
    val_dir = tmp_path / "val"
    recs = [corpus.Record.from_utterance(u) for u in itertools.islice(corpus.read_shard(shard), 4)]
    corpus.write_shard(recs, val_dir / "val-000.npz.xz", preset=1)
    shutil.copy(V1 / "speakers.npz", val_dir / "speakers.npz")
    tc = TrainConfig(frames_per_batch=1500, eval_every=2, save_every=100, warmup=10)
    run = train(tiny_corpus, tmp_path / "run", max_steps=6, tc=tc, model_config=TINY,
                device="cpu", val_corpus=val_dir)  # fmt: skip
    assert run["val_utterances"] == 4
    scored = [h for h in run["history"] if "val_mel_l1" in h]
    assert [h["step"] for h in scored] == [2, 4, 6, 6]  # every evaluation, and the last
    low = min(scored, key=lambda h: h["val_mel_l1"])
    assert run["best"]["step"] == low["step"]
    assert run["best"]["val_mel_l1"] == pytest.approx(low["val_mel_l1"])
    kept = torch.load(tmp_path / "run" / "best_fp16.pt", map_location="cpu", weights_only=False)
    assert kept["step"] == low["step"] and kept["val"]["mel_l1"] == pytest.approx(low["val_mel_l1"])
    # Without validation speakers nothing is kept and nothing changes.
    plain = train(tiny_corpus, tmp_path / "plain", max_steps=2, tc=tc, model_config=TINY,
                  device="cpu")  # fmt: skip
    assert plain["best"] == {} and not (tmp_path / "plain" / "best_fp16.pt").exists()
    assert all("val_mel_l1" not in h for h in plain["history"])


def test_warm_start_grows_contours_and_learns_them(tiny_corpus: Path, tmp_path: Path) -> None:
    """A window can add pitch shapes to a shipped mean-only model: they start at zero and
    their loss is trained on the teacher's fitted slopes and bends."""
    import torch

    from emostream.networks.acoustic import AcousticModel

    tc = TrainConfig(frames_per_batch=1500, eval_every=2, save_every=100, warmup=10)
    train(tiny_corpus, tmp_path / "a", max_steps=2, tc=tc, model_config=TINY, device="cpu")
    AcousticModel.load(tmp_path / "a" / "model_fp16.pt").export_onnx(tmp_path / "v.onnx")
    run = train(tiny_corpus, tmp_path / "b", max_steps=5, tc=tc, device="cpu",
                init=tmp_path / "v.onnx", contour_k=2)  # fmt: skip
    assert run["step"] == 5 and math.isfinite(run["eval"]["contour"]) and run["eval"]["contour"] > 0
    grown = AcousticModel.load(tmp_path / "b" / "model_fp16.pt")
    assert grown.config.contour == 2 and grown.contour_proj.weight.abs().sum() > 0
    assert torch.isfinite(grown.contour.out.weight).all()
    again = train(tiny_corpus, tmp_path / "b", max_steps=6, tc=tc, device="cpu")
    assert again["step"] == 6  # resumes as a contour model (its config in last.pt)


def test_frozen_prosody_keeps_the_predictors_and_trains_the_decoder(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    """``--freeze prosody``: a warm start keeps the encoder and every predictor bit for bit
    (so durations and pitch stay the shipped model's) while the decoder learns."""
    import torch

    from emostream.networks.acoustic import AcousticModel
    from train.train import PROSODY_MODULES, freeze

    tc = TrainConfig(frames_per_batch=1500, eval_every=100, save_every=100, warmup=2)
    train(tiny_corpus, tmp_path / "a", max_steps=2, tc=tc, model_config=TINY, device="cpu")
    start = AcousticModel.load(tmp_path / "a" / "model_fp16.pt")
    tc = TrainConfig(frames_per_batch=1500, eval_every=100, save_every=100, warmup=2,
                     freeze=("prosody",))  # fmt: skip
    train(tiny_corpus, tmp_path / "b", max_steps=5, tc=tc, device="cpu",
          init=tmp_path / "a" / "model_fp16.pt")  # fmt: skip
    after = AcousticModel.load(tmp_path / "b" / "model_fp16.pt")
    old, new = start.state_dict(), after.state_dict()
    for k in old:
        if k.split(".")[0] in PROSODY_MODULES:
            assert torch.equal(old[k], new[k]), k
    assert not torch.equal(old["mel_out.weight"], new["mel_out.weight"])
    assert any(not torch.equal(old[k], new[k]) for k in old if k.startswith("decoder."))
    with pytest.raises(ValueError, match="no such module"):
        freeze(start, ("prosody", "nonsense"))


def test_mel_discriminator_trains_beside_and_resumes(tiny_corpus: Path, tmp_path: Path) -> None:
    """``--mel-gan``: a discriminator on mel windows joins the loss, its state is saved in
    ``last.pt`` and a resumed run picks it up."""
    import torch

    tc = TrainConfig(frames_per_batch=1500, eval_every=100, save_every=100, warmup=2,
                     mel_gan=0.5, mel_gan_window=16)  # fmt: skip
    first = train(tiny_corpus, tmp_path, max_steps=3, tc=tc, model_config=TINY, device="cpu")
    state = torch.load(tmp_path / "last.pt", weights_only=False)
    assert "disc" in state and "opt_d" in state and first["step"] == 3
    d0 = {k: v.clone() for k, v in state["disc"].items()}
    again = train(tiny_corpus, tmp_path, max_steps=5, tc=tc, device="cpu")
    d1 = torch.load(tmp_path / "last.pt", weights_only=False)["disc"]
    assert again["step"] == 5 and any(not torch.equal(d0[k], d1[k]) for k in d0)
    assert math.isfinite(again["eval"]["mel_l1"])


def test_mel_windows_cut_the_same_place_inside_each_utterance() -> None:
    import torch

    from train.mel_gan import MelDiscriminator, windows

    real = torch.arange(2 * 30 * 80, dtype=torch.float32).view(2, 30, 80)
    fake = real + 0.5
    r, f = windows(real, fake, torch.tensor([30, 10]), 12, torch.Generator().manual_seed(0))
    assert r.shape == (1, 12, 80) and torch.equal(f, r + 0.5)  # the 10-frame one left out
    start = int(r[0, 0, 0]) // 80
    assert 0 <= start <= 18 and torch.equal(r[0], real[0, start : start + 12])
    logits, feats = MelDiscriminator()(r)
    assert logits.shape[0] == 1 and len(feats) == 4


def test_losses_report_the_pace_and_can_train_the_utterance_length(tiny_corpus: Path) -> None:
    """``pace`` is the predicted frames over the teacher's; ``total_dur`` (the squared log
    ratio of utterance lengths) joins the loss only with a weight."""
    import torch

    from emostream.networks.acoustic import AcousticConfig, AcousticModel
    from train.train import collate, load_corpus, losses

    items = load_corpus(tiny_corpus)[:4]
    torch.manual_seed(0)
    model = AcousticModel(AcousticConfig(**TINY)).eval()  # type: ignore[arg-type]
    torch.nn.init.zeros_(model.duration.out.weight)
    torch.nn.init.constant_(model.duration.out.bias, math.log(3.0))  # 2 frames per unit
    batch = collate(items, model.config, torch.device("cpu"))
    with torch.no_grad():
        plain = losses(model, batch)
        weighted = losses(model, batch, total_dur=2.0)
    units = sum(len(it.durations) for it in items)
    frames = sum(int(it.durations.sum()) for it in items)
    assert float(plain["pace"]) == pytest.approx(2.0 * units / frames, rel=1e-4)
    lengths = [(2.0 * len(it.durations), float(it.durations.sum())) for it in items]
    want = np.mean([math.log((p + 1) / (t + 1)) ** 2 for p, t in lengths])
    assert float(plain["total_dur"]) == pytest.approx(want, rel=1e-4)
    extra = float(weighted["loss"]) - float(plain["loss"])
    assert extra == pytest.approx(2.0 * want, rel=1e-3)


def test_utterance_length_loss_trains_and_is_evaluated(tiny_corpus: Path, tmp_path: Path) -> None:
    tc = TrainConfig(frames_per_batch=1500, eval_every=2, save_every=100, warmup=2, total_dur=0.5)
    out = train(tiny_corpus, tmp_path, max_steps=2, tc=tc, model_config=TINY, device="cpu")
    assert {"pace", "total_dur"} <= set(out["eval"]) and out["eval"]["pace"] > 0
