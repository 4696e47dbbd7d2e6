"""lab.emotion_level's measures and checks on made-up audio and summaries."""

from __future__ import annotations

import numpy as np
import pytest

from lab.emotion_level import checks, hf_balance, level

RATE = 24000


def _tone(hz: float, amp: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (amp * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_level_follows_gain_and_counts_full_scale() -> None:
    quiet = np.concatenate([_tone(200, 0.1), np.zeros(RATE, np.float32)])
    louder = (2.0 * quiet).astype(np.float32)
    assert level(louder, RATE)["active_db"] - level(quiet, RATE)["active_db"] == pytest.approx(
        6.02, abs=0.01
    )  # the silent second does not count
    assert level(quiet, RATE)["peak_dbfs"] == pytest.approx(-20.0, abs=0.05)
    assert level(quiet, RATE)["full_scale"] == 0.0
    clipped = np.clip(20 * quiet, -1, 1).astype(np.float32)  # 2/3 of the tone half
    assert level(clipped, RATE)["full_scale"] == pytest.approx(1 / 3, abs=0.02)


def test_hf_balance_is_higher_for_brighter_sound() -> None:
    dark = _tone(300, 0.3) + _tone(3000, 0.01)
    bright = _tone(300, 0.3) + _tone(3000, 0.1)
    assert hf_balance(bright, RATE) - hf_balance(dark, RATE) == pytest.approx(20.0, abs=0.5)


def _entry(active: float, rate: float, wer: float) -> dict[str, object]:
    return {"active_db": active, "energy_db": active, "rate": rate, "f0_mean_st": 0.0,
            "hf_balance_db": 0.0, "wer": wer,
            "vs_neutral": {"active_db": active + 24.0, "energy_db": active + 24.0,
                           "rate_ratio": rate / 3.0}}  # fmt: skip


def test_checks_report_the_issue_criteria() -> None:
    summary = {
        "neutral": _entry(-24.0, 3.0, 0.04),
        "angry": _entry(-21.0, 3.3, 0.05),
        "sad": _entry(-26.0, 2.55, 0.04),
        "angry@0.5": _entry(-22.5, 3.15, 0.04),
        "energy=0.7": _entry(-27.0, 3.0, 0.04),
        "energy=1.4": _entry(-21.0, 3.0, 0.04),
    }
    rows = [{"setting": s, "text": "a", "wer": e["wer"]} for s, e in summary.items()]
    out = checks(summary, rows)
    assert out["angry_vs_sad_active_db"] == 5.0
    assert out["angry_vs_sad_rate_ratio"] == pytest.approx(3.3 / 2.55, abs=1e-3)
    assert out["energy_1.4_vs_0.7_active_db"] == 6.0
    assert out["angry_half_over_full_active_db"] == 0.5
    assert out["wer_points_vs_neutral"]["angry"] == 1.0
    assert out["wer_lines_worse_better"]["angry"] == [1, 0]
    # without the level settings only the WER part is there
    partial = checks({k: summary[k] for k in ("neutral", "angry")}, rows[:2])
    assert "angry_vs_sad_active_db" not in partial and "wer_points_vs_neutral" in partial
