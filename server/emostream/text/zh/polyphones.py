"""Context rules for Mandarin polyphones that no dictionary phrase covered.

pypinyin falls back to a character's most common reading where no phrase in its dictionary
covers it; these rules look one word either side (they do not parse) and return the reading a
Putonghua speaker says, or None to keep pypinyin's.
"""

from __future__ import annotations

from collections.abc import Callable

from emostream.text.zh.prepare import HAN_RE, MEASURES_1
from emostream.text.zh.types import Syllable

# nouns that get dry: 衣服干了 gān (我干了, 干了这杯 stay gàn)
_GETS_DRY = {"衣服", "头发", "裤子", "袜子", "鞋", "鞋子", "被子", "毛巾", "床单", "油漆", "墙",
             "地", "地面", "嘴", "嘴唇", "皮肤", "眼睛", "嗓子", "喉咙", "颜料", "水", "墨水"}  # fmt: skip
_NUMERAL_CHARS = set("一二两三四五六七八九十百千万几每这那哪半弌幺")
_COUNTING_ZHONG = _NUMERAL_CHARS | set("多各某")
_SUBJECTS = {"我", "你", "他", "她", "它", "我们", "你们", "他们", "她们", "咱们", "大家", "谁",
             "就", "还", "也", "都", "总", "可", "又", "真", "非", "必须", "总得", "肯定"}  # fmt: skip


