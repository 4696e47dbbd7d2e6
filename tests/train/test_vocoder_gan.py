"""GAN distillation trainer of the light vocoder, on CPU with a tiny V1 stand-in."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from emostream.networks.hifigan import HifiGan, HifiGanConfig
from emostream.networks.lite_vocoder import LiteVocoder
from train import corpus
from train.vocoder_gan import GanConfig, ShardPool, dequantize, held_windows, train

V1 = Path(__file__).resolve().parents[2] / "models" / "corpus" / "v1"
TINY = GanConfig(
    batch=2,
    segment_frames=8,
    context=4,
    warmup_steps=2,
    held_utterances=3,
    held_frames=8,
    mpd_channels=(4, 8),
    mrd_channels=4,
    eval_every=3,
    save_every=100,
    log_every=1,
    generator={"dim": 32, "intermediate": 64, "blocks": 2},
)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def records(n: int, skip: int = 0) -> list[corpus.Record]:
    shard = min(V1.glob("*.npz.xz"))
    out = []
    for u in itertools.islice(corpus.read_shard(shard), skip, skip + n):
        out.append(corpus.Record.from_utterance(u))
    return out


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    corpus.write_shard(records(10), out / "shard-000.npz.xz", preset=1)
    return out


def stand_in() -> HifiGan:
    """A small random HiFi-GAN V1 (same interface as the real teacher)."""
    torch.manual_seed(123)
    return HifiGan(HifiGanConfig(upsample_initial_channel=32)).eval()


def test_pool_follow_and_windows(tmp_path: Path) -> None:
    corpus.write_shard(records(5), tmp_path / "a.npz.xz", preset=1)
    pool = ShardPool(tmp_path, held=2)
    assert pool.poll() == 3 and len(pool.held_out) == 2
    assert pool.poll() == 0
    corpus.write_shard(records(4, skip=5), tmp_path / "b.npz.xz", preset=1)
    (tmp_path / "c.tmp").write_bytes(b"half-written")  # not a shard yet
    assert pool.poll() == 4 and len(pool) == 7
    assert pool.frames == sum(r.mel.shape[0] for r in records(9)[2:])
    rng = np.random.default_rng(0)
    win = pool.sample(rng, 6, 20, 5)
    assert win.shape == (6, 30, 80) and win.dtype == np.uint8
    # Silence padding where a window runs past the utterance (short utterance, far context).
    held = held_windows([np.full((3, 80), 200, np.uint8)], 8, 4)
    assert held.shape == (1, 16, 80)
    assert (held[0, :4] == 0).all() and (held[0, 4:7] == 200).all() and (held[0, 7:] == 0).all()
    mel = dequantize(torch.from_numpy(held))
    assert mel.shape == (1, 80, 16)
    assert torch.allclose(mel[0, :, 0], torch.full((80,), math.log(1e-5)), atol=1e-5)


def test_trains_resumes_and_warm_starts(tiny_corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = train(tiny_corpus, run, max_steps=4, gc=TINY, device="cpu", teacher=stand_in())
    assert first["step"] == 4 and first["gan_from"] == 2  # warm-up, then the GAN
    assert {"d", "adv", "fm", "mel", "stft"} <= set(first["losses"])
    assert all(math.isfinite(v) for v in first["losses"].values())
    assert all(math.isfinite(v) for v in first["eval"].values())
    assert first["held_segments"] == 3 and first["train_utterances"] == 7
    for name in ("last.pt", "lite_vocoder_fp16.pt", "summary-0000004.json"):
        assert (run / name).exists(), name
    assert json.loads((run / "summary-0000004.json").read_text())["step"] == 4
    # The best held-out generator since the GAN joined (evaluations at steps 0, 3 and 4;
    # step 0 is before the GAN and does not count).
    assert first["best"]["step"] in (3, 4)
    assert first["best"]["mel_l1"] == min(h["mel_l1"] for h in first["history"] if h["step"] >= 3)
    best = torch.load(run / "best_fp16.pt", map_location="cpu", weights_only=False)
    assert best["step"] == first["best"]["step"]
    state = torch.load(run / "last.pt", map_location="cpu", weights_only=False)
    assert {"gen", "disc", "opt_g", "opt_d"} <= set(state) and state["opt_d"]["state"]

    # Resumed, not restarted: same weights (the held-out distance at the start of the new
    # run is the one at the end of the last), step and phase carry on.
    second = train(tiny_corpus, run, max_steps=6, gc=TINY, device="cpu", teacher=stand_in())
    assert second["step"] == 6 and second["steps_this_run"] == 2 and second["gan_from"] == 2
    assert second["history"][0]["step"] == 4
    assert second["history"][0]["mel_l1"] == pytest.approx(first["eval"]["mel_l1"], rel=1e-5)

    # Warm start of the generator alone from the shipped fp16 file.
    shipped = run / "lite_vocoder_fp16.pt"
    assert LiteVocoder.load(shipped).config.dim == 32
    third = train(
        tiny_corpus, tmp_path / "next", max_steps=7, gc=TINY, device="cpu",
        init=shipped, teacher=stand_in(),
    )  # fmt: skip
    assert third["step"] == 7 and third["steps_this_run"] == 1
    assert third["history"][0]["mel_l1"] == pytest.approx(second["eval"]["mel_l1"], rel=2e-2)

    # ... and from the shipped ONNX export of the same weights (what the repository ships).
    exported = LiteVocoder.load(shipped).export_onnx(
        tmp_path / "lite.onnx", half=True, extra={"step": 6}
    )
    fourth = train(
        tiny_corpus, tmp_path / "from-onnx", max_steps=7, gc=TINY, device="cpu",
        init=exported, teacher=stand_in(),
    )  # fmt: skip
    assert fourth["step"] == 7 and fourth["steps_this_run"] == 1
    assert fourth["history"][0]["mel_l1"] == pytest.approx(third["history"][0]["mel_l1"], rel=1e-3)


def test_warmup_learns(tiny_corpus: Path, tmp_path: Path) -> None:
    """A few dozen generator-only steps bring the student closer to the teacher."""
    gc = GanConfig(**{**TINY.__dict__, "warmup_steps": 1000, "eval_every": 1000, "lr": 2e-3})
    out = train(tiny_corpus, tmp_path, max_steps=40, gc=gc, device="cpu", teacher=stand_in())
    assert out["gan_from"] == -1
    start, end = out["history"][0], out["history"][-1]
    assert end["step"] == 40
    assert end["mel_l1"] < 0.8 * start["mel_l1"]
    assert end["mr_stft"] < start["mr_stft"]


def with_audio(recs: list[corpus.Record]) -> list[corpus.Record]:
    """Records whose kept audio marks its mel frame: every sample of frame k is k / 1000,
    and the mel's first bin of frame k is k % 256."""
    for r in recs:
        n = r.mel.shape[0]
        r.mel = r.mel.copy()
        r.mel[:, 0] = np.arange(n) % 256
        r.audio = corpus.frame_audio(np.repeat(np.arange(n) / 1000.0, corpus.MEL.hop_length), n)
    return recs


