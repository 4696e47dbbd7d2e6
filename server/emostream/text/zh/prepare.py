"""Mandarin text before segmentation: numbers read in context, chat spellings (sans-I/O).

:func:`prepare` rewrites mixed text for :mod:`emostream.text.zh.g2p`, before the script
split: full-width digits and letters fold to ASCII (〇 to 零); numbers *in Mandarin context*
are spelt in hanzi the way they are read (:func:`_read_numbers`: years and codes digit by
digit, 幺 in phone numbers and service lines, dates, clock times, scores, ranges, fractions,
percentages, money, units, chat amounts such as 1w and 99+, a model number after a Latin word);
``hhh`` becomes 哈哈哈; all-capital Latin acronyms are spaced into letters (``APP`` → ``A P
P``), except the few that chat says as words (``BOSS`` → ``boss``); lower-case chat
abbreviations are spelled too (``yyds`` → ``Y Y D S``); No.7 is 7号 and NO.1 "number one".

Digits whose 一 must never undergo sandhi (years, codes, ordinals, dates, clock hours,
non-initial digits of a number) are written with the variant character 弌 (:data:`FROZEN_YI`),
read ``yi1``.
"""

from __future__ import annotations

import re

from emostream.text.english import LETTER_A

FROZEN_YI = "弌"  # 一 read yi1 whatever follows (digit readings)

HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAN_RE = re.compile(f"[{HAN}]")
CJK_PUNCT = set("，。、！？：；“”‘’《》「」『』【】（）…—～·")

# ---------------------------------------------------------------------------------------
# Number reading

_DIGITS = "零一二三四五六七八九"
_MEASURES_2 = (
    "分钟", "小时", "公斤", "公里", "千克", "星期", "礼拜", "块钱", "毫升", "厘米", "毫米",
    "美元", "欧元", "英镑", "日元", "港元", "摄氏度",
)  # fmt: skip
MEASURES_1 = set(
    "个位只本张条件块次天年岁斤米分秒倍辆台部家种元杯碗瓶双对口名份篇首支把间座棵朵头匹片"
    "套项节门届周回遍趟场盘粒颗封句段声步排笔组克吨升群批样类所架艘幅副顿阵角毛度层人"
)
_CODE_WORDS = re.compile(
    r"(电话|手机|号码|编号|房间|房号|车次|航班|密码|验证码|邮编|尾号|工号|学号|账号|QQ|分机|门牌|热线|拨打"
    r"|取件码|取餐码|车牌|订单号|快递单号|单号|口令|房间码|邀请码|单元)"
)
# a code word only names the number right after it (手机号是138…, 拨打110), not any number
# a few words later (手机内存只有64GB: a quantity)
_CODE_BEFORE = re.compile(rf"{_CODE_WORDS.pattern}(?:号码|号)?(?:是|为|:|：|\s)*$")
_SLANG = re.compile(r"6{3,}|23{2,}|886|520|521|1314|5201314|996")  # said digit by digit
_EMERGENCY = {"110", "119", "120", "122", "114"}
# 648, a game's top-up tier, is said digit by digit after 充/氪 (充了648, 氪了三个648; 648元 and
# 考了648分 are amounts)
_TOPUP = re.compile(r"(充|氪)[了个值一二两三四五六七八九十几]{0,3}$")
# Service lines said digit by digit: these are never quantities in chat (12306 rail tickets,
# carriers, complaints, traffic, banks) ...
_SERVICE = {"12306", "12315", "12123", "10086", "10010", "95588", "95533", "95599", "95566",
            "95555", "95559", "95508"}  # fmt: skip