def single_char_reading(
    ch: str, prev: str, nxt: str, prev_word: str, next_word: str, *, alone: bool, initial: bool
) -> str | None:
    """Toned pinyin for a polyphone no dictionary phrase covered, or None for pypinyin's.

    ``alone``: the character is a jieba word by itself; ``initial``: it starts its word.
    """
    if ch == "得":
        if nxt == "嘞":  # 得嘞 dé lei, "right away"
            return "de2"
        if initial and not alone:
            return None  # 得到, 得分: pypinyin's dé
        verb_next = (
            next_word and HAN_RE.match(next_word[0]) and next_word[0] not in "了到过着的分奖"
        )
        if alone and prev_word in _SUBJECTS and next_word[:1] in ("了", "到"):
            return "de2"  # 我得了第一名: got
        if alone and prev_word in _SUBJECTS and verb_next:
            return "dei3"  # 你得去: must
        return "de5"
    if ch == "地":
        if not initial:
            return None
        counted = prev_word[:1] in ("这", "那", "哪", "每", "某") and prev_word[-1:] in MEASURES_1
        noun_before = counted or prev_word[-1:] in "土草此各本外该田满场这那"
        if len(prev_word) >= 2 and next_word and not noun_before:
            return "de5"  # 高兴地说, 慢慢地走: adverbial particle
        return "di4" if alone else None
    if ch == "长":  # 长着一张圆脸: zhǎng (has, grows)
        return "zhang3" if nxt and nxt in "大高胖出成满得着" else "chang2"
    if ch == "还":
        # huán (give back) before what is returned or to whom, and after 没/不/要/借…;
        # otherwise the adverb hái (还行, 还能, 还差, 还早: pypinyin's lone 还 is huán)
        if nxt and nxt in "钱书债款贷账":
            return "huan2"
        if next_word in ("你", "我", "他", "她", "给你", "给我", "回来", "回去"):
            return "huan2"
        after_verb = bool(prev) and prev in "没不要得去来想借快先"  # ("" is in every str)
        after_verb = after_verb or prev_word in ("早", "晚")  # 早还晚还: both huán (今早还 hái)
        if after_verb or prev_word in ("没有", "已经", "按时", "准时"):
            return "huan2" if not nxt or nxt not in "是在有要会没不很" else "hai2"
        return "hai2"
    if ch == "重":  # 重来, 重开一局, 重启, 重播: again (chóng); 很重, 重要 stay zhòng
        return "chong2" if nxt and nxt in "新复来做写装开启播玩录发选" else None
    if ch == "炸":  # 炸鸡, 炸薯条, 油炸: to deep-fry (zhá); 炸了, 爆炸 stay zhà
        return "zha2" if nxt and nxt in "鸡薯酱糕丸鱼虾串肉油春排" else None
    if ch == "觉":
        return "jiao4" if prev and prev in "睡一午着" else None
    if ch == "只":
        return "zhi1" if prev and prev in _NUMERAL_CHARS else "zhi3"
    if ch == "行":
        if prev and prev in _NUMERAL_CHARS - set("这那每") and (not nxt or nxt not in "人"):
            return "hang2"
        return None
    if ch == "为":
        return "wei2" if prev and prev in "成作认以称视变选" else None
    if ch == "着":
        # 睡着了, 找不着, 用得着: reached (zháo); durative 着 never follows 不 or 得
        return "zhao2" if prev and prev in "睡找猜够不得" else "zhe5" if alone else None
    if ch == "数":  # 数了一下, 数一下, 数着日子, 数星星: to count (shǔ); 数学, 数字 are words
        return "shu3" if alone or (nxt and nxt in "了一到着过星钱") else None
    if ch == "教":
        return "jiao1" if alone else None
    if ch == "种":  # 很多种花, 几种: kinds (zhǒng); 种花, 种了: to plant (zhòng)
        if prev and prev in _COUNTING_ZHONG:
            return "zhong3"
        return "zhong4" if nxt and nxt in "树花地菜田草了过得着" else None
    if ch == "盛":  # 盛饭, 盛了一碗: to ladle (chéng); 盛大, 茂盛: shèng
        return "cheng2" if nxt and nxt in "饭汤粥菜水满了一" else None
    if ch == "转":  # 转圈, 转盘, 转悠: to turn round (zhuàn)
        return "zhuan4" if nxt and nxt in "圈盘悠" else None
    if ch == "中":  # 打中, 考中, 他中了大奖, 中奖: hit, won (zhòng)
        hit = bool(prev) and prev in "打猜考射选击命"
        return "zhong4" if hit or (alone and nxt and nxt in "了奖彩标招") else None
    if ch == "干":
        if not alone:
            return None
        if prev_word in _GETS_DRY and (not next_word or next_word in ("了", "吗", "透", "得")):
            return "gan1"  # 衣服干了: dry
        if prev_word[-1:] in _DRIED_FOOD and next_word[:1] not in tuple("活嘛什啥事完"):
            return "gan1"  # 曲奇饼|干, 芒果|干, 小鱼|干: dried food (jieba's cut of 饼干, 果干)
        if nxt and nxt in "什嘛啥活事完得过不吗":
            return "gan4"
        if prev and prev in "很太真挺晒吹烘风变弄":
            return "gan1"
        return None
    if ch == "少":
        return "shao4" if nxt and nxt in "年女爷" else None
    if ch == "量":  # 量一量, 量体温, 量了血压: to measure (liáng); 工作量, 很大的量: liàng
        return "liang2" if alone and next_word[:1] in ("一", "体", "血", "身", "了", "过") else None
    if ch == "缝":  # 缝一下, 缝上, 缝了: to sew (féng); 门缝 stays fèng
        return "feng2" if alone and next_word[:1] in ("一", "好", "上", "补", "了", "个") else None
    if ch == "蒙":  # 我直接蒙了: dazed (mēng); 蒙了一层灰 stays méng
        return "meng1" if alone and next_word == "了" and prev_word in _DAZED_BEFORE else None
    if ch == "露":  # 露了一手, 露一下脸: to show (colloquial lòu); 露水, 暴露 stay lù
        return "lou4" if alone and next_word[:1] in ("了", "一", "个", "馅", "脸", "面") else None
    if ch == "弹":  # 弹琴, 弹一首, 他弹了一下: to play, to flick (tán); 子弹, 弹幕 stay dàn
        verb = alone or (prev and prev in "他她我你它来") or (nxt and nxt in "琴钢吉一了个首着过")
        return "tan2" if verb else None
    if ch == "调":  # 调一下音量, 调高, 调小点: to adjust (tiáo); 调子, 调查 stay diào
        adjust = next_word[:1] in tuple("一高低大小好亮暗") or next_word in _ADJUSTED
        return "tiao2" if alone and adjust else None
    if ch == "假":  # 请了三天假, 放了两周假: time off (jià) after a stretch of days; 假的 stays jiǎ
        return "jia4" if alone and prev_word[-1:] in tuple("天周月年") else None
    if ch == "划":  # 划走, 划一下屏幕, 往上划: to swipe, to row (huá); 计划, 划分 stay huà
        swipe = not nxt or nxt in "走过开船屏动破一掉" or prev_word[-1:] in tuple("上下左右")
        return "hua2" if swipe else None
    if ch == "耶":  # 好耶, 耶耶耶: the cheer yē (pypinyin's lone 耶 is the classical yé)
        return "ye1"
    if ch == "空":  # 空出一块地方, 空出来, 空着: to leave room (kòng); 空了 stays kōng
        return "kong4" if alone and next_word[:1] in ("出", "着") else None
    if ch == "切":  # 切换, 切歌, 切菜, 切一下: to cut, to switch (qiē; pypinyin's lone 切 is qiè)
        # 一切, 亲切, 切实, 切记 are dictionary phrases (qiè); 切尔西, 切尼 are names (qiè);
        # a 切 with no hanzi after it is the scoffing interjection (切，谁信啊: qiè)
        cut = initial and bool(nxt) and HAN_RE.match(nxt) is not None and nxt not in _QIE_NAMES
        return "qie1" if cut and prev != "一" else None
    if ch == "钻":  # 刷了5000钻, 一颗钻: diamonds (zuàn); 钻进去, 钻研 stay zuān
        counted = bool(prev_word) and prev_word[-1] in _NUMERAL_CHARS | set("颗枚拉")
        return "zuan4" if alone and counted else None
    if ch == "曲":  # 单曲, 新曲, 主题曲, 片尾曲, 一曲, 曲风, 曲库: a song (qǔ, not qū)
        # 歌曲, 弯曲, 曲线 are dictionary phrases; 九曲, 那曲 (places) keep pypinyin's qū
        song = bool(prev) and prev in _SONG_BEFORE and (alone or not initial)
        return "qu3" if song or (initial and bool(nxt) and nxt in "风库名单") else None
    if ch == "的":  # 打的回家, 打的去机场: to take a taxi (dǎ dī); 我打的 stays de
        return "di1" if alone and prev_word == "打" and next_word in _TAXI_TO else None
    return None


