"""Where a segment may end between two words, before any punctuation (sans-I/O).

A chat model's reply, streamed word by word, often runs fifteen or twenty words before its
first punctuation mark; waiting for it put first audio a second after the first token. So
the segmenter (:mod:`emostream.text.splitter`) may also end a segment at a word boundary that
a speaker could pause at, found here from the words on both sides of it:

* English: before a word that opens a clause or phrase (``and``, ``but``, ``because``,
  ``that``, ``which``, ``to``, ``for``, ``with``, an article or possessive, an auxiliary
  after a noun: "My best guess | is that"), or after a verb that takes a clause ("I think |
  the ..."); never after a word that leans on the next one (an article, a preposition, a
  subject pronoun, an auxiliary, ``not``, a number, ``Mr.``) nor before one that leans on the
  last (``up``, ``out``, ``it``, ``them``, ``of``). ``in``, ``on``, ``over``, ``about`` ...
  may be a verb's particle ("waking up", "log in"): a break before one waits for the word
  after it, and is taken only when that word opens a noun phrase ("| in the fridge").
* Mandarin, on the words of the front end's own segmentation (jieba with its fixes, so a
  break never falls inside 现在 or 了解): after 了/吧/呢/啊/吗 and after 的, before a
  conjunction (然后, 所以, 因为, 但是 ...), a coverb or modal (在, 把, 可以, 应该 ...) or 是,
  after a verb that takes a clause (觉得, 认为 ...); never after an adverb, coverb, pronoun,
  conjunction or number, nor before a particle, a localiser (里, 上 ...) or a complement
  (一下, 起来 ...).

Each boundary gets a strength: 3 (a clause opens), 2 (a phrase opens), 1 (between two content
words), 0 (never). :func:`find_break` takes the first boundary of strength 2 or more once the
segment would be ``min_weight`` long, or, once the text has run ``slack`` past that with none,
the first one of strength 1. A boundary is only judged once the word after it is complete (a
space, or another word, follows it): that word, and up to two more, are also the segment's
right context (:mod:`emostream.text.context`). A Mandarin word is judged from its first
character (unless that could begin a word that leans back, 一 of 一下): its characters are its
syllables however it ends, and two characters come per token, so waiting for the whole word
cost a token (50 ms) on most first segments.

Lengths are weights: a hanzi counts as three characters (about as long spoken).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from emostream.text.pron.wire import OPEN as PIN_OPEN
from emostream.text.pron.wire import display_map, display_text
from emostream.text.zh.g2p import MandarinFrontEnd

CONTEXT_WORDS = 3  # at most this many words of right context; left: LEFT_CONTEXT_WORDS
LEFT_CONTEXT_WORDS = 2

_HAN = "\u3400-\u9fff"
_TOKENS = re.compile(rf"[{_HAN}]+|[^\s{_HAN}]+")
_EDGE_PUNCT = "\"'()[]{}“”‘’「」『』（）【】,.;:!?，。、；：！？…—-"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- English ---------------------------------------------------------------------------
_NUMBERS = _words(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty "
    "forty fifty sixty hundred thousand million half"
)
_DETERMINERS = _NUMBERS | _words(
    "a an the this that these those my your his her its our their some any every each all "
    "both no another such what which whose many several few"
)
_PREPOSITIONS = _words(
    "to of in on at for with from by about into onto over under after before between through "
    "during without within against among around across along behind beyond near toward "
    "towards upon via per like than as despite except"
)
_CONJUNCTIONS = _words(
    "and but or nor so because if when whenever while although though since until unless "
    "whether where whereas how why who whom that then instead otherwise"
)
_AUXILIARIES = _words(
    "am is are was were be been being do does did have has had will would shall should can "
    "could may might must"
)
_SUBJECTS = _words("i you he she it we they there")
_CONTRACTIONS = _words(
    "i'm you're we're they're he's she's it's that's there's what's who's i've you've we've "
    "they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll it'll "
    "that'll don't doesn't didn't can't cannot won't wouldn't shouldn't couldn't isn't aren't "
    "wasn't weren't haven't hasn't hadn't mustn't let's"
)
_LEANING_ADVERBS = _words(
    "not never very too so really quite just even only also still already almost rather "
    "pretty more most less least much mr mrs ms dr prof st"
)
# A segment never ends with these: each leans on the word after it.
EN_BIND_FORWARD = (
    _DETERMINERS | _PREPOSITIONS | _CONJUNCTIONS | _AUXILIARIES | _SUBJECTS | _CONTRACTIONS
    | _LEANING_ADVERBS
)  # fmt: skip
# ... nor starts with these: each leans on the word before it.
EN_BIND_BACKWARD = _words(
    "not n't up down out off away back it me you him her us them myself yourself himself herself "
    "itself ourselves yourselves themselves too else enough ago of 's"
)
EN_CLAUSE_OPENERS = _CONJUNCTIONS - {"how", "why"}  # strength 3 before
EN_PHRASE_OPENERS = (_PREPOSITIONS - {"of"}) | _AUXILIARIES | _DETERMINERS  # strength 2 before
# Prepositions that may be a verb's particle: a break before one needs a noun phrase after it.
EN_MAYBE_PARTICLE = _words("in on over about around through by across along")
EN_CLAUSE_VERBS = _words(
    "think thought believe guess know knew hope feel felt suppose mean say said reckon bet imagine"
)

# -- Mandarin ----------------------------------------------------------------------------
_ZH_ADVERBS = _words(
    "最 很 太 更 都 也 还 就 才 又 再 不 没 没有 别 先 已经 正在 一直 非常 特别 比较 马上 立刻 "
    "一定 可能 会 要 能 能够 可以 应该 需要 必须 想 得 越 挺 真 好"
)
_ZH_COVERBS = _words(
    "在 把 被 给 对 从 向 跟 往 为 为了 除了 关于 对于 通过 按照 根据 比 离 让 叫 使 由 用 和 与 "
    "及 或 同"
)
_ZH_CONJUNCTIONS = _words(
    "因为 所以 如果 但是 可是 而且 并且 虽然 或者 然后 而 但 并 若 要是 只要 只有 除非 不过 于是 "
    "因此 接着 同时 其实 就是 还是 而是 那么 即使 哪怕 比如 例如 首先 另外 此外 否则 要不然 只是 "
    "甚至 以及 以便 以免 总之 还有 然而 结果 最后 不然"
)
_ZH_PRONOUNS = _words(
    "我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 大家 这 那 哪 这个 那个 这些 那些 哪个 "
    "每 每个 各 某 一个 一些 一点 几 几个 这样 那样 这么 那么 怎么"
)
ZH_BIND_FORWARD = _ZH_ADVERBS | _ZH_COVERBS | _ZH_CONJUNCTIONS | _ZH_PRONOUNS
ZH_BIND_BACKWARD = _words(
    "的 了 着 过 得 地 吗 吧 呢 啊 呀 嘛 哦 啦 呗 们 等 等等 似的 一样 而已 罢了 里 上 下 中 内 外 "
    "前 后 里面 上面 下面 之间 之后 之前 以后 以前 以上 以下 左右 一下 起来 出来 过来 下去 上去 "
    "进来 回来 到 完 见 住 掉 个 次 遍 些 点 种"
)
# The starts of the words above that are longer than a character (一 of 一下, 起 of 起来).
_ZH_BACKWARD_PREFIXES = frozenset(w[:k] for w in ZH_BIND_BACKWARD for k in range(1, len(w)))
ZH_FINAL_PARTICLES = _words("了 吧 呢 啊 呀 嘛 吗 啦")  # strength 3 after
ZH_CLAUSE_OPENERS = _ZH_CONJUNCTIONS  # strength 3 before
ZH_PHRASE_OPENERS = _words(  # strength 2 before
    "是 在 把 被 给 对 从 向 跟 往 为了 关于 对于 通过 按照 根据 可以 应该 需要 必须 能 能够 会 "
    "要 就 都 也 还 已经 正在 一直 才 又 再 先 预计 大概 可能 一定"
)
ZH_CLAUSE_VERBS = _words(
    "觉得 认为 知道 希望 发现 听说 相信 建议 记得 感觉 以为 表示 说 想想 看来 担心 确定 猜"
)
_ZH_NUMERALS = set("零一二两三四五六七八九十百千万亿半几0123456789")
_ZH_CLASSIFIERS = set("个只条张道位件本次种些点家辆块杯份台部名岁")


@dataclass(frozen=True)
class Token:
    """A word of the buffer: ``text`` at ``buf[start:end]``; ``han`` for a Mandarin word;
    ``complete`` once what follows shows it will not grow."""

    text: str
    start: int
    end: int
    han: bool
    complete: bool

    @property
    def core(self) -> str:
        """Lower case, without the punctuation around it (``"(And"`` → ``and``)."""
        return self.text.strip(_EDGE_PUNCT).lower().replace("’", "'")

    @property
    def is_word(self) -> bool:
        return any(ch.isalnum() for ch in self.text)

    @property
    def judged(self) -> bool:
        """Enough of it is here to judge a break before it (module docs)."""
        return self.complete or (self.han and not _ZH_BACKWARD_PREFIXES.intersection(
            self.text[:k] for k in range(1, len(self.text) + 1)))  # fmt: skip


@dataclass(frozen=True)
class Break:
    """A segment ends at ``at`` (``buf[:at]``); ``buf[at:context_end]`` is its right context
    (the whitespace and the complete words after it)."""

    at: int
    context_end: int
    strength: int


@cache
def _zh() -> MandarinFrontEnd:
    return MandarinFrontEnd()


def tokens(buf: str) -> list[Token]:
    """The words of ``buf`` in order: Latin runs split at whitespace (punctuation attached),
    Han runs split by the Mandarin front end. The last word of a run that reaches the end of
    ``buf`` is not complete. A word given a pronunciation (a pin: :mod:`emostream.text.pron`)
    is cut as its display text, and never inside: a token's text is as displayed, its
    ``start``/``end`` are offsets into ``buf``, round whole pins."""
    if PIN_OPEN not in buf:
        return _tokens(buf)
    m = display_map(buf)
    shown: list[Token] = []  # in display offsets
    for tok in _tokens(m.display):
        if shown and not m.cuttable[tok.start]:  # starts inside a pin: one word with the last
            last = shown.pop()
            tok = Token(m.display[last.start : tok.end], last.start, tok.end,
                        last.han and tok.han, tok.complete)  # fmt: skip
        shown.append(tok)
    return [Token(t.text, m.starts[t.start], m.ends[t.end], t.han, t.complete) for t in shown]


def _tokens(buf: str) -> list[Token]:
    out: list[Token] = []
    n = len(buf)
    for m in _TOKENS.finditer(buf):
        run = m.group(0)
        if "\u3400" <= run[0] <= "\u9fff":
            pos = m.start()
            words = _zh().words(run)
            for k, word in enumerate(words):
                last = k == len(words) - 1
                out.append(Token(word, pos, pos + len(word), True, not last or m.end() < n))
                pos += len(word)
        else:
            out.append(Token(run, m.start(), m.end(), False, m.end() < n))
    return out


def weight(text: str) -> int:
    """Length in 'English characters': a hanzi counts as three (a pin: its display's)."""
    if PIN_OPEN in text:
        text = display_text(text)
    return sum(char_weight(ch) for ch in text)


def char_weight(ch: str) -> int:
    return 3 if "\u3400" <= ch <= "\u9fff" else 1


def strength(prev: Token, nxt: Token, after: Token | None) -> int | None:
    """How good a segment end between ``prev`` and ``nxt`` is (module docs: 0-3); None when
    it depends on ``after`` (the word after ``nxt``), which is not complete yet."""
    if not prev.is_word or not nxt.is_word:
        return 0
    if prev.han and nxt.han:
        return _zh_strength(prev.text, nxt.text)
    p, n = prev.core, nxt.core
    if prev.han:
        if prev.text in ZH_BIND_FORWARD or _zh_numeric(prev.text):
            return 0
    elif p in EN_BIND_FORWARD or _numeric(p):
        return 0
    if nxt.han:
        return 0 if nxt.text in ZH_BIND_BACKWARD else 1
    if n in EN_BIND_BACKWARD:
        return 0
    if n in EN_CLAUSE_OPENERS:
        return 3
    if n in EN_MAYBE_PARTICLE:
        if after is None or not after.complete:
            return None
        a = after.core
        opens_np = a in _DETERMINERS or _numeric(a) or after.text[:1].isupper()
        return 2 if opens_np else 0
    if n in EN_PHRASE_OPENERS:
        return 2
    if p in EN_CLAUSE_VERBS:
        return 2
    return 1


def _zh_strength(prev: str, nxt: str) -> int:
    if prev in ZH_BIND_FORWARD or _zh_numeric(prev) or nxt in ZH_BIND_BACKWARD:
        return 0
    if prev in ZH_FINAL_PARTICLES or nxt in ZH_CLAUSE_OPENERS:
        return 3
    if prev == "的" or nxt in ZH_PHRASE_OPENERS or prev in ZH_CLAUSE_VERBS:
        return 2
    return 1


def _numeric(word: str) -> bool:
    return any(ch.isdigit() for ch in word) or word in _NUMBERS


def _zh_numeric(word: str) -> bool:
    """A number, or a number and its classifier (两道, 三个): it leans on the noun after."""
    body = word.rstrip("".join(_ZH_CLASSIFIERS)) if len(word) > 1 else word
    return bool(body) and all(ch in _ZH_NUMERALS for ch in body)


def find_break(buf: str, *, min_weight: int, slack: int) -> Break | None:
    """Where a segment may end in ``buf`` before any punctuation (module docs), or None to
    wait for more text. The segment ``buf[:at]`` weighs at least ``min_weight``."""
    toks = tokens(buf)
    weak: Break | None = None
    complete_end = 0
    for i in range(len(toks) - 1):
        prev, nxt = toks[i], toks[i + 1]
        if not nxt.judged:
            break
        complete_end = nxt.end
        if weight(buf[: prev.end]) < min_weight:
            continue
        s = strength(prev, nxt, toks[i + 2] if i + 2 < len(toks) else None)
        if s is None:
            break  # decided by a word still coming
        if s >= 2:
            return Break(prev.end, _context_end(toks, i + 1), s)
        if s == 1 and weak is None and not _inside_noun_phrase(toks, i):
            weak = Break(prev.end, _context_end(toks, i + 1), s)
    if weak is not None and weight(buf[:complete_end]) >= min_weight + slack:
        return weak
    return None


def _inside_noun_phrase(toks: list[Token], i: int) -> bool:
    """An English word right after a determiner ("a new | language"): a break after it
    would likely split a noun phrase (adjective | noun), so it is no fallback."""
    return i > 0 and not toks[i].han and toks[i - 1].core in _DETERMINERS


def _context_end(toks: list[Token], first: int) -> int:
    """The end of the right context: up to :data:`CONTEXT_WORDS` complete words from
    ``toks[first]``, stopping at a mark (no context across punctuation)."""
    end = toks[first].end
    for tok in toks[first : first + CONTEXT_WORDS]:
        if not tok.judged or not tok.is_word:
            break
        end = tok.end
        if tok.text[-1] in _EDGE_PUNCT:
            break
    return end


def left_context(text: str) -> str:
    """The last :data:`LEFT_CONTEXT_WORDS` words of ``text`` (and the whitespace between
    them): the next segment's left context after a break."""
    toks = [t for t in tokens(text + " ") if t.is_word]
    if not toks:
        return ""
    return text[toks[max(0, len(toks) - LEFT_CONTEXT_WORDS)].start : toks[-1].end]
