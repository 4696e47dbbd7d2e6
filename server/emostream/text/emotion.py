"""Emotion from a free-text prompt (Chinese or English), and emotion → variance-adaptor controls.

:func:`parse_prompt` maps "开心", "用愤怒的语气说", "a bit sad", "not happy at all" to one of
EmotiVoice's labels (``neutral, happy, angry, sad, surprised, disgusted, fearful``) with an
intensity in 0–1. It is a transparent lexicon with degree words and negation, not a model: the
same prompt always gives the same answer, and EmotiVoice's own users report its BERT prompt
encoder barely follows prompts anyway.

:func:`prosody_controls` turns ``(label, intensity)`` plus the explicit ``speed``, ``pitch_shift``
(semitones) and ``energy`` controls into what a FastSpeech2-style variance adaptor can apply:
a pitch level shift (semitones), a pitch range scale (around the utterance mean, in log-F0), an
energy scale, a rate scale and a pause scale. Directions follow the vocal-emotion literature —
Scherer (1986, 2003), Banse & Scherer (1996), Juslin & Laukka's 2003 meta-analysis of 104
studies — where the acted-speech cues agree:

=========  ==========  ===========  ===========  ==========  ==========
label      F0 level    F0 range     intensity    rate        pauses
=========  ==========  ===========  ===========  ==========  ==========
happy      higher      wider        louder       faster      shorter
angry      higher      wider        much louder  faster      shorter
sad        lower       narrower     quieter      slower      longer
fearful    much higher narrower     ≈            faster      ≈
surprised  higher      much wider   louder       ≈           ≈
disgusted  lower       narrower     ≈            slower      longer
=========  ==========  ===========  ===========  ==========  ==========

Magnitudes at intensity 1 are moderate (±1–3 semitones, ±10–40 %), chosen so that a model
trained on neutral speech stays inside what it has seen; intensity scales them geometrically
(``factor ** intensity``), so 0 is neutral and 0.5 is "half-way" on a log scale.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# EmotiVoice's label set; the protocol, the voices and the acoustic model's emotion table use it.
EMOTIONS: tuple[str, ...] = (
    "neutral",
    "happy",
    "angry",
    "sad",
    "surprised",
    "disgusted",
    "fearful",
)

DEFAULT_INTENSITY = 0.7  # a bare emotion word ("开心", "happy")
WEAK = 0.55  # factor for "a bit", "有点"
STRONG = 1.35  # factor for "very", "非常"

# label -> words. Each entry may carry its own base intensity as "word:0.9".
_ZH: dict[str, tuple[str, ...]] = {
    "happy": (
        "开心", "高兴", "快乐", "愉快", "喜悦", "欢快", "欢乐", "欣喜", "兴奋:0.85", "激动:0.85",
        "幸福", "活泼", "热情", "欢喜", "乐呵", "雀跃:0.85", "愉悦", "笑着", "满意:0.5", "轻松:0.5",
    ),
    "angry": (
        "生气", "愤怒:0.85", "恼火", "气愤:0.85", "暴怒:1.0", "发火", "火大", "怒气", "恼怒",
        "不耐烦:0.5", "烦躁:0.5", "不满:0.5", "凶", "怒吼:1.0", "大怒:1.0", "怒",
    ),
    "sad": (
        "难过", "伤心", "悲伤", "悲痛:0.9", "沮丧", "失落", "忧伤", "哀伤", "低落", "遗憾:0.5",
        "痛苦:0.85", "委屈", "郁闷", "哭腔:0.85", "哭", "心碎:0.9", "悲哀", "凄凉",
    ),
    "surprised": (
        "惊讶", "吃惊", "意外:0.55", "震惊:0.9", "惊喜", "不敢相信", "惊奇", "诧异", "难以置信",
    ),
    "disgusted": ("厌恶", "恶心", "嫌弃", "反感", "讨厌", "鄙视", "嫌恶", "鄙夷"),
    "fearful": (
        "害怕", "恐惧:0.85", "紧张:0.5", "担心:0.5", "惊恐:0.9", "胆怯", "畏惧", "惊慌",
        "恐慌:0.85", "不安:0.5", "发抖:0.85", "怕",
    ),
    "neutral": ("平静", "中性", "正常", "冷静", "平淡", "客观", "淡定", "无感情", "面无表情"),
}  # fmt: skip
_EN: dict[str, tuple[str, ...]] = {
    "happy": (
        "happy", "happily", "happiness", "joy", "joyful", "joyfully", "cheerful", "cheerfully",
        "glad", "delighted", "excited:0.85", "excitedly:0.85", "thrilled:0.85", "elated:0.9",
        "pleased:0.5", "upbeat", "playful", "enthusiastic", "laughing", "ecstatic:1.0", "merry",
    ),
    "angry": (
        "angry", "angrily", "anger", "mad", "furious:1.0", "furiously:1.0", "rage:1.0",
        "enraged:1.0", "annoyed:0.5", "irritated:0.5", "frustrated:0.55", "outraged:0.9",
        "hostile", "irate:0.9", "livid:1.0", "cross:0.5",
    ),
    "sad": (
        "sad", "sadly", "sadness", "sorrow", "sorrowful", "unhappy", "depressed", "gloomy",
        "melancholy", "melancholic", "tearful", "crying", "heartbroken:0.95", "grief:0.9",
        "grieving:0.9", "disappointed:0.5", "lonely", "miserable:0.85", "somber", "sombre",
        "mournful", "down:0.5", "blue:0.5",
    ),
    "surprised": (
        "surprised", "surprise", "surprising", "astonished:0.85", "amazed", "shocked:0.9",
        "stunned:0.85", "wow", "unexpected:0.55", "incredulous", "startled",
    ),
    "disgusted": (
        "disgust", "disgusted", "disgusting", "gross", "revolted:0.9", "repulsed:0.9",
        "contempt", "contemptuous", "yuck", "grossed", "sickened",
    ),
    "fearful": (
        "afraid", "scared", "fear", "fearful", "fearfully", "frightened", "terrified:1.0",
        "nervous:0.5", "nervously:0.5", "anxious:0.5", "anxiously:0.5", "worried:0.5",
        "panicked:0.9", "panic:0.9", "timid:0.5", "horrified:0.9", "trembling:0.85",
    ),
    "neutral": ("neutral", "calm", "calmly", "plain", "flat", "normal", "monotone", "unemotional"),
}  # fmt: skip

_ZH_WEAK = (
    "有点儿",
    "有点",
    "有些",
    "稍微",
    "稍稍",
    "略微",
    "略带",
    "略",
    "一点",
    "些许",
    "微微",
    "淡淡",
)
_ZH_STRONG = ("非常", "特别", "十分", "极其", "极度", "超级", "无比", "万分", "太", "很", "好", "超", "极", "相当")  # fmt: skip
_ZH_NEG = ("不太", "不是很", "不怎么", "不要", "别", "不", "没有", "没", "毫不", "并不")
_EN_WEAK = ("a bit", "a little", "slightly", "somewhat", "kind of", "kinda", "sort of", "mildly",
            "a tad", "faintly", "gently", "a touch", "quietly")  # fmt: skip
_EN_STRONG = ("very", "really", "extremely", "so", "super", "incredibly", "totally", "utterly",
              "deeply", "terribly", "truly", "absolutely", "hugely", "intensely", "quite")  # fmt: skip
_EN_NEG = ("not", "never", "no", "without", "don't", "dont", "isn't", "aren't", "wasn't",
           "not at all", "hardly", "n't")  # fmt: skip


def _entries(table: dict[str, tuple[str, ...]]) -> list[tuple[str, str, float]]:
    out = []
    for label, words in table.items():
        for word in words:
            text, _, base = word.partition(":")
            out.append((text, label, float(base) if base else DEFAULT_INTENSITY))
    return sorted(out, key=lambda e: -len(e[0]))


_ZH_ENTRIES = _entries(_ZH)
_EN_ENTRIES = {w: (label, base) for w, label, base in _entries(_EN)}
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class EmotionGuess:
    """What a prompt asked for. ``cues`` lists the words that decided it (for logs and tests)."""

    label: str
    intensity: float
    cues: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Hit:
    label: str
    intensity: float
    cue: str
    pos: int


# words that contain an emotion character but are not emotional ("恐怕" = "I'm afraid that")
_ZH_IGNORE = ("恐怕", "哪怕", "怒放", "好像", "好的", "好吧")


def _zh_hits(text: str) -> list[_Hit]:
    hits: list[_Hit] = []
    taken = [False] * len(text)
    for word in _ZH_IGNORE:
        start = text.find(word)
        while start >= 0:
            for i in range(start, start + len(word)):
                taken[i] = True
            start = text.find(word, start + len(word))
    for word, label, base in _ZH_ENTRIES:
        start = text.find(word)
        while start >= 0:
            end = start + len(word)
            if not any(taken[start:end]):
                for i in range(start, end):
                    taken[i] = True
                before = text[max(0, start - 4) : start]
                intensity, cue = base, word
                if any(before.endswith(n) or n in before[-3:] for n in _ZH_NEG):
                    negated = next(n for n in _ZH_NEG if n in before[-3:] or before.endswith(n))
                    label_n, intensity = _negate(label, base)
                    hits.append(_Hit(label_n, intensity, negated + word, start))
                else:
                    if any(before.endswith(w) or w in before[-3:] for w in _ZH_WEAK):
                        intensity *= WEAK
                    elif any(before.endswith(w) for w in _ZH_STRONG):
                        intensity = min(1.0, intensity * STRONG)
                    hits.append(_Hit(label, intensity, cue, start))
            start = text.find(word, end)
    return hits


def _en_hits(text: str) -> list[_Hit]:
    lowered = text.lower().replace("’", "'")
    tokens = [(m.group(0), m.start()) for m in _WORD.finditer(lowered)]
    hits: list[_Hit] = []
    for i, (tok, pos) in enumerate(tokens):
        entry = _EN_ENTRIES.get(tok)
        if entry is None:
            continue
        label, base = entry
        window = " ".join(t for t, _ in tokens[max(0, i - 3) : i])
        prev = f" {window} "
        if any(f" {n} " in prev for n in _EN_NEG) or window.endswith("n't"):
            label_n, intensity = _negate(label, base)
            hits.append(_Hit(label_n, intensity, f"not {tok}", pos))
            continue
        intensity = base
        if any(f" {w} " in prev for w in _EN_WEAK):
            intensity *= WEAK
        elif any(f" {w} " in prev for w in _EN_STRONG):
            intensity = min(1.0, intensity * STRONG)
        hits.append(_Hit(label, intensity, tok, pos))
    return hits


def _negate(label: str, base: float) -> tuple[str, float]:
    """ "not happy" is mildly sad; "not sad", "don't be angry" are calm."""
    if label == "happy":
        return "sad", 0.5 * base
    return "neutral", 0.0


def parse_prompt(prompt: str) -> EmotionGuess:
    """The emotion a free-text prompt asks for; ``neutral`` at intensity 0 when it names none.

    Several cues add up per label (weighted by intensity); the strongest label wins, ties going
    to the cue that came first. Explicit neutral words win only when nothing else is named.
    """
    text = prompt.strip()
    if not text:
        return EmotionGuess("neutral", 0.0)
    hits = _zh_hits(text) + _en_hits(text)
    if not hits:
        return EmotionGuess("neutral", 0.0)
    scores: dict[str, float] = {}
    first: dict[str, int] = {}
    for hit in hits:
        scores[hit.label] = scores.get(hit.label, 0.0) + max(hit.intensity, 1e-3)
        first[hit.label] = min(first.get(hit.label, hit.pos), hit.pos)
    emotional = {k: v for k, v in scores.items() if k != "neutral"}
    pool = emotional or scores
    label = max(pool, key=lambda k: (pool[k], -first[k]))
    mine = [h for h in hits if h.label == label]
    intensity = 0.0 if label == "neutral" else max(h.intensity for h in mine)
    return EmotionGuess(label, round(min(1.0, intensity), 3), tuple(h.cue for h in mine))


# ---------------------------------------------------------------------------------------------
# emotion → variance-adaptor controls


@dataclass(frozen=True)
class EmotionProfile:
    """Prosody of an emotion at intensity 1, relative to the same speaker's neutral speech."""

    pitch_st: float  # F0 level shift, semitones
    pitch_range: float  # F0 excursion scale (log domain, around the mean)
    energy: float  # frame energy scale
    rate: float  # speaking rate scale (>1 faster: durations divided by it)
    pause: float  # pause duration scale