_SONG_BEFORE = set("单新名古恋编题尾头唱乐想事宾部兴眠首歌舞奏琴打一行")  # ...曲 is a song
_QIE_NAMES = set("尔尼诺沃夫斯拉利克萨齐肤")  # 切尔西, 切尼, 切诺基, 切肤: qiè
_DRIED_FOOD = set("饼果鱼肉豆笋菜虾卜萄枣薯梅贝腐杏柿椒")  # ...干 is dried food (gān)
_TAXI_TO = {"去", "回", "回家", "回去", "回来"}  # 打的过 is 打得过 written with 的: not a taxi


def carried_bei(syls: list[Syllable], word: str, next_word: str) -> list[Syllable]:
    """背着书包, 背着孩子: carried on the back (bēi); 背着手, 背着他 (behind his back) stay
    bèi."""
    if word == "背着" and (next_word == "书包" or next_word[:1] in _CARRIED):
        syls[0].base, syls[0].tone = "bei", 1
    return syls


_CARRIED = set("包孩娃宝行箱袋筐篓枪")
_ADJUSTED = {"音量", "声音", "亮度", "温度", "音调", "频道", "闹钟", "时间", "画质", "位置",
             "座椅", "参数", "设置", "麦克风", "麦"}  # fmt: skip


_DAZED_BEFORE = {"我", "他", "她", "直接", "都", "全", "彻底", "有点", "完全", "当场", "瞬间", "一下",
                 "人"}  # fmt: skip
_DEGREE = {"很", "特别", "真", "挺", "太", "非常", "不", "够", "最", "好", "超", "蛮", "多",
           "特", "贼"}  # fmt: skip


def authentic(syls: list[Syllable], word: str, prev_word: str) -> list[Syllable]:
    """地道 after a degree word is "authentic" (dìdao); 挖地道, 地道战 stay dìdào (tunnel)."""
    if word == "地道" and prev_word in _DEGREE and len(syls) == 2:
        syls[1].tone = 5
    return syls


def counted_zhong(syls: list[Syllable], prev_word: str) -> list[Syllable]:
    """种 after a numeral or 多/各 is "kinds" (很多种花 zhǒng), also where the word is 种花
    (to plant flowers, zhòng)."""
    if syls and syls[0].char == "种" and prev_word[-1:] in _COUNTING_ZHONG:
        syls[0].base, syls[0].tone = "zhong", 3
    return syls


def shed_blood(words: list[tuple[str, list[Syllable]]], is_phrase: Callable[[str], bool]) -> None:
    """血 said on its own as the blood someone sheds is xiě, the colloquial reading (审音表:
    口语多单用; 现汉's examples 流了点儿血, 吐了两口血): as the object of a verb of bleeding, past
    an aspect particle or an amount (流了好多血, 抽了三管血, 溅了一身血), or after 是 (满脸都是血).
    Everywhere else it is xuè: compounds (流血, 血条, 回血), the noun as a topic or owned (他的血,
    血的味道), and a game's health, which players say xuè (加点血, 只剩一丝血, 没血了).

    ``words`` are a phrase's (text, syllables); ``is_phrase`` tells a dictionary phrase, whose
    血 is left alone; a longer word that is none (jieba's 流了血) is looked into.
    """
    for i, (text, syls) in enumerate(words):
        if not syls or syls[-1].char != "血" or syls[-1].base != "xue":
            continue
        if text != "血" and (is_phrase(text) or is_phrase(text[-2:])):
            continue
        before = [t for t, _ in words[max(0, i - 4) : i]] + [text[:-1]]
        for token in reversed(before):
            bare = token.rstrip("了过着")
            if not bare or all(c in _AMOUNT for c in bare):
                continue
            if bare[-1] in _BLEEDING or bare[-1] == "是":
                syls[-1].base, syls[-1].tone = "xie", 3
            break


_BLEEDING = set("流吐咳咯呕出冒淌渗滴喷溅沾抽放见")  # verbs whose object is shed blood
_AMOUNT = (
    set("零一二两三四五六七八九十百千万几半弌好多少些点大满很不")
    | MEASURES_1
    | set("身脸手嘴地滴管丝")
)
