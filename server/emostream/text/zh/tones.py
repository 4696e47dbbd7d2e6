"""Tone passes over a Mandarin phrase: third-tone sandhi (inside words, then across the words
of a prosodic group), 一 and 不 sandhi, A不AB and repeated interjections."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from emostream.text.zh.prepare import HAN_RE, MEASURES_1
from emostream.text.zh.types import Syllable, Word

# interjections said with a full tone when repeated (啊啊啊 ā, 哦哦 ò "I see", 嗯嗯 ǹ "mm-hm"):
# pypinyin and the particle rule made them neutral or rising
_REPEATED_INTERJECTION = {"啊": ("a", 1), "哦": ("o", 4), "嗯": ("n", 4)}


def _sandhi_33(syls: list[Syllable]) -> None:
    """3-3 → 2-3 over one flat constituent, left to right (我很好 → wo2 hen2 hao3)."""
    for a, b in pairwise(syls):
        if a.tone == 3 and b.tone == 3:
            a.tone = 2


def _word_structure(word: str, is_word: Callable[[str], bool]) -> list[int]:
    """Constituent lengths of a word for cyclic third-tone sandhi (展览|馆, 小|老鼠)."""
    n = len(word)
    if n <= 2:
        return [n]
    if n == 3:
        if is_word(word[:2]):
            return [2, 1]
        if is_word(word[1:]):
            return [1, 2]
        return [2, 1]
    if n == 4:
        return [2, 2]
    return [2, *_word_structure(word[2:], is_word)]


def _cyclic_33(word_syls: list[Syllable], parts: list[int]) -> None:
    """Inner constituents first, then the junctions between them, left to right."""
    chunks: list[list[Syllable]] = []
    pos = 0
    for n in parts:
        chunk = word_syls[pos : pos + n]
        pos += n
        _sandhi_33(chunk)
        chunks.append(chunk)
    for left, right in pairwise(chunks):
        if left and right and left[-1].tone == 3 and right[0].tone == 3:
            left[-1].tone = 2


def _next_tone(flat: list[Syllable], i: int) -> int | None:
    return flat[i + 1].tone if i + 1 < len(flat) else None


def a_not_a(flat: list[Syllable]) -> None:
    """A不AB cut into words (了/不/了解): A takes AB's first reading (liǎo bu liǎojiě, not le)."""
    for i in range(1, len(flat) - 1):
        a, bu, b = flat[i - 1], flat[i], flat[i + 1]
        if bu.char == "不" and a.char == b.char and HAN_RE.match(a.char) and a.char != "一":
            a.base, a.tone = b.base, b.tone


def repeated_interjections(flat: list[Syllable]) -> None:
    """啊啊啊 ā ā ā, 哦哦 ò ò, 嗯嗯 ǹ ǹ: a run of two or more is an interjection, full tone."""
    i = 0
    while i < len(flat):
        j = i
        while j < len(flat) and flat[j].char == flat[i].char:
            j += 1
        if j - i >= 2 and flat[i].char in _REPEATED_INTERJECTION:
            base, tone = _REPEATED_INTERJECTION[flat[i].char]
            for s in flat[i:j]:
                s.base, s.tone, s.late_neutral = base, tone, False
        i = max(j, i + 1)


def yi_bu(flat: list[Syllable]) -> None:
    """一 and 不 sandhi on a phrase; reduplication (看一看, 是不是) makes them neutral."""
    for i, s in enumerate(flat):
        if s.frozen or s.char not in ("一", "不"):
            continue
        prev = flat[i - 1] if i > 0 else None
        nxt = flat[i + 1] if i + 1 < len(flat) else None
        redup = (
            prev
            and nxt
            and prev.char == nxt.char
            and prev.char not in ("一", "不")
            and prev.char not in MEASURES_1  # 一个一个 is counting, not V一V
            and not (i >= 2 and flat[i - 2].char == s.char)  # 不要不要: 不V said twice
        )
        counting = i + 2 < len(flat) and flat[i + 2].char == "二"  # 数一数二: yī, a number
        if redup and counting and s.char == "一":
            s.tone = 1
            continue
        if redup and HAN_RE.match(prev.char if prev else ""):  # 看一看, 是不是
            s.tone = 5
            continue
        nt = _next_tone(flat, i)
        if s.char == "一" and "一" in ((prev.char if prev else ""), (nxt.char if nxt else "")):
            s.tone = 1  # 一一列举, 一一对应: yī yī
            continue
        if s.char == "一":
            digit_next = nxt is not None and nxt.char in "十零二三四五六七八九弌"
            ordinal = prev is not None and prev.char in "第榜"  # 第一, 榜一 (top of the board)
            if nt is None or digit_next or ordinal:
                s.tone = 1
            elif nt == 4 or (nt == 5 and nxt is not None and nxt.char in ("个", "下")):
                s.tone = 2
            elif nt in (1, 2, 3):
                s.tone = 4
            else:
                s.tone = 1
        else:
            s.tone = 2 if nt == 4 else 4 if s.tone != 5 else 5