PROFILES: dict[str, EmotionProfile] = {
    "neutral": EmotionProfile(0.0, 1.00, 1.00, 1.00, 1.00),
    "happy": EmotionProfile(2.0, 1.30, 1.15, 1.08, 0.85),
    "angry": EmotionProfile(1.5, 1.25, 1.40, 1.10, 0.80),
    "sad": EmotionProfile(-1.5, 0.70, 0.80, 0.85, 1.30),
    "fearful": EmotionProfile(3.0, 0.90, 1.00, 1.12, 1.00),
    "surprised": EmotionProfile(2.5, 1.45, 1.10, 1.00, 1.00),
    "disgusted": EmotionProfile(-1.0, 0.85, 1.00, 0.90, 1.15),
}
assert set(PROFILES) == set(EMOTIONS)


@dataclass(frozen=True)
class ProsodyControls:
    """What the variance adaptor applies to its predicted pitch, energy and durations."""

    pitch_shift_st: float = 0.0
    pitch_range: float = 1.0
    energy_scale: float = 1.0
    rate_scale: float = 1.0
    pause_scale: float = 1.0

    def as_dict(self) -> dict[str, float]:
        return {
            "pitch_shift_st": self.pitch_shift_st,
            "pitch_range": self.pitch_range,
            "energy_scale": self.energy_scale,
            "rate_scale": self.rate_scale,
            "pause_scale": self.pause_scale,
        }


