from __future__ import annotations

import pytest

from emostream.text.emotion import (
    EMOTIONS,
    LIMITS,
    PROFILES,
    ProsodyControls,
    parse_prompt,
    prosody_controls,
)


@pytest.mark.parametrize(
    "prompt,label",
    [
        ("开心", "happy"),
        ("用愤怒的语气", "angry"),
        ("用愤怒的语气说这句话", "angry"),
        ("a bit sad", "sad"),
        ("请用惊讶的语气读", "surprised"),
        ("带着哭腔", "sad"),
        ("害怕地小声说", "fearful"),
        ("一副嫌弃的样子", "disgusted"),
        ("Say it angrily!", "angry"),
        ("cheerful and upbeat", "happy"),
        ("I am so scared", "fearful"),
        ("with a disgusted tone", "disgusted"),
        ("Wow, I'm totally shocked", "surprised"),
        ("calm, neutral newsreader voice", "neutral"),
        ("不开心", "sad"),
        ("not happy at all", "sad"),
        ("I'm not sad", "neutral"),
        ("别生气", "neutral"),
        ("恐怕要下雨了", "neutral"),
        ("read the weather", "neutral"),
        ("", "neutral"),
    ],
)
def test_prompt_labels(prompt: str, label: str) -> None:
    guess = parse_prompt(prompt)
    assert guess.label == label, guess
    assert guess.label in EMOTIONS
    assert 0.0 <= guess.intensity <= 1.0


def test_no_emotion_means_zero_intensity() -> None:
    assert parse_prompt("hello world").intensity == 0.0
    assert parse_prompt("平静").intensity == 0.0


@pytest.mark.parametrize(
    "weak,plain,strong",
    [
        ("a bit sad", "sad", "very sad"),
        ("有点难过", "难过", "非常难过"),
        ("slightly annoyed", "angry", "furious"),
        ("有点生气", "生气", "暴怒"),
        ("kind of happy", "happy", "extremely happy"),
    ],
)
def test_degree_words_order_intensity(weak: str, plain: str, strong: str) -> None:
    a, b, c = parse_prompt(weak), parse_prompt(plain), parse_prompt(strong)
    assert a.label == b.label == c.label
    assert a.intensity < b.intensity < c.intensity


def test_strongest_label_wins_and_cues_are_reported() -> None:
    guess = parse_prompt("很开心，但也有一点点紧张")
    assert guess.label == "happy" and "开心" in guess.cues
    guess = parse_prompt("sad, sad, so sad, a little nervous")
    assert guess.label == "sad" and len(guess.cues) == 3


def test_neutral_controls_are_identity() -> None:
    assert prosody_controls("neutral") == ProsodyControls()
    assert prosody_controls("angry", 0.0) == ProsodyControls()


def test_directions() -> None:
    n = prosody_controls("neutral")
    happy, angry, sad = (
        prosody_controls("happy"),
        prosody_controls("angry"),
        prosody_controls("sad"),
    )
    fear, surprise = prosody_controls("fearful"), prosody_controls("surprised")
    disgust = prosody_controls("disgusted")
    assert happy.pitch_shift_st > 0 and happy.pitch_range > 1 and happy.rate_scale > 1
    assert happy.energy_scale > 1 and happy.pause_scale < 1
    assert angry.energy_scale > happy.energy_scale > n.energy_scale
    assert sad.pitch_shift_st < 0 and sad.pitch_range < 1 and sad.rate_scale < 1
    assert sad.energy_scale < 1 and sad.pause_scale > 1
    assert fear.pitch_shift_st > happy.pitch_shift_st and fear.rate_scale > 1
    assert surprise.pitch_range == max(prosody_controls(e).pitch_range for e in EMOTIONS)
    assert disgust.pitch_shift_st < 0 and disgust.rate_scale < 1


def test_intensity_scales_monotonically() -> None:
    for label in EMOTIONS:
        if label == "neutral":
            continue
        lo, hi = prosody_controls(label, 0.3), prosody_controls(label, 0.9)
        for name in ("pitch_shift_st", "pitch_range", "energy_scale", "rate_scale", "pause_scale"):
            a, b = getattr(lo, name), getattr(hi, name)
            neutral = 0.0 if name == "pitch_shift_st" else 1.0
            assert abs(a - neutral) <= abs(b - neutral) + 1e-12, (label, name)


def test_explicit_controls_combine_and_clamp() -> None:
    c = prosody_controls("sad", 1.0, speed=1.5, pitch_shift=2.0, energy=1.25)
    sad = PROFILES["sad"]
    assert c.pitch_shift_st == pytest.approx(sad.pitch_st + 2.0)
    assert c.rate_scale == pytest.approx(sad.rate * 1.5)
    assert c.energy_scale == pytest.approx(sad.energy * 1.25)
    assert c.pause_scale == pytest.approx(sad.pause / 1.5)
    wild = prosody_controls("happy", 1.0, speed=10.0, pitch_shift=40.0, energy=100.0)
    for name, value in wild.as_dict().items():
        lo, hi = LIMITS[name]
        assert lo <= value <= hi
    assert wild.pitch_shift_st == 12.0 and wild.rate_scale == 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": "bored"},
        {"label": "happy", "intensity": 1.5},
        {"label": "happy", "intensity": float("nan")},
        {"label": "happy", "speed": 0.0},
        {"label": "happy", "energy": -1.0},
        {"label": "happy", "pitch_shift": float("inf")},
    ],
)
def test_bad_controls_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        prosody_controls(**kwargs)  # type: ignore[arg-type]