# ... these only after a word that dials or names a line (打12345; a bare 12345 is a number)
_SERVICE_CUED = {"12345", "10000", "12121", "12320"}
_DIALS = re.compile(r"(打|拨|拨打|致电|联系|投诉|热线|客服|电话)(?:是|:|：|\s)*$")
# a month/day written 12/25 is a date only after a word that names one (else a fraction)
_DATE_BEFORE = re.compile(
    r"(节|生日|日期|日子|纪念日|截止|定在|定于|改到|推迟到|提前到)(?:是|为|在|:|：|\s)*$"
)
_SCORE_AFTER = set("赢输胜负领落战拿险")  # 3-2赢了, 2-1领先, 3-0落后
_CURRENCY = {"¥": "元", "$": "美元", "€": "欧元", "£": "英镑"}
_UNITS = {"km": "公里", "kg": "公斤", "cm": "厘米", "mm": "毫米", "ml": "毫升", "ms": "毫秒",
          "mg": "毫克", "℃": "摄氏度", "°C": "摄氏度", "°": "度"}  # fmt: skip

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUMERIC = re.compile(
    rf"""
    (?P<date>(?<!\d)\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}(?![\d.]))
  | (?P<phone>(?<!\d)(?:\d{{3,4}}-\d{{7,8}}|\d{{3}}-\d{{3,4}}-\d{{4}})(?![\d-]))
  | (?P<chain>(?<![\d-])\d+(?:-\d+){{2,}}(?![\d-]))
  | (?P<time>(?<!\d)(?P<h>\d{{1,2}}):(?P<m>\d{{2}})(?::(?P<s>\d{{2}}))?(?!\d))
  | (?P<ratio>(?<!\d)(?P<ra>\d+):(?P<rb>\d+)(?!\d))
  | (?P<vs>(?<!\d)(?P<va>\d+)(?P<v>[vV])(?P<vb>\d+)(?!\d))
  | (?P<frac>(?<![\d/])(?P<fa>\d+)/(?P<fb>\d+)(?![\d/]))
  | (?P<range>(?<![\d.])(?P<r1>{_NUM})(?P<rpct1>%?)\s*[-~～—–至](?P<r2>{_NUM})(?P<rpct>%?)(?![\d]))
  | (?P<atom>(?<![A-Za-z0-9.])(?P<sign>[-+−])?(?P<cur>[¥$€£])?(?P<num>{_NUM})(?P<pct>%)?
       (?P<unit>(?:km|kg|cm|mm|ml|ms|mg)(?![A-Za-z])|℃|°C|°)?(?![\d]))
  | (?P<bare>\d+)
    """,
    re.VERBOSE,
)


def _freeze(s: str) -> str:
    return s.replace("一", FROZEN_YI)


def digits(number: str, *, yao: bool = False) -> str:
    """Digit-by-digit reading; ``yao`` reads 1 as 幺 (phone numbers and codes)."""
    one = "幺" if yao else FROZEN_YI
    return "".join(one if d == "1" else _DIGITS[int(d)] for d in number if d.isdigit())