LIMITS: dict[str, tuple[float, float]] = {
    "pitch_shift_st": (-12.0, 12.0),
    "pitch_range": (0.3, 2.5),
    "energy_scale": (0.25, 4.0),
    "rate_scale": (0.5, 2.0),
    "pause_scale": (0.3, 3.0),
}


def _clamp(name: str, value: float) -> float:
    lo, hi = LIMITS[name]
    return min(hi, max(lo, value))


def prosody_controls(
    label: str = "neutral",
    intensity: float = 1.0,
    *,
    speed: float = 1.0,
    pitch_shift: float = 0.0,
    energy: float = 1.0,
) -> ProsodyControls:
    """Controls for ``label`` at ``intensity`` (0–1), combined with the request's explicit ones.

    Emotion factors scale geometrically with intensity; ``speed`` multiplies the rate (and
    pauses shrink with it), ``pitch_shift`` adds semitones, ``energy`` multiplies energy. Results
    are clamped to :data:`LIMITS`. Raises ``ValueError`` for an unknown label or intensity
    outside 0–1.
    """
    if label not in PROFILES:
        raise ValueError(f"unknown emotion {label!r}; one of {', '.join(EMOTIONS)}")
    if not 0.0 <= intensity <= 1.0 or math.isnan(intensity):
        raise ValueError("intensity must be within 0..1")
    for name, value in (("speed", speed), ("energy", energy)):
        if not value > 0 or math.isinf(value):
            raise ValueError(f"{name} must be a positive number")
    if math.isnan(pitch_shift) or math.isinf(pitch_shift):
        raise ValueError("pitch_shift must be finite")
    p = PROFILES[label]
    k = intensity
    return ProsodyControls(
        pitch_shift_st=_clamp("pitch_shift_st", p.pitch_st * k + pitch_shift),
        pitch_range=_clamp("pitch_range", p.pitch_range**k),
        energy_scale=_clamp("energy_scale", p.energy**k * energy),
        rate_scale=_clamp("rate_scale", p.rate**k * speed),
        pause_scale=_clamp("pause_scale", p.pause**k / speed),
    )