def test_kept_audio_lies_beside_its_shard(tmp_path: Path) -> None:
    recs = with_audio(records(3))
    corpus.write_shard(recs, tmp_path / "s.npz.xz", preset=1)
    kept = corpus.read_audio(tmp_path / "s.npz.xz")
    assert (tmp_path / "s.audio.npz").exists() and set(kept) == {r.utt for r in recs}
    for r in recs:
        assert len(kept[r.utt]) == r.mel.shape[0] * corpus.MEL.hop_length
        assert np.array_equal(kept[r.utt], r.audio)
    corpus.write_shard(records(2), tmp_path / "plain.npz.xz", preset=1)
    assert corpus.read_audio(tmp_path / "plain.npz.xz") == {}
    short = corpus.frame_audio(np.ones(300, np.float32), 2)  # 2 frames: cut or padded
    assert short.shape == (512,) and short[299] == 32767 and short[300] == 0


def test_audio_windows_line_up_with_mel_windows(tmp_path: Path) -> None:
    from train.vocoder_gan import HOP

    corpus.write_shard(with_audio(records(4)), tmp_path / "a.npz.xz", preset=1)
    corpus.write_shard(records(3, skip=4), tmp_path / "b.npz.xz", preset=1)  # no audio
    pool = ShardPool(tmp_path, held=1, audio=True)
    assert pool.poll() == 3 and len(pool.held_audio) == 1  # b's utterances are left out
    mel, wav = pool.sample_pairs(np.random.default_rng(0), 16, 6, 3)
    for m, w in zip(mel, wav):
        marks = m[3:9, 0].astype(int)  # the emitted frames' marks (frame index % 256)
        blocks = w.reshape(6, HOP)
        assert (blocks == blocks[:, :1]).all()  # one frame's samples per hop
        frames = np.round(blocks[:, 0] / 32767 * 1000).astype(int)
        assert np.array_equal(frames % 256, marks) and np.all(np.diff(frames) == 1)
    assert ShardPool(tmp_path, held=0).poll() == 7  # without audio: every utterance


def test_trains_on_kept_audio_without_v1(tmp_path: Path) -> None:
    data = tmp_path / "corpus"
    corpus.write_shard(with_audio(records(8)), data / "s.npz.xz", preset=1)
    out = train(data, tmp_path / "run", max_steps=3, gc=TINY, device="cpu", targets="audio")
    assert out["targets"] == "audio" and out["step"] == 3
    assert math.isfinite(out["eval"]["mel_l1"])
    with pytest.raises(RuntimeError, match="no training utterances"):
        train(tmp_path / "none", tmp_path / "x", max_steps=1, gc=TINY, device="cpu",
              targets="audio")  # fmt: skip