def cardinal(value: int, *, liang: bool = False, sandhi_one: bool = True) -> str:
    """Read an integer as a quantity: 2026 → 两千零二十六, 110 → 一百一十, 10 → 十.

    ``liang``: the number stands before a measure word, so a bare 2 is 两. A leading 2
    before 千/万/亿 is always 两, before 百 too (两百). Only a leading 一 followed by a unit
    (一百, 一千, 一万) or a measure word keeps ordinary 一 (sandhi applies); every other 一
    is frozen as yi1.
    """
    if value < 0:
        return "负" + cardinal(-value, liang=liang, sandhi_one=sandhi_one)
    if value == 0:
        return "零"
    if value >= 10**16:
        return digits(str(value))

    def below_10k(n: int, lead: bool) -> str:
        out: list[str] = []
        zero = False
        for power, unit in ((3, "千"), (2, "百"), (1, "十"), (0, "")):
            d = (n // 10**power) % 10
            if d == 0:
                zero = bool(out)
                continue
            if zero:
                out.append("零")
                zero = False
            first = lead and not out
            if d == 2 and (unit == "千" or (first and unit == "百")):
                out.append("两" + unit)
            elif d == 1 and unit == "十" and first:
                out.append("十")  # 10-19 at the start: 十五, 十万
            else:
                out.append(_DIGITS[d] + unit)
        return "".join(out)

    groups: list[tuple[int, str]] = []
    rest = value
    for unit in ("", "万", "亿", "万亿"):
        groups.append((rest % 10_000, unit))
        rest //= 10_000
        if not rest:
            break
    groups.reverse()
    text = ""
    for i, (g, unit) in enumerate(groups):
        if g == 0:
            continue
        if text and (g < 1000 or groups[i - 1][0] == 0):
            text += "零"
        part = below_10k(g, lead=not text)
        if not text and g == 2 and unit:
            part = "两"
        text += part + unit
    text = re.sub("零+", "零", text).rstrip("零") or "零"
    if value == 2 and liang:
        text = "两"
    # freeze every 一 but a leading one before a unit / measure word
    head, tail = text[0], text[1:]
    if head == "一" and (tail[:1] in ("百", "千", "万", "亿") or (not tail and sandhi_one)):
        return head + _freeze(tail)
    return _freeze(text)


def _decimal(num: str, *, liang: bool = False, sandhi_one: bool = True) -> str:
    num = num.replace(",", "")
    whole, _, frac = num.partition(".")
    if frac:
        return cardinal(int(whole), sandhi_one=False) + "点" + digits(frac)
    return cardinal(int(whole), liang=liang, sandhi_one=sandhi_one)


def _measure_after(text: str, pos: int) -> bool:
    """A measure word or a magnitude (万, 千...) follows: 2 reads 两, 1 keeps its sandhi."""
    rest = text[pos : pos + 3].lstrip()
    return bool(rest) and (
        rest[0] in MEASURES_1 or rest[0] in "百千万亿" or rest.startswith(_MEASURES_2)
    )


def _read_int(num: str, text: str, start: int, end: int) -> str:
    """An integer in context (years, months, ordinals, codes, slang, quantities)."""
    after = text[end : end + 2]
    before = text[max(0, start - 8) : start]
    measure = _measure_after(text, end)
    if before.endswith("第"):
        return _freeze(cardinal(int(num)))
    if len(num) > 1 and num[0] == "0":
        return digits(num, yao=True)
    if after.startswith("年") and len(num) == 4:
        return digits(num)
    if after.startswith("月") and 1 <= int(num) <= 12:
        return _freeze(cardinal(int(num)))
    if after[:1] in ("日", "号", "楼", "路") and int(num) <= 31:
        return _freeze(cardinal(int(num)))
    if after.startswith("点") and int(num) <= 24:
        return _freeze(cardinal(int(num), liang=True))
    if after.startswith("折") and len(num) == 2 and num[1] != "0":
        return digits(num)  # 95折, 88折: 九五折, 八八折 (a discount is said digit by digit)
    service = num in _SERVICE or (num in _SERVICE_CUED and _DIALS.search(before) is not None)
    topup = num == "648" and _TOPUP.search(before) is not None  # 充了648: 六四八
    if not measure and (_SLANG.fullmatch(num) or num in _EMERGENCY or service or topup):
        return digits(num, yao=num in _EMERGENCY or service)
    long_code = len(num) >= 11 or (len(num) >= 7 and int(num) % 1000 != 0)
    if (
        long_code
        or (_CODE_BEFORE.search(before) and not measure)  # 手机3999元: a price
        or _CODE_WORDS.match(after + text[end + 2 : end + 4])
    ):
        return digits(num, yao=True)
    return cardinal(int(num), liang=measure, sandhi_one=measure)


def _read_match(m: re.Match[str]) -> str:
    text, start, end = m.string, m.start(), m.end()
    kind = m.lastgroup
    g = m.group
    if kind == "date":
        y, mo, d = re.split(r"[-/.]", g("date"))
        if 1 <= int(mo) <= 12 and 1 <= int(d) <= 31:
            return f"{digits(y)}年{_freeze(cardinal(int(mo)))}月{_freeze(cardinal(int(d)))}日"
        return digits(g("date"), yao=True)
    if kind == "phone":
        return digits(g("phone"), yao=True)
    if kind == "chain":  # 取件码3-2-1108 三杠二杠幺幺零八; KDA 10-2-5 十杠二杠五
        parts = g("chain").split("-")
        if _CODE_BEFORE.search(text[max(0, start - 8) : start]):
            return "杠".join(digits(part, yao=True) for part in parts)
        return "杠".join(
            _freeze(cardinal(int(p))) if len(p) <= 2 and p[:1] != "0" else digits(p, yao=True)
            for p in parts
        )
    if kind == "time":
        h, mi, s = int(g("h")), int(g("m")), g("s")
        if h <= 24 and mi < 60:
            out = _freeze(cardinal(h, liang=True)) + "点"
            if mi:
                out += ("零" if mi < 10 else "") + _freeze(cardinal(mi))
                out += "分" if s else ""
            if s and int(s):
                out += ("" if mi else "零") + _freeze(cardinal(int(s))) + "秒"
            return out
        return f"{_freeze(cardinal(h))}比{_freeze(cardinal(mi))}"
    if kind == "ratio":
        return f"{_freeze(cardinal(int(g('ra'))))}比{_freeze(cardinal(int(g('rb'))))}"
    if kind == "vs":
        return f"{_freeze(cardinal(int(g('va'))))}{g('v').upper()}{_freeze(cardinal(int(g('vb'))))}"
    if kind == "frac":
        top, bottom = int(g("fa")), int(g("fb"))
        dated = _DATE_BEFORE.search(text[max(0, start - 6) : start]) is not None
        if dated and 1 <= top <= 12 and 1 <= bottom <= 31:  # 圣诞节是12/25
            return f"{_freeze(cardinal(top))}月{_freeze(cardinal(bottom))}日"
        return f"{_freeze(cardinal(bottom))}分之{_freeze(cardinal(top))}"
    if kind == "range":
        a, b = g("r1"), g("r2")
        if g("rpct") or g("rpct1"):  # 10-20%, 10%-20%: 百分之十到百分之二十
            return f"百分之{_decimal(a)}到百分之{_decimal(b)}"
        year = text[end : end + 1] == "年" and len(a) == len(b) == 4
        if year:
            return f"{digits(a)}到{digits(b)}"
        if _CODE_BEFORE.search(text[max(0, start - 8) : start]):  # 取件码是3-2: a code
            return "杠".join(digits(part, yao=True) for part in re.split(r"\s*[-~～—–至]", g(0)))
        # 比分3-2, 3-2赢了, 你已经0-8了 (a score or a K/D line: 比, never 到)
        score = (
            "比分" in text[max(0, start - 4) : start]
            or text[end : end + 1] in _SCORE_AFTER
            or text[end : end + 1] == "了"
        )
        if score and "." not in a + b:  # 比分3-2, 3-2赢了: a score, 三比二
            return f"{_freeze(cardinal(int(a)))}比{_freeze(cardinal(int(b)))}"
        measure = _measure_after(text, end)
        return f"{_decimal(a, liang=measure)}到{_decimal(b, liang=measure)}"
    if kind == "atom":
        num, sign, cur, pct, unit = g("num"), g("sign"), g("cur"), g("pct"), g("unit")
        prefix = {"+": "加", "-": "负", "−": "负"}.get(sign or "", "")
        if pct:
            return prefix + "百分之" + _decimal(num)
        if cur:
            amount = num.rstrip("0").rstrip(".") if "." in num else num
            return prefix + _decimal(amount, liang=True) + _CURRENCY[cur]
        if unit:
            return prefix + _decimal(num, liang=True) + _UNITS[unit]
        if not prefix and re.fullmatch(r"[1-9]\.[1-9]", num) and text[end : end + 1] == "折":
            return digits(num.replace(".", ""))  # 9.5折, 8.8折: 九五折, 八八折 (as 95折 is)
        if "." in num or "," in num:
            return prefix + _decimal(num, liang=_measure_after(text, end))
        if prefix:
            return prefix + _freeze(cardinal(int(num)))
        return _read_int(num, text, start, end)
    return digits(g(0))


def _zh_context(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` read in Mandarin? The nearer letter on either side decides."""

    def nearest(indices: range) -> tuple[int, bool | None]:
        for dist, i in enumerate(indices):
            c = text[i]
            if HAN_RE.match(c) or c == FROZEN_YI:
                return dist, True
            if c in CJK_PUNCT and dist == 0:
                return dist, True
            if c.isascii() and c.isalpha():
                return dist, False
        return len(text), None

    ld, left = nearest(range(start - 1, -1, -1))
    rd, right = nearest(range(end, len(text)))
    if left is None and right is None:
        return True
    if right is None or (left is not None and ld <= rd):
        return bool(left)
    return bool(right)


# chat's multipliers and "or more": 1w 一万, 3k 三千 (a capital K stays a letter: 4K 屏),
# 10w+ 十万加, 99+ 九十九加; + and = between numbers are 加 and 等于 (1+1=2)
_CHAT_AMOUNT = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([wWk]?)\+?(?![A-Za-z0-9])")
_OPERATOR = re.compile(r"(?<=\d)[+=](?=\d)")


def _read_numbers(text: str) -> str:
    def chat(m: re.Match[str]) -> str:
        whole = m.group(0)
        if not (m.group(2) or whole.endswith("+")) or not _zh_context(m.string, *m.span()):
            return whole
        return (
            m.group(1)
            + {"w": "万", "k": "千"}.get(m.group(2).lower(), "")
            + ("加" if whole.endswith("+") else "")
        )

    def repl(m: re.Match[str]) -> str:
        if not _zh_context(m.string, m.start(), m.end()):
            return m.group(0)
        return _read_match(m)

    def operator(m: re.Match[str]) -> str:
        if not _zh_context(m.string, *m.span()):
            return m.group(0)
        return "加" if m.group(0) == "+" else "等于"

    text = _OPERATOR.sub(operator, _CHAT_AMOUNT.sub(chat, text))
    return _NUMERIC.sub(repl, text)


# A model number or code after a Latin word inside a Mandarin sentence is said in Mandarin:
# iPhone 15 十五, PS5 五, iOS 17.2 十七点二, RTX 4090 四零九零, 京A12345 幺二三四五.
# The number's nearer letter is Latin, so _zh_context calls it English (espeak said
# "fifteen", and the digits-only path 一五); an English sentence (I have 3 apples) is left
# alone: the Latin word must follow a hanzi, a CJK mark or the start of the text.
_MODEL_NUMBER = re.compile(
    rf"(?:(?<=^)|(?<=[{HAN}{''.join(CJK_PUNCT)}]))(?P<word>[A-Za-z]+)(?P<sep>[ -]?)"
    rf"(?P<num>\d+(?:\.\d+)?)(?![\d.:%/A-Za-z])"
)


def _model_number(m: re.Match[str]) -> str:
    word, num = m.group("word"), m.group("num")
    if "." in num:
        reading = _freeze(_decimal(num))
    elif len(num) <= 3 and not (len(num) > 1 and num[0] == "0"):
        reading = _freeze(cardinal(int(num), sandhi_one=False))
    else:  # 4090, 007, A12345: digit by digit; a one-letter prefix makes it a code (幺)
        reading = digits(num, yao=len(word) == 1 or len(num) >= 5 or num[0] == "0")
    return f"{word}{' ' if m.group('sep') else ''}{reading}"


_FULLWIDTH = {c: chr(ord(c) - 0xFEE0) for c in map(chr, range(0xFF10, 0xFF1A))}
_FULLWIDTH |= {c: chr(ord(c) - 0xFEE0) for c in map(chr, range(0xFF21, 0xFF3B))}
_FULLWIDTH |= {c: chr(ord(c) - 0xFEE0) for c in map(chr, range(0xFF41, 0xFF5B))}
_FULLWIDTH |= {"％": "%", "＋": "+", "￥": "¥", "＄": "$", "－": "-", "／": "/"}
_NUMBER_SIGN = re.compile(r"(?<![A-Za-z])[Nn][Oo]\.\s?(\d+)(?![\d.])")
_FW_BETWEEN_DIGITS = re.compile(r"(?<=\d)[：．～](?=\d)")
_HAHA = re.compile(r"(?<![A-Za-z])[hH]{2,}(?![A-Za-z])")
_ACRONYM = re.compile(r"(?<![A-Za-z])([A-Z]{2,5})(?![A-Za-z])")
# chat abbreviations written in lower case and said letter by letter (yyds 永远的神 → Y Y D S)
_LOWER_RUN = re.compile(r"(?<![A-Za-z])([a-z]{2,5})(?![A-Za-z])")
_SPELLED_LOWER = {
    "yyds", "awsl", "xswl", "dbq", "nsdd", "kswl", "zqsg", "bdjw", "srds", "nbcs", "plmm",
    "xjj", "xgg", "yysy", "xdm", "nb", "cp", "pk", "gg", "dd", "bgm", "npc", "ssr", "dlc",
}  # fmt: skip
# Capitals that Mandarin chat writes but says as one English word (打BOSS, 立FLAG, hold住,
# get到, 好LOW, 有BUG); every other run of 2-5 capitals is spelled (APP, GDP, NPC, YYDS).
_SPOKEN_AS_WORD = {"OK": "OK"} | {
    w: w.lower()
    for w in (
        "BOSS", "FLAG", "HOLD", "GET", "LOW", "HIGH", "BUG", "MAX", "SOLO", "CARRY",
        "NICE", "COOL", "SHOW", "FANS", "WIFI", "CUE", "RAP", "PICK",
    )
}  # fmt: skip


def prepare(text: str, *, force: bool = False) -> str:
    """Normalise mixed text for the Mandarin front end (see the module docstring).

    Text without hanzi is left alone (espeak reads it) unless ``force``.
    """
    if not force and not HAN_RE.search(text):
        return text
    text = "".join(_FULLWIDTH.get(c, c) for c in text).replace("〇", "零")  # 二〇二五年
    text = _FW_BETWEEN_DIGITS.sub(lambda m: {"：": ":", "．": ".", "～": "~"}[m.group(0)], text)

    def number_sign(m: re.Match[str]) -> str:  # NO.1 主播: "number one"; No.7 球衣: 7号
        if not _zh_context(m.string, m.start(), m.end()):
            return m.group(0)
        return "number one " if m.group(1) == "1" else f"{m.group(1)}号"

    text = _NUMBER_SIGN.sub(number_sign, text)
    if re.search(r"\d", text):
        text = _read_numbers(_MODEL_NUMBER.sub(_model_number, text))

    def haha(m: re.Match[str]) -> str:
        if not _zh_context(m.string, m.start(), m.end()):
            return m.group(0)
        return "哈哈" if len(m.group(0)) == 2 else "哈哈哈"

    def spell(m: re.Match[str]) -> str:
        word = m.group(1)
        if not _zh_context(m.string, m.start(), m.end()):
            return word
        if word in _SPOKEN_AS_WORD:
            return _SPOKEN_AS_WORD[word]
        return " ".join(LETTER_A if c == "A" else c for c in word)  # APP: eɪ piː piː

    def spell_lower(m: re.Match[str]) -> str:
        if m.group(1) not in _SPELLED_LOWER or not _zh_context(m.string, m.start(), m.end()):
            return m.group(0)
        return m.group(1).upper()  # spelled by _ACRONYM below

    text = _HAHA.sub(haha, text)
    text = _LOWER_RUN.sub(spell_lower, text)
    return _ACRONYM.sub(spell, text)