def third_tone(words: list[Word], is_word: Callable[[str], bool]) -> None:
    """Third-tone sandhi on a phrase: inside each word by its structure, then across the
    words of each prosodic group (:func:`_group_starts`)."""
    live = [w for w in words if w.syllables]
    for w in live:
        if len(w.syllables) == len(w.text):
            _cyclic_33(w.syllables, _word_structure(w.text, is_word))
        else:
            _sandhi_33(w.syllables)
    starts = _group_starts(live)
    for k, (left, right) in enumerate(pairwise(live), 1):
        a, b = left.syllables[-1], right.syllables[0]
        if a.tone == 3 and b.tone == 3 and k not in starts:
            a.tone = 2


def _group_starts(words: list[Word]) -> set[int]:
    """Indices of the words that start a prosodic group: third-tone sandhi stops before them.

    Words are first joined into units: the pieces jieba cut a number into, with its measure
    word (三百|九|十三, 五十五|把), and a clitic with the word before it (a neutral particle;
    也 都 就 还 只 … after their subject; the localiser 里; 好, a complement as often as a
    degree adverb). A lone one-syllable word between two units that hold a longer word leans
    on the one after it, and the two make a group: 满两百 | 减三十 (bǎi jiǎn, not bái), 水果 |
    很好吃. Everywhere else sandhi runs across words left to right: runs of one-syllable words
    (我也想买 wó yé xiáng mǎi, 如果你问我), one after the last longer word (你好冷, 一点儿也不),
    two longer words side by side (一首曲子, 还有两千).
    """
    units: list[list[Word]] = []
    firsts: list[int] = []
    for k, w in enumerate(words):
        nxt = words[k + 1].text if k + 1 < len(words) else ""
        if units and _clings(units[-1][-1], w, nxt):
            units[-1].append(w)
        else:
            units.append([w])
            firsts.append(k)
    lone = [len(unit) == 1 and len(unit[0].syllables) == 1 for unit in units]
    long = [any(len(w.syllables) >= 2 for w in unit) for unit in units]
    return {firsts[j] for j in range(1, len(units) - 1) if lone[j] and long[j - 1] and long[j + 1]}


def _clings(prev: Word, word: Word, nxt: str = "") -> bool:
    """``word`` belongs with ``prev`` for sandhi grouping (a number's pieces, a clitic); ``nxt``
    is the text of the word after it."""
    if prev.text[-1] in _NUMBER_CHARS and (
        all(c in _NUMBER_CHARS for c in word.text) or word.text in MEASURES_1
    ):
        return True
    if word.text == "好" and nxt in _DEGREE_OF:
        return False  # 老板 | 好可爱: the degree adverb begins its predicate, like 很 and 挺
    return word.text in _CLITICS or [s.tone for s in word.syllables] == [5]  # 了, 的, 吧


_NUMBER_CHARS = set("零一二两三四五六七八九十百千万亿点几半弌幺")
_CLITICS = set("也都就还又才总只里好")
# two-syllable adjectives and feelings that a 好 before them grades (好可爱: very cute), where
# 好 is not a complement of the word before it (整理好文件)
_DEGREE_OF = frozenset({
    "可爱", "厉害", "漂亮", "好看", "好听", "好吃", "好玩", "帅气", "开心", "难受", "舒服", "恐怖",
    "无聊", "有趣", "搞笑", "过分", "离谱", "激动", "紧张", "辛苦", "幸福", "温柔", "聪明", "努力",
    "认真", "热闹", "安静", "干净", "便宜", "精彩", "感动", "羡慕", "喜欢", "讨厌", "害怕", "委屈",
    "尴尬", "心疼", "奇怪", "好笑", "失望", "生气", "难过", "无语", "期待", "优秀", "强大", "完美",
    "刺激", "上头", "有钱", "大方", "暖心", "好玩儿", "好看儿",
})  # fmt: skip
