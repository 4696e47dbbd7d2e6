"""A deterministic, varied English and Mandarin prompt set for the teacher corpus.

No text data set can be downloaded, so sentences are composed from templates and word lists
written for this project: statements, questions, exclamations, commands, lists, numbers,
times and dates, dialogue-style replies (the product reads live-chat messages aloud) and
emotional lines, with phonetically varied vocabulary. ``generate(lang, n, seed)`` is pure
and reproducible; the committed text files under ``models/corpus/text/`` are its output.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# ---------------------------------------------------------------- English word lists
EN_NAMES = [
    "Alice",
    "Brian",
    "Chloe",
    "Daniel",
    "Emma",
    "Felix",
    "Grace",
    "Henry",
    "Isla",
    "Jack",
    "Kevin",
    "Laura",
    "Mason",
    "Nora",
    "Oliver",
    "Priya",
    "Quentin",
    "Rosa",
    "Samuel",
    "Tara",
    "Umar",
    "Violet",
    "Walter",
    "Xavier",
    "Yusuf",
    "Zoe",
    "Marco",
    "Hannah",
    "Leo",
    "Mei",
]
EN_PLACES = [
    "the library",
    "the train station",
    "the old harbor",
    "the city park",
    "the kitchen",
    "the mountain cabin",
    "the coffee shop",
    "the museum",
    "the airport",
    "the garden",
    "the bridge",
    "the school gym",
    "the market",
    "the north tower",
    "the beach",
    "the hospital",
    "the bakery",
    "the studio",
    "the river bank",
    "the office",
]
EN_OBJECTS = [
    "a yellow umbrella",
    "the blue notebook",
    "three fresh oranges",
    "an old violin",
    "the silver key",
    "a heavy box of books",
    "the birthday cake",
    "a map of the island",
    "the broken clock",
    "two tickets",
    "a cup of jasmine tea",
    "the wooden chair",
    "a strange letter",
    "the red bicycle",
    "a bag of groceries",
    "the photo album",
    "a pair of gloves",
    "the quarterly report",
    "a jar of honey",
    "the television remote",
]
EN_VERBS_PAST = [
    "found",
    "lost",
    "carried",
    "painted",
    "fixed",
    "borrowed",
    "returned",
    "dropped",
    "packed",
    "forgot",
    "noticed",
    "wrapped",
    "measured",
    "shared",
    "cleaned",
    "ordered",
    "photographed",
    "hid",
    "opened",
    "delivered",
]
EN_ADJ = [
    "quiet",
    "bright",
    "chilly",
    "crowded",
    "peaceful",
    "gloomy",
    "cheerful",
    "enormous",
    "tiny",
    "ancient",
    "modern",
    "noisy",
    "gentle",
    "rough",
    "smooth",
    "golden",
    "misty",
    "busy",
    "lonely",
    "fragrant",
]
EN_TIMES = [
    "this morning",
    "last night",
    "yesterday afternoon",
    "on Monday",
    "at dawn",
    "after lunch",
    "before midnight",
    "every weekend",
    "in the spring",
    "at half past seven",
    "around noon",
    "early tomorrow",
]
EN_FEELINGS = [
    "happy",
    "nervous",
    "excited",
    "tired",
    "surprised",
    "grateful",
    "worried",
    "proud",
    "confused",
    "relieved",
    "angry",
    "curious",
    "disappointed",
    "calm",
    "thrilled",
]
EN_TOPICS = [
    "the weather",
    "your new game",
    "the final match",
    "this recipe",
    "the music tonight",
    "that movie",
    "the science project",
    "my stream schedule",
    "the puzzle",
    "the travel plans",
    "the new update",
    "the boss fight",
    "the art contest",
    "the book club",
    "the concert",
]
EN_ADVERBS = [
    "slowly",
    "quickly",
    "carefully",
    "suddenly",
    "quietly",
    "happily",
    "finally",
    "barely",
    "gently",
]


def _en_templates(r: random.Random) -> Callable[[], str]:
    def pick(xs: tuple[str, ...] | list[str]) -> str:
        return r.choice(xs)

    def cap(s: str) -> str:
        return s[0].upper() + s[1:]

    def num() -> str:
        return str(r.choice([r.randint(2, 20), r.randint(21, 99), r.randint(100, 2500)]))

    forms: list[Callable[[], str]] = [
        lambda: (
            f"{pick(EN_NAMES)} {pick(EN_VERBS_PAST)} {pick(EN_OBJECTS)} at {pick(EN_PLACES)}"
            f" {pick(EN_TIMES)}."
        ),
        lambda: (
            f"Have you seen {pick(EN_OBJECTS)}? I think {pick(EN_NAMES)} left it near "
            f"{pick(EN_PLACES)}."
        ),
        lambda: f"{cap(pick(EN_PLACES))} was {pick(EN_ADJ)} and {pick(EN_ADJ)} {pick(EN_TIMES)}.",
        lambda: f"Wow, I can't believe {pick(EN_NAMES)} {pick(EN_VERBS_PAST)} {pick(EN_OBJECTS)}!",
        lambda: f"Thanks so much, {pick(EN_NAMES)}! That means a lot to me.",
        lambda: f"Honestly, I'm a little {pick(EN_FEELINGS)} about {pick(EN_TOPICS)}.",
        lambda: f"Why did {pick(EN_NAMES)} go to {pick(EN_PLACES)} {pick(EN_TIMES)}?",
        lambda: f"Please bring {pick(EN_OBJECTS)} and {pick(EN_OBJECTS)} to {pick(EN_PLACES)}.",
        lambda: f"We need {num()} chairs, {num()} plates, and {num()} candles for the party.",
        lambda: (
            f"The train leaves at {r.randint(1, 12)}:{r.choice(['05', '15', '30', '45'])}"
            f" and arrives {r.randint(2, 59)} minutes later."
        ),
        lambda: (
            f"{pick(EN_NAMES)} {pick(EN_ADVERBS)} {pick(EN_VERBS_PAST)} {pick(EN_OBJECTS)},"
            f" then smiled."
        ),
        lambda: f"Is it true that {pick(EN_PLACES)} is closed {pick(EN_TIMES)}?",
        lambda: f"Oh no, I {pick(EN_VERBS_PAST)} {pick(EN_OBJECTS)} again!",
        lambda: f"Hey {pick(EN_NAMES)}, welcome back to the stream! How was {pick(EN_TOPICS)}?",
        lambda: f"Good question! {cap(pick(EN_TOPICS))} starts {pick(EN_TIMES)}, so stay tuned.",
        lambda: f"If you ask me, {pick(EN_TOPICS)} was {pick(EN_ADJ)} but a bit too long.",
        lambda: f"That's amazing, {pick(EN_NAMES)}! I'm so {pick(EN_FEELINGS)} for you.",
        lambda: f"Stop right there. Don't touch {pick(EN_OBJECTS)}!",
        lambda: f"I'm sorry to hear that. Losing {pick(EN_OBJECTS)} must feel awful.",
        lambda: f"Ugh, {pick(EN_PLACES)} smells terrible {pick(EN_TIMES)}.",
        lambda: (
            f"Wait, what? {pick(EN_NAMES)} and {pick(EN_NAMES)} {pick(EN_VERBS_PAST)} "
            f"{pick(EN_OBJECTS)}?"
        ),
        lambda: (
            f"On {r.choice(['March', 'June', 'August', 'October', 'December'])} "
            f"{r.randint(1, 28)}, {r.randint(1990, 2030)}, the {pick(EN_ADJ)} festival began."
        ),
        lambda: (
            f"First open the door, then check {pick(EN_OBJECTS)}, and finally call "
            f"{pick(EN_NAMES)}."
        ),
        lambda: f"The price went up by {r.randint(2, 60)} percent, which is {pick(EN_ADJ)} news.",
        lambda: f'{pick(EN_NAMES)} whispered, "I think someone is following us."',
        lambda: (
            f"Could you speak a little more {pick(['slowly', 'loudly', 'softly', 'clearly'])},"
            f" please?"
        ),
        lambda: f"My favorite thing about {pick(EN_PLACES)} is the {pick(EN_ADJ)} view.",
        lambda: f"Yes! We finally beat the level after {num()} tries!",
    ]
    return lambda: r.choice(forms)()


# ---------------------------------------------------------------- Mandarin word lists
ZH_NAMES = [
    "小明",
    "小红",
    "王老师",
    "李阿姨",
    "张先生",
    "陈医生",
    "刘同学",
    "赵经理",
    "孙奶奶",
    "周师傅",
    "吴小姐",
    "郑教授",
    "林林",
    "高飞",
    "马丽",
]
ZH_PLACES = [
    "图书馆",
    "火车站",
    "公园",
    "厨房",
    "山顶",
    "咖啡店",
    "博物馆",
    "机场",
    "花园",
    "大桥",
    "体育馆",
    "菜市场",
    "海边",
    "医院",
    "面包店",
    "办公室",
    "学校门口",
    "地铁站",
    "电影院",
    "河边",
]
ZH_OBJECTS = [
    "一把黄色的雨伞",
    "蓝色的笔记本",
    "三个新鲜的橘子",
    "一把旧小提琴",
    "银色的钥匙",
    "一箱书",
    "生日蛋糕",
    "一张地图",
    "坏掉的闹钟",
    "两张电影票",
    "一杯茉莉花茶",
    "木头椅子",
    "一封奇怪的信",
    "红色的自行车",
    "一袋水果",
    "相册",
    "一副手套",
    "季度报告",
    "一罐蜂蜜",
    "遥控器",
]
ZH_VERBS = [
    "找到了",
    "弄丢了",
    "搬走了",
    "修好了",
    "借来了",
    "还回去了",
    "打开了",
    "整理好了",
    "买到了",
    "送来了",
    "忘记了",
    "拍下了",
]
ZH_ADJ = [
    "安静",
    "热闹",
    "明亮",
    "寒冷",
    "温暖",
    "拥挤",
    "干净",
    "漂亮",
    "古老",
    "现代",
    "舒服",
    "神秘",
    "美丽",
    "奇怪",
    "可爱",
]
ZH_TIMES = [
    "今天早上",
    "昨天晚上",
    "上个星期",
    "周末",
    "明天下午",
    "中午",
    "半夜",
    "春天的时候",
    "每天",
    "刚才",
    "去年冬天",
    "下课以后",
]
ZH_FEELINGS = [
    "开心",
    "紧张",
    "激动",
    "累",
    "惊讶",
    "感激",
    "担心",
    "骄傲",
    "困惑",
    "放心",
    "生气",
    "好奇",
    "失望",
    "平静",
]
ZH_TOPICS = [
    "天气",
    "新游戏",
    "决赛",
    "这道菜",
    "今晚的音乐",
    "那部电影",
    "科学作业",
    "直播安排",
    "旅行计划",
    "新版本",
    "画画比赛",
    "读书会",
    "演唱会",
]
ZH_DIGITS = "零一二三四五六七八九"


def _zh_templates(r: random.Random) -> Callable[[], str]:
    def pick(xs: list[str]) -> str:
        return r.choice(xs)

    def num() -> str:
        return str(r.choice([r.randint(2, 20), r.randint(21, 99), r.randint(100, 3000)]))

    forms: list[Callable[[], str]] = [
        lambda: (
            f"{pick(ZH_NAMES)}{pick(ZH_TIMES)}在{pick(ZH_PLACES)}{pick(ZH_VERBS)}{pick(ZH_OBJECTS)}。"
        ),
        lambda: (
            f"你看到{pick(ZH_OBJECTS)}了吗？我觉得{pick(ZH_NAMES)}把它放在{pick(ZH_PLACES)}了。"
        ),
        lambda: f"{pick(ZH_TIMES)}的{pick(ZH_PLACES)}又{pick(ZH_ADJ)}又{pick(ZH_ADJ)}。",
        lambda: f"哇，真不敢相信{pick(ZH_NAMES)}{pick(ZH_VERBS)}{pick(ZH_OBJECTS)}！",
        lambda: f"谢谢你，{pick(ZH_NAMES)}！这对我来说真的很重要。",
        lambda: f"说实话，我对{pick(ZH_TOPICS)}有点{pick(ZH_FEELINGS)}。",
        lambda: f"{pick(ZH_NAMES)}为什么{pick(ZH_TIMES)}去{pick(ZH_PLACES)}？",
        lambda: f"请把{pick(ZH_OBJECTS)}和{pick(ZH_OBJECTS)}带到{pick(ZH_PLACES)}。",
        lambda: f"我们需要{num()}把椅子、{num()}个盘子，还有{num()}根蜡烛。",
        lambda: (
            f"火车{r.randint(1, 12)}点{r.choice(['零五分', '一刻', '半', '四十分'])}出发，"
            f"大概{r.randint(2, 59)}分钟以后到。"
        ),
        lambda: f"{pick(ZH_PLACES)}{pick(ZH_TIMES)}是不是关门了？",
        lambda: f"哎呀，我又{pick(ZH_VERBS)}{pick(ZH_OBJECTS)}！",
        lambda: f"欢迎{pick(ZH_NAMES)}回到直播间！{pick(ZH_TOPICS)}怎么样？",
        lambda: f"好问题！{pick(ZH_TOPICS)}{pick(ZH_TIMES)}开始，大家别走开。",
        lambda: f"太棒了，{pick(ZH_NAMES)}！我真为你感到{pick(ZH_FEELINGS)}。",
        lambda: f"站住，别碰{pick(ZH_OBJECTS)}！",
        lambda: f"听到这个消息我很难过，丢了{pick(ZH_OBJECTS)}一定很不好受。",
        lambda: (
            f"等一下，什么？{pick(ZH_NAMES)}和{pick(ZH_NAMES)}{pick(ZH_VERBS)}{pick(ZH_OBJECTS)}？"
        ),
        lambda: (
            f"{r.randint(1990, 2030)}年{r.randint(1, 12)}月{r.randint(1, 28)}日，"
            f"{pick(ZH_ADJ)}的节日开始了。"
        ),
        lambda: f"价格涨了百分之{r.randint(2, 60)}，这真是{pick(ZH_ADJ)}的消息。",
        lambda: f"{pick(ZH_NAMES)}小声说：“我觉得有人在跟着我们。”",
        lambda: f"你能说得{pick(['慢', '大声', '清楚', '轻'])}一点吗？",
        lambda: f"我最喜欢{pick(ZH_PLACES)}的地方，就是那里很{pick(ZH_ADJ)}。",
        lambda: f"耶！试了{num()}次，我们终于过关了！",
        lambda: f"先打开门，再检查{pick(ZH_OBJECTS)}，最后给{pick(ZH_NAMES)}打电话。",
        lambda: f"如果你问我的话，{pick(ZH_TOPICS)}挺{pick(ZH_ADJ)}的，就是有点长。",
    ]
    return lambda: r.choice(forms)()


def generate(lang: str, n: int, *, seed: int = 0) -> list[str]:
    """``n`` distinct sentences in ``lang`` (``"en"`` or ``"zh"``), deterministic in ``seed``."""
    r = random.Random(f"{lang}:{seed}")
    make = {"en": _en_templates, "zh": _zh_templates}[lang](r)
    seen: set[str] = set()
    out: list[str] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 50 * n + 1000:
            raise RuntimeError(f"could only compose {len(out)} distinct {lang} sentences")
        s = re.sub(r"\s+", " ", make()).strip()
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out
