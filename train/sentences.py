"""A deterministic, varied English and Mandarin prompt set for the teacher corpus.

No text data set can be downloaded, so sentences are composed from templates and word lists
written for this project (:mod:`train.wordlists`). The users are virtual streamers
reading live chat aloud, web apps and voice-chat bots, so the grammars cover chat and danmaku
lines (greetings to named viewers, thanks for gifts, memes, laughter), questions of every kind,
exclamations, commands, narration and explanation, numbers of all kinds (counts, years, dates,
clock times, durations, money, percentages, decimals, ordinals, digit strings, scores, ranges),
English inside Mandarin, Mandarin polyphones, tone sandhi and erhua in context, English
homographs, emotional lines, and very short and long (two or three clause) sentences.

A template is a string with ``{slot}`` fields (filled from a word list or a number maker) and
``[a|b|c]`` alternatives (one is chosen; ``[a|]`` makes ``a`` optional). Mandarin numbers are
written in forms the G2P reads as Mandarin: no ``12:30``, ``3.5`` or ``30%`` (hanzi or units
instead: ``12点半``, ``三点五``, ``百分之三十``).

``generate(lang, n, seed=...)`` is pure and reproducible and never returns a line of the
hand-written held-out evaluation set, ``heldout(lang)``: ``models/corpus/heldout/{lang}.txt``
in the repository (located from this file: ``Path(__file__).resolve().parents[1]``), kept out
of training so that evaluation uses unseen sentence frames and vocabulary.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from train import wordlists as W

HELDOUT_DIR = Path(__file__).resolve().parents[1] / "models" / "corpus" / "heldout"
LANGS = ("en", "zh")

Maker = Callable[[random.Random], str]


def _choice(xs: Sequence[str]) -> Maker:
    return lambda r: r.choice(xs)


def _mix(*parts: tuple[float, Maker]) -> Maker:
    weights = [w for w, _ in parts]
    makers = [m for _, m in parts]
    return lambda r: r.choices(makers, weights)[0](r)


_ALT = re.compile(r"\[([^\[\]]*)\]")
_SLOT = re.compile(r"\{(\w+)(?::(\w+))?\}")


def expand(template: str, slots: Mapping[str, Maker], r: random.Random) -> str:
    """Fill ``[a|b]`` alternatives (innermost first), then ``{slot}`` fields.

    ``{slot:tag}`` fields with the same slot and tag get the same value within one sentence.
    """
    while True:
        s = _ALT.sub(lambda m: r.choice(m.group(1).split("|")), template)
        if s == template:
            break
        template = s
    tagged: dict[tuple[str, str], str] = {}

    def fill(m: re.Match[str]) -> str:
        key, tag = m.group(1), m.group(2)
        if tag is None:
            return slots[key](r)
        if (key, tag) not in tagged:
            tagged[key, tag] = slots[key](r)
        return tagged[key, tag]

    return _SLOT.sub(fill, template)


def template_slots(template: str) -> set[str]:
    return {m.group(1) for m in _SLOT.finditer(template)}


# ================================================================================ English
_EN_ONES = W.words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_EN_MONTHS = W.words(
    "January February March April May June July August September October November December"
)
_EN_DAYS = W.words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_EN_ORD_WORDS = W.words(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fifteenth twentieth hundredth"
)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _en_money(r: random.Random) -> str:
    k = r.randrange(8)
    if k == 0:
        return f"${r.randint(1, 99)}"
    if k == 1:
        return f"${r.randint(1, 60)}.{r.choice(['99', '50', '25', '49', '95'])}"
    if k == 2:
        return f"{r.randint(2, 500)} dollars"
    if k == 3:
        return f"£{r.randint(2, 200)}"
    if k == 4:
        return f"€{r.randint(2, 300)}"
    if k == 5:
        return f"{r.choice(_EN_ONES[2:])} bucks"
    if k == 6:
        return f"{r.randint(1, 9)}.{r.randint(1, 9)} million dollars"
    return f"{r.randint(2, 20)} dollars and {r.randint(5, 95)} cents"


def _en_clock(r: random.Random) -> str:
    k = r.randrange(7)
    h = r.randint(1, 12)
    if k == 0:
        return f"{h}:{r.choice(['15', '30', '45', '20', '40', '10', '50'])}"
    if k == 1:
        return f"{h} {r.choice(['am', 'pm'])}"
    if k == 2:
        return f"{h}:{r.randint(10, 59)} {r.choice(['in the morning', 'at night', 'pm', 'am'])}"
    if k == 3:
        return f"{r.choice(['half past', 'quarter past', 'quarter to', 'ten past'])} {_EN_ONES[h]}"
    if k == 4:
        return r.choice(["noon", "midnight", "dawn", "sunset", "lunchtime"])
    if k == 5:
        return f"{_EN_ONES[h]} o'clock"
    return f"{h}:{r.randint(0, 5)}{r.randint(0, 9)}"


def _en_duration(r: random.Random) -> str:
    k = r.randrange(6)
    if k == 0:
        return f"{r.randint(2, 59)} minutes"
    if k == 1:
        return f"{r.choice(_EN_ONES[2:13])} hours"
    if k == 2:
        return f"{r.randint(2, 12)} hours and {r.choice([10, 15, 20, 30, 45])} minutes"
    if k == 3:
        return r.choice(["an hour and a half", "half an hour", "a whole day", "a week", "a month"])
    if k == 4:
        return f"{r.choice(_EN_ONES[2:11])} {r.choice(['days', 'weeks', 'months', 'years'])}"
    return f"{r.randint(5, 90)} seconds"


def _en_date(r: random.Random) -> str:
    m, d = r.choice(_EN_MONTHS), r.randint(1, 28)
    k = r.randrange(5)
    if k == 0:
        return f"{m} {_ordinal(d)}"
    if k == 1:
        return f"{m} {d}, {r.randint(1950, 2035)}"
    if k == 2:
        return f"the {_ordinal(d)} of {m}"
    if k == 3:
        return f"{r.choice(_EN_DAYS)}, {m} {d}"
    return f"{r.choice(_EN_DAYS)} the {_ordinal(d)}"


def _en_number(r: random.Random) -> str:
    k = r.randrange(5)
    if k == 0:
        return str(r.randint(2, 20))
    if k == 1:
        return str(r.randint(21, 99))
    if k == 2:
        return str(r.randint(100, 999))
    if k == 3:
        return f"{r.randint(1, 99)},{r.randint(0, 999):03d}"
    return r.choice(_EN_ONES[2:])


def _en_year(r: random.Random) -> str:
    k = r.randrange(4)
    if k == 0:
        return f"the {r.choice(range(1920, 2030, 10))}s"
    return str(r.choice([r.randint(1066, 1899), r.randint(1900, 1999), r.randint(2000, 2035)]))


_EN_NAME = _mix((0.8, _choice(W.EN_NAMES)), (0.2, _choice(W.EN_HANDLES)))
_EN_WHEN = W.phrases(
    "this morning|last night|yesterday|yesterday afternoon|at dawn|after lunch|before midnight|"
    "every weekend|in the spring|last summer|around noon|early tomorrow|tonight|right now|"
    "last week|two days ago|on my birthday|during the storm|after school|before work|"
    "on the way home|at the last minute|in the middle of the night|over the holidays"
)


def _en_verb(form: int, pool: Sequence[str]) -> Maker:
    return lambda r: W.verb_forms(r.choice(pool))[form]


EN_SLOTS: dict[str, Maker] = {
    "name": _EN_NAME,
    "name2": _choice(W.EN_NAMES),
    "city": _choice(W.EN_CITIES),
    "country": _choice(W.EN_COUNTRIES),
    "place": lambda r: r.choice(W.EN_PLACES).replace("-", " "),
    "food": _choice(W.EN_FOODS),
    "animal": _choice(W.EN_ANIMALS),
    "animals": lambda r: W.plural(r.choice(W.EN_ANIMALS)),
    "thing": lambda r: r.choice(W.EN_THINGS).replace("-", " "),
    "things": lambda r: W.plural(r.choice(W.EN_THINGS)).replace("-", " "),
    "tech": _choice(W.EN_TECH),
    "device": _choice(W.EN_DEVICES),
    "brand": _choice(W.EN_BRANDS),
    "app": _choice(
        W.words(
            "YouTube Twitch Discord Spotify Netflix Steam Zoom Slack Chrome Firefox Photoshop Excel PowerPoint Minecraft"
        )
    ),
    "job": _choice(W.EN_JOBS),
    "jobs": lambda r: W.plural(r.choice(W.EN_JOBS)),
    "nature": _choice(W.EN_NATURE),
    "abstract": _choice(W.EN_ABSTRACT),
    "game": _choice(W.EN_GAMES),
    "hobby": _choice(W.EN_HOBBIES),
    "adj": _choice(W.EN_ADJ),
    "feeling": _choice(W.EN_FEELINGS),
    "taste": _choice(W.EN_ADJ_TASTE),
    "eval": _choice(W.EN_ADJ_EVAL),
    "abstracts": lambda r: W.plural(r.choice(W.EN_ABSTRACT)),
    "adv": _choice(W.EN_ADVERBS),
    "v": _en_verb(0, W.EN_VERBS_OBJ),
    "vs": _en_verb(1, W.EN_VERBS_OBJ),
    "ved": _en_verb(2, W.EN_VERBS_OBJ),
    "ving": _en_verb(3, W.EN_VERBS_OBJ),
    "ven": _en_verb(4, W.EN_VERBS_OBJ),
    "iv": _en_verb(0, W.EN_VERBS_INTR),
    "ivs": _en_verb(1, W.EN_VERBS_INTR),
    "ived": _en_verb(2, W.EN_VERBS_INTR),
    "iving": _en_verb(3, W.EN_VERBS_INTR),
    "day": _choice(_EN_DAYS),
    "month": _choice(_EN_MONTHS),
    "season": _choice(("spring", "summer", "autumn", "fall", "winter")),
    "when": _choice(_EN_WHEN),
    "laugh": _choice(W.EN_LAUGHS),
    "interj": _choice(W.EN_INTERJECTIONS),
    "gift": _choice(W.EN_GIFTS),
    "short": _choice(W.EN_SHORT),
    "count": lambda r: r.choice(_EN_ONES[2:]),
    "n": lambda r: str(r.randint(2, 99)),
    "num": _en_number,
    "big": lambda r: f"{r.randint(1, 999):,}{r.choice(['', ',000', '00'])}",
    "year": _en_year,
    "yr": lambda r: str(r.randint(1970, 2035)),
    "date": _en_date,
    "clock": _en_clock,
    "dur": _en_duration,
    "money": _en_money,
    "pct": lambda r: r.choice(
        [f"{r.randint(1, 100)}%", f"{r.randint(2, 99)} percent", f"{r.randint(1, 99)}.5%"]
    ),
    "dec": lambda r: f"{r.randint(0, 20)}.{r.randint(1, 99)}",
    "ord": lambda r: r.choice([_ordinal(r.randint(1, 120)), r.choice(_EN_ORD_WORDS)]),
    "digits": lambda r: r.choice(
        [
            f"{r.randint(200, 999)} {r.randint(1000, 9999)}",
            " ".join(str(r.randint(0, 9)) for _ in range(r.randint(4, 6))),
            str(r.randint(10000, 99999)),
        ]
    ),
    "score": lambda r: f"{r.randint(0, 7)} to {r.randint(0, 7)}",
    "range": lambda r: r.choice(
        [
            f"{(a := r.randint(2, 40))} to {a + r.randint(2, 30)}",
            f"between {(b := r.randint(2, 90))} and {b + r.randint(5, 50)}",
        ]
    ),
    "temp": lambda r: f"{r.randint(-15, 40)} degrees",
}
for _mood, _lines in W.EN_EMOTIONS.items():
    EN_SLOTS[f"emo_{_mood}"] = _choice(_lines)

EN_TEMPLATES: tuple[str, ...] = (
    # ---- chat: greetings, thanks, replies
    "Hey {name}, welcome back to the stream! How was {game}?",
    "Hi {name}! Long time no see.",
    "Welcome in, {name}! Grab a snack, we're just getting started.",
    "Good [morning|evening|afternoon], {name}, and welcome to everyone who just joined!",
    "Thanks so much for {gift}, {name}! You're [amazing|the best|a legend].",
    "{name}, thank you for the {n} months! That's [wild|incredible|so sweet].",
    "Oh, {name:a} is here! Everybody say hi to {name:a}.",
    "Thank you for the raid, {name}! Welcome, raiders, how was the stream?",
    "[Yeah|Yep|Sure], {name}, I'll play {game} after this.",
    "No, {name}, I'm not quitting {game}. Not yet, anyway.",
    "{name} says {laugh}. Honestly, same.",
    "{name} in chat is asking if I ever tried {hobby}. [Once|Never|Twice], actually.",
    "Bye {name}, sleep well and see you {day}!",
    "{laugh}, {name}, you're not wrong.",
    "{laugh} {name}, that was {adj}.",
    "Okay chat, {n} more minutes and then we [raid someone|call it a night|play {game}].",
    "Chat, should I [eat|order|cook] {food} or {food} tonight?",
    "{name} just typed plus one, so that's {count} votes for {food}.",
    "I see a lot of GGs in chat. [Thanks|Appreciate it], everyone.",
    "Who said {laugh} in chat? I saw that, {name}.",
    "Please stay kind in chat, everyone. {name}, that means you too.",
    "Welcome to all {n} of you lurking! Don't be shy.",
    "Sorry {name}, I missed your message. Could you send it again?",
    "That's a great question, {name}. Let me think about it for a second.",
    "{name}, I'm so happy you made it! How's the weather in {city}?",
    "Greetings from {city}! It's {temp} here right now.",
    "Shout out to {name} for [the fan art|the emotes|the overlay|the new panels]!",
    "Oh, hi {name}! Is that your {animal} on the webcam?",
    "Mods, could you please [timeout|ban|warn] that bot? Thanks, {name}.",
    "[Lol|LOL|Haha], no, {name}, the {animal} is not a mod.",
    "Good game, {name}, that was a close one.",
    "Thanks, {name}! {short}",
    "{interj}, {name}, I totally forgot about that.",
    # ---- questions
    "Have you ever been to {city}?",
    "Do you prefer {food} or {food}?",
    "Is it true that the {place} is closed {when}?",
    "Why did {name} go to the {place} {when}?",
    "Where did you put the {thing}?",
    "When does {game} start?",
    "Who [left|forgot|broke] the {thing} in the {place}?",
    "How many {things} do we need for the party?",
    "What's your favorite thing about {city}?",
    "Which one is better, {brand} or {brand}?",
    "How long does it take to get to {city}? About {n} hours?",
    "You've tried {food} before, haven't you?",
    "It's a bit {adj} in here, isn't it?",
    "{name} can't be serious, can they?",
    "Could you speak a little more [slowly|loudly|softly|clearly], please?",
    "Would you rather be a {job} or a {job}?",
    "Did anyone else hear the {animal} outside?",
    "Can I [borrow|use|see] your {thing} for a minute?",
    "Are you coming to the {place} {when}?",
    "Isn't it [funny|strange|wonderful] how {animals} always find the warmest spot?",
    "Who needs sleep when there's {food} and {game}?",
    "Why would anyone put {food} on a {thing}?",
    "Does your {device} keep disconnecting too?",
    "What time is it in {city} right now?",
    "Wait, you've never heard of {brand}?",
    "So, are we doing {game} or {game} today?",
    "How did the {job} know about the {abstract}?",
    "What would you do with {money}?",
    # ---- exclamations, reactions
    "Wow, I can't believe {name} {ved} the {thing}!",
    "No way! {name} actually beat {game}!",
    "That's amazing, {name}! I'm so {feeling} for you.",
    "Oh no, I {ved} the {thing} again!",
    "Yes! We finally did it after {n} tries!",
    "What a {eval} day!",
    "How {eval} is that {animal}!",
    "{interj}, look at the {nature}!",
    "{interj}! That {animal} just stole my {food}!",
    "Ugh, the {place} smells terrible {when}.",
    "Wait, what? {name} and {name2} {ved} the {thing}?",
    "That was the most {eval} thing I've seen all week!",
    "This {food} is [so {taste}|amazing|incredible|a masterpiece]!",
    "{food} should never be this {taste}.",
    "Honestly, {game} is kind of {eval}.",
    "Nice shot, {name}! That was {adv} perfect.",
    # ---- commands
    "Stop right there. Don't touch the {thing}!",
    "Please bring the {thing} and the {thing} to the {place}.",
    "First open the door, then check the {thing}, and finally call {name}.",
    "Don't forget to [pack|charge|label|return|unplug|clean|check|lock] the {thing} before you leave.",
    "Put the {things} on the shelf, please.",
    "Try not to {iv} during the meeting.",
    "Go ahead and [restart|update|unplug] your {device}.",
    "Turn left at the {place}, then walk for [two|five|ten|{n}] minutes.",
    "Let's {iv} together after the stream.",
    "Hit that follow button if you like {animals}!",
    "Mute your mic, {name}, we can hear your {animal}.",
    "Quick, grab the {thing} and run!",
    "Remember to drink some water and stretch, everyone.",
    "Type one in chat if you want {food}, two if you want {food}.",
    # ---- narration, explanation
    "{name} {ved} the {thing} at the {place} {when}.",
    "{name} {adv} {ved} the {thing}, then smiled.",
    "The {place} was {adj} and {adj} {when}.",
    "My favorite thing about the {place} is the {adj} view.",
    "The {job} {ived} all the way to the {place}.",
    "Every {day}, {name} {ivs} in the {place} for {dur}.",
    "{name} was {iving} when the {animal} walked in.",
    "In {year}, a {job} from {city} {ved} the first {thing}.",
    "After the {nature} passed, the {animals} came back to the {place}.",
    "{name} {ivs} whenever {name2} {vs} the {thing}.",
    "The {adj} {thing} belonged to a {job} who lived in {country}.",
    "Here's the thing: a {tech} is only as good as its {tech}.",
    "Basically, the {tech} stores everything, so you don't lose your progress.",
    "The reason it lags is the {tech}, not your {tech}.",
    "In short, the {abstract} was {eval}, but it worked.",
    "{name} spent the whole {season} {iving} in {country}.",
    "We're {ving} the {things} in the {place} this week.",
    "The {animals} have been {iving} since {clock}.",
    "As far as I know, {brand} doesn't make {things}.",
    "Legend says a {adj} {animal} guards the {place}.",
    "A {job} and a {job} walk into a {place}.",
    (
        "So here's what happened: I woke up at {clock}, realized I'd forgotten to charge my "
        "{device}, ran to the {place} in the rain, and still missed the start of the stream."
    ),
    (
        "Thank you so much, {name}, for {gift}; when I started streaming {dur} ago, I never "
        "imagined that {big} people would hang out here with me every week."
    ),
    (
        "If we win this round, we'll move on to {game}, but if we lose, I promised chat I'd "
        "eat {food} with {food} on camera, so please, let's not lose."
    ),
    (
        "The {job} from {city} told us that the {nature} near the {place} used to be "
        "{adj}, and that nobody had seen a {animal} there since {year}."
    ),
    "Nobody expected the {animal} to {iv}, but it did.",
    '{name} whispered, "I think someone is following us."',
    '"{short}" said {name}, and closed the door.',
    # ---- numbers of all kinds
    "We need {num} chairs, {num} plates, and {num} candles for the party.",
    "The train leaves at {clock} and arrives {n} minutes later.",
    "On {date}, the {adj} festival began.",
    "The price went up by {pct}, which is {adj} news.",
    "That'll be {money}, please.",
    "I paid {money} for this {thing}. Was that too much?",
    "The meeting is on {date} at {clock}.",
    "It's {clock} in {city} and {temp} outside.",
    "We waited {dur} for the {food}.",
    "The stream has been live for {dur}.",
    "{name} finished {ord} out of {n} runners.",
    "This is my {ord} time playing {game}.",
    "The final score was {score}.",
    "They won {score} in overtime!",
    "It costs {range} dollars, depending on the size.",
    "We'll need {range} volunteers for the event.",
    "My order number is {digits}.",
    "The code is {digits}, don't share it.",
    "Call me back at {digits}.",
    "The bridge was built in {year}.",
    "Back in {year}, nobody had a {device}.",
    "The recipe needs [1.5|2.5|0.75|3.25|2] cups of flour and {count} eggs.",
    "The battery is at {pct} and dropping fast.",
    "Our goal is {big} followers by {month}.",
    "{name} donated {money}! Thank you!",
    "We just hit {big} subs! Thank you all!",
    "The {animal} weighs about {dec} kilos.",
    "Chapter {n} starts on page {num}.",
    "Room {n}? No, room {num}.",
    "The {yr} version ran at {n} frames per second.",
    "Flight {n}{n} to {city} leaves from gate {n} at {clock}.",
    "It's {dec} kilometers from the {place} to the {place}.",
    "I slept for {dur} and I'm still tired.",
    "Only {count} days until {month}!",
    "My grandma turns {n} on {date}.",
    "About {pct} of chat voted for {food}.",
    # ---- phonetics: homographs, names, places, tech words, contractions
    "I read that book last [week|year|summer], and now I read one every night.",
    "Let's record a new record before {clock}.",
    "They live in {city}, but we're watching the live show online.",
    "The pipes were made of lead, so {name} decided to lead the repair crew.",
    "The wind was too strong to wind the {thing}.",
    "She shed a tear when she saw the tear in her [jacket|dress|sweater|shirt|backpack|tent].",
    "He took a bow and tied a bow on the {thing}.",
    "Please close the door; the {animal} is too close.",
    "I object to the object on the table.",
    "The {job} wants to present the present to {name}.",
    "Wait a minute, that {animal} is minute!",
    "A dove dove into the pond when the {animal} came close.",
    "{name}'s {thing} wasn't where she'd left it.",
    "We'd've been there by {clock} if you'd driven.",
    "They're over there with their {animals}.",
    "I've {ven} {count} {things}, and I'm done.",
    "{name} and {name2} flew from {city} to {city} via {country}.",
    "My {tech} and my {tech} both crashed during the {game}.",
    "I asked {app:a} support, and they said to reinstall {app:a}.",
    "{name} fixed the {thing}, packed the {things}, and mailed them.",
    # ---- emotional
    "{emo_happy}",
    "{emo_sad}",
    "{emo_angry}",
    "{emo_surprised}",
    "{emo_fearful}",
    "{emo_disgusted}",
    "Honestly, I'm a little {feeling} about {game}.",
    "I'm so {feeling} right now, I don't even know what to say.",
    "Thanks so much, {name}! That means a lot to me.",
    "I'm sorry to hear that. Losing your {thing} must feel awful.",
    "{interj}, I'm {feeling}. Can we {iv} for a bit?",
    "{emo_happy} Thank you, {name}!",
    "{emo_angry} Mods, please help.",
    "{emo_fearful} {interj}, I'm not going back in there.",
    "{emo_surprised} {name}, did you know about this?",
    "Ew, who put {food} in my {thing}?",
    "I can't stand the smell of {food}, it's disgusting.",
    "Why does everything bad happen on {day}?",
    "It's not fair! The {animal} ate my {food} again!",
    # ---- long sentences (two or three clauses)
    (
        "When I first moved to {city}, I didn't know anyone, so I spent most of my evenings "
        "{iving} at the {place}."
    ),
    (
        "If the {tech} keeps crashing, we'll switch to the backup, and if that fails, we'll take "
        "a short break."
    ),
    (
        "Although the {place} was {adj} and the {food} was cold, {name} said it was the best "
        "night of the year."
    ),
    "{name} wanted to {iv}, but {name2} insisted on {ving} the {things} first, which took {dur}.",
    "Before we start {game}, let me thank {name} for {gift}, because that was really {adj} of you.",
    (
        "Because the {nature} blocked the road, the {jobs} had to {iv} the rest of the way, "
        "and they arrived at {clock}."
    ),
    (
        "I don't usually talk about {abstracts} on stream, but today I want to tell you about the "
        "time I {ived} in {country}."
    ),
    (
        "The {job} {ved} the {thing}, the {animal} {ived}, and nobody noticed that the "
        "{thing} was missing."
    ),
    "After {dur} of {hobby}, {name} finally understood why everyone loves it so much.",
    "If you're new here, welcome; we play {game} on {day}s and {game} on weekends.",
    "We spent {money} on {food}, which sounds like a lot, but it fed {num} people.",
    "While {name} was {iving} by the {nature}, a {adj} {animal} stole the {thing}.",
    # ---- very short
    "{short}",
    "{short}",
    "{short}",
    "{short} {short}",
    "{laugh}",
    "{laugh}!",
    "{interj}!",
    "{interj}, {short}",
    "{laugh}! {short}",
    "Thanks, {name}!",
    "Hi, {name}!",
    "Bye, {name}!",
    "GG, {name}!",
    "{name}?",
    "{name}, {short}",
    "{food}?",
    "{food}!",
    "{count}!",
    "{count} more!",
    "At {clock}?",
    "{money}? Really?",
    "In {city}?",
    "{adj}!",
    "So {adj}!",
    "Too {adj}.",
    "Very {adj}.",
    "{feeling}.",
    "Feeling {feeling}.",
    "Nice {thing}!",
    "Cute {animal}!",
    "{animals}!",
)

_AN_EXCEPT = ("uni", "use", "usu", "ura", "one", "once", "eu", "ufo", "u-")
_AN_SILENT_H = ("hour", "honest", "honor", "heir")


def _article(m: re.Match[str]) -> str:
    a, word = m.group(1), m.group(2)
    low = word.lower()
    if word.isupper() and len(word) > 1:
        vowel = word[0] in "AEFHILMNORSX"
    elif word[0].isdigit():
        vowel = word[0] == "8" or word.startswith(("11", "18"))
    else:
        vowel = low[0] in "aeiou" and not low.startswith(_AN_EXCEPT)
        vowel = vowel or low.startswith(_AN_SILENT_H)
    return f"{a}{'n' if vowel else ''} {word}"


def _en_post(s: str) -> str:
    s = re.sub(r"(?<![\w'])([Aa]) ([\w'-]+)", _article, s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s+([,.!?;:])", r"\1", s)
    s = re.sub(r"([.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), s)
    return s[0].upper() + s[1:] if s else s


# ================================================================================ Mandarin
_ZH_DIGITS = "零一二三四五六七八九"


def zh_int(n: int, *, liang: bool = False) -> str:
    """A non-negative integer below 10^8 in hanzi (``两`` for 2 before a measure word)."""
    if n < 10:
        return "两" if n == 2 and liang else _ZH_DIGITS[n]
    out: list[str] = []
    zero = False
    if n >= 10000:
        wan, n = divmod(n, 10000)
        out.append(zh_int(wan, liang=True) + "万")
    for value, unit in ((1000, "千"), (100, "百"), (10, "十")):
        d, n = divmod(n, value)
        if d:
            if zero:
                out.append("零")
                zero = False
            if value == 10 and d == 1 and not out:
                out.append("十")
            else:
                two = "两" if d == 2 and (value == 1000 or (liang and value == 100)) else None
                out.append((two or _ZH_DIGITS[d]) + unit)
        elif out:
            zero = True
    if n:
        if zero:
            out.append("零")
        out.append(_ZH_DIGITS[n])
    return "".join(out)


def _zh_count(r: random.Random) -> str:
    """A count before a measure word: hanzi up to ten, digits above (as people write)."""
    n = r.choice([r.randint(1, 10), r.randint(1, 10), r.randint(11, 99)])
    return zh_int(n, liang=True) if n <= 10 else str(n)


_ZH_THINGS = W.ZH_THINGS + W.ZH_THINGS_MORE


def _zh_thing_pair(r: random.Random) -> tuple[str, str]:
    m, noun = r.choice(_ZH_THINGS).split(":")
    return m, noun


def _zh_animal(r: random.Random, pool: Sequence[str]) -> str:
    """Measure word + animal: ``只猫``, ``匹马``, ``条鱼``."""
    animal = r.choice(pool)
    return W.ZH_ANIMAL_MEASURE.get(animal, "只") + animal


def _zh_nthing(r: random.Random) -> str:
    m, noun = _zh_thing_pair(r)
    return f"{_zh_count(r)}{m}{noun}"


def _zh_money(r: random.Random) -> str:
    k = r.randrange(7)
    if k == 0:
        return f"{r.randint(10, 999)}块"
    if k == 1:
        return f"{zh_int(r.randint(1, 99), liang=True)}块{_ZH_DIGITS[r.randint(1, 9)]}"
    if k == 2:
        return f"{r.randint(10, 9999)}元"
    if k == 3:
        return f"{zh_int(r.randint(2, 9), liang=True)}{r.choice(['千', '万'])}多块钱"
    if k == 4:
        return f"{zh_int(r.randint(1, 9), liang=True)}毛钱"
    if k == 5:
        return f"{r.randint(10, 500)}块钱"
    return f"{zh_int(r.randint(11, 99))}块{zh_int(r.randint(1, 9))}毛"


def _zh_clock(r: random.Random) -> str:
    part = r.choice(["早上", "上午", "中午", "下午", "晚上", "凌晨", "", ""])
    h = r.randint(1, 12)
    hour = zh_int(h, liang=True) if r.random() < 0.6 else str(h)
    k = r.randrange(5)
    if k == 0:
        return f"{part}{hour}点"
    if k == 1:
        return f"{part}{hour}点半"
    if k == 2:
        return f"{part}{hour}点{r.choice(['一刻', '三刻'])}"
    if k == 3:
        return f"{part}{h}点{r.randint(10, 59)}分"
    return f"{part}{hour}点{r.choice(['零五分', '过五分', '十分', '二十分', '四十五分'])}"


def _zh_duration(r: random.Random) -> str:
    k = r.randrange(6)
    if k == 0:
        return f"{zh_int(r.randint(2, 10), liang=True)}个小时"
    if k == 1:
        return f"{r.randint(10, 59)}分钟"
    if k == 2:
        return r.choice(
            ["半个小时", "一个半小时", "一整天", "半个月", "一年半", "一个星期", "大半天"]
        )
    if k == 3:
        return f"{zh_int(r.randint(2, 10), liang=True)}{r.choice(['天', '个月', '年', '周'])}"
    if k == 4:
        return f"{zh_int(r.randint(2, 9), liang=True)}个多小时"
    return f"{r.randint(10, 90)}秒"


def _zh_date(r: random.Random) -> str:
    m, d = r.randint(1, 12), r.randint(1, 28)
    k = r.randrange(4)
    if k == 0:
        return f"{m}月{d}号"
    if k == 1:
        return f"{r.randint(1990, 2035)}年{m}月{d}日"
    if k == 2:
        return f"{zh_int(m)}月{zh_int(d)}号"
    return f"{m}月{d}日{r.choice(['星期一', '周二', '星期三', '周四', '星期五', '周六', '星期天'])}"


_ZH_GIVEN = W.ZH_GIVEN + W.ZH_GIVEN_MORE


def _zh_name(r: random.Random) -> str:
    k = r.randrange(6)
    sur, given = r.choice(W.ZH_SURNAMES), r.choice(_ZH_GIVEN)
    if k <= 1:
        return sur + given
    if k == 2:
        return "小" + given[-1]
    if k == 3:
        return r.choice(["老", "小"]) + sur if len(sur) == 1 else sur + given
    if k == 4:
        return sur + r.choice(W.ZH_TITLES)
    return "阿" + given[-1]


_ZH_WHEN = W.words(
    "今天早上 昨天晚上 上个星期 周末 明天下午 中午 半夜 春天的时候 每天 刚才 去年冬天 下课以后 "
    "前天 大后天 下个月 月底 年底 放假的时候 下班以后 吃完饭 睡觉前 一大早 傍晚 国庆节 春节 "
    "中秋节 过年的时候 寒假 暑假 开学前 上周五 这两天 最近"
)

ZH_SLOTS: dict[str, Maker] = {
    "name": _zh_name,
    "viewer": _mix((0.6, _choice(W.ZH_NICKNAMES + W.ZH_NICKNAMES_MORE)), (0.4, _zh_name)),
    "nick": _choice(W.ZH_NICKNAMES + W.ZH_NICKNAMES_MORE),
    "padj": _choice(W.ZH_ADJ_PLACE),
    "fadj": _choice(W.ZH_ADJ_FOOD),
    "hadj": _choice(W.ZH_ADJ_PERSON),
    "eadj": _choice(W.ZH_ADJ_EVAL),
    "game": _choice(W.ZH_GAMES),
    "event": _choice(W.ZH_EVENTS),
    "app": _choice(W.ZH_APPS),
    "device": _choice(W.ZH_DEVICES),
    "pet": _choice(W.ZH_PETS),
    "one_pet": lambda r: "一" + _zh_animal(r, W.ZH_PETS),
    "one_animal": lambda r: "一" + _zh_animal(r, W.ZH_ANIMALS),
    "this_animal": lambda r: r.choice("这那") + _zh_animal(r, W.ZH_ANIMALS),
    "city": _choice(W.ZH_CITIES),
    "country": _choice(W.ZH_COUNTRIES),
    "place": _choice(W.ZH_PLACES),
    "food": _choice(W.ZH_FOODS + W.ZH_DISHES_MORE),
    "scenic": _choice(W.ZH_SCENIC),
    "nature": _choice(W.ZH_NATURE),
    "weather": _choice(W.ZH_WEATHER),
    "ill": _choice(W.ZH_ILLNESS),
    "body": _choice(W.ZH_BODY),
    "subject": _choice(W.ZH_SUBJECTS),
    "proverb": _choice(W.ZH_PROVERBS),
    "chore": _choice(W.ZH_CHORES),
    "season": _choice(W.words("春天 夏天 秋天 冬天")),
    "n": lambda r: str(r.randint(2, 99)),
    "floor": lambda r: str(r.randint(1, 33)),
    "round": lambda r: (
        zh_int(r.choice([1, 2, 3, 5, 10, 20, 50, 100]), liang=True) + r.choice(["千", "万"])
    ),
    "org": _choice(W.ZH_ORGS),
    "scene": _choice(W.ZH_SCENES),
    "stat": _choice(W.ZH_STATS),
    "mins": lambda r: f"{r.randint(10, 59)}分钟",
    "animal": _choice(W.ZH_ANIMALS),
    "thing": lambda r: _zh_thing_pair(r)[1],
    "this_pet": lambda r: r.choice("这那") + _zh_animal(r, W.ZH_PETS),
    "nthing": _zh_nthing,
    "this_thing": lambda r: "{}{}{}".format(r.choice("这那"), *_zh_thing_pair(r)),
    "job": _choice(W.ZH_JOBS),
    "act": _choice(W.ZH_ACTIVITIES),
    "adj": _choice(W.ZH_ADJ),
    "feeling": _choice(W.ZH_FEELINGS),
    "topic": _choice(W.ZH_TOPICS),
    "idiom": _choice(W.ZH_IDIOMS),
    "latin": _choice(W.ZH_LATIN),
    "gift": _choice(W.ZH_GIFTS),
    "laugh": _choice(W.ZH_LAUGHS),
    "interj": _choice(W.ZH_INTERJECTIONS),
    "er": _choice(W.ZH_ERHUA),
    "short": _choice(W.ZH_SHORT),
    "when": _choice(_ZH_WHEN),
    "cnt": lambda r: zh_int(r.randint(2, 10), liang=True),
    "num": lambda r: str(r.choice([r.randint(11, 99), r.randint(100, 999), r.randint(1000, 9999)])),
    "hz": lambda r: zh_int(r.choice([r.randint(11, 99), r.randint(100, 9999)])),
    "year": lambda r: f"{r.choice([r.randint(1949, 1999), r.randint(2000, 2035)])}年",
    "date": _zh_date,
    "clock": _zh_clock,
    "dur": _zh_duration,
    "money": _zh_money,
    "pct": lambda r: "百分之" + zh_int(r.choice([r.randint(1, 100), 5 * r.randint(1, 20)])),
    "dec": lambda r: f"{zh_int(r.randint(0, 20))}点{_ZH_DIGITS[r.randint(1, 9)]}",
    "ord": lambda r: "第" + r.choice([zh_int(r.randint(1, 12)), str(r.randint(13, 200))]),
    "digits": lambda r: str(r.randint(1000, 9999)),
    "score": lambda r: f"{r.randint(0, 7)}比{r.randint(0, 7)}",
    "range": lambda r: r.choice(
        [
            f"{zh_int(a := r.randint(1, 8), liang=True)}到{zh_int(a + r.randint(1, 3))}",
            f"{zh_int(c := r.randint(2, 8))}{zh_int(c + 1)}",
            f"{(b := r.randint(10, 80))}到{b + r.choice([5, 10, 20])}",
        ]
    ),
    "age": lambda r: f"{zh_int(r.randint(3, 90))}岁",
    "temp": lambda r: f"{zh_int(r.randint(0, 40))}度",
}
for _mood, _lines in W.ZH_EMOTIONS.items():
    ZH_SLOTS[f"emo_{_mood}"] = _choice(_lines)

ZH_TEMPLATES: tuple[str, ...] = (
    # ---- 弹幕、打招呼、感谢
    "欢迎{viewer}来到直播间！{topic}怎么样？",
    "欢迎{viewer}！好久不见，最近忙什么呢？",
    "{viewer}来啦！快坐快坐，我们刚开始。",
    "谢谢{viewer}送的{gift}！破费了破费了。",
    "感谢{viewer}的{cnt}个{gift}，老板大气！",
    "谢谢{viewer}的舰长，欢迎上船！",
    "{viewer}说{laugh}，我也觉得好好笑。",
    "{laugh}，{viewer}你太有才了。",
    "{laugh}{laugh}，笑得我肚子疼。",
    "弹幕都在刷{laugh}，你们是不是在笑我？",
    "{viewer}问我今天玩不玩{game}，等会儿看情况吧。",
    "晚安{viewer}，早点睡，明天见！",
    "{viewer}，你的弹幕我看到了，别着急。",
    "666，{viewer}这波操作太秀了！",
    "2333，{viewer}你是认真的吗？",
    "扣1的人这么多啊，那就{act}吧！",
    "想吃{food}的扣1，想吃{food}的扣2。",
    "{viewer}发了个+1，{food}又多了一票。",
    "前面说{food}好吃的那位，你是{city}人吧？",
    "大家好，我是今天的主播{name}，今天我们来{act}。",
    "新来的朋友点个关注，不迷路哦！",
    "感谢{viewer}的关注，欢迎欢迎！",
    "有没有{city}的朋友？在弹幕里扣个1让我看看。",
    "{viewer}，你那边现在几点了？",
    "房管帮忙看一下弹幕，有人在刷屏。",
    "{viewer}，{short}",
    "{viewer}，谢谢你一直陪着我们。",
    "今天的直播就到这儿啦，{viewer}下次见！",
    "来，{viewer}给大家唱一首，大家给点掌声！",
    "别刷礼物了，真的，心意我都收到了。",
    "{interj}，{viewer}又送了{gift}，太感谢了！",
    # ---- 问句：吗/呢/吧/是不是/A不A/特指/附加/反问
    "你去过{city}吗？",
    "{name}今天来不来{place}？",
    "{this_thing}好不好用？",
    "{food}好吃不好吃？",
    "你是不是又熬夜{act}了？",
    "你喜欢{food}还是{food}？",
    "{this_thing}是谁的？",
    "你把{thing}放哪儿了？",
    "{topic}什么时候开始啊？",
    "我们几点去{place}呢？",
    "你怎么还没到{place}呢？",
    "你会{act}吧？",
    "{name}应该已经到{city}了吧？",
    "{place}{when}是不是关门了？",
    "难道你不知道{topic}已经开始了吗？",
    "这么{fadj}的{food}，谁不喜欢呢？",
    "我不是跟你说过了吗？",
    "{name}为什么{when}去{place}？",
    "去{city}要多长时间？[{cnt}个小时|半天|{mins}]够不够？",
    "你觉得{job}和{job}哪个更辛苦？",
    "你能帮我把{this_thing}拿过来吗？",
    "这是你第一次{act}吗？",
    "{city}离{city}远不远啊？",
    "你到底想不想去{country}玩儿？",
    "咱们{when}一起去{act}，好不好？",
    "你说{name}会不会已经忘了这件事？",
    "{this_thing}多少钱？{money}？",
    "有谁知道{app}怎么设置吗？",
    "你们{city}今天冷不冷？",
    # ---- 感叹、反应
    "哇，真不敢相信{name}把{this_thing}弄丢了！",
    "太棒了，{name}！我真为你感到{feeling}。",
    "哎呀，我又把{thing}忘在{place}了！",
    "耶！试了{n}次，我们终于过关了！",
    "这{food}也太{fadj}了吧！",
    "{interj}，{this_animal}好可爱啊！",
    "天哪，{place}怎么这么多人！",
    "好家伙，{money}就买了这么点儿东西？",
    "我去，{name}居然{act}去了！",
    "今天学的成语是“{idiom}”，大家记住了吗？",
    "{interj}，外面下雪了！",
    "笑死，{pet}把我的{food}偷吃了！",
    # ---- 命令、请求
    "站住，别碰{this_thing}！",
    "请把{this_thing}和{this_thing}带到{place}。",
    "先打开门，再检查{this_thing}，最后给{name}打电话。",
    "快把{this_thing}收起来，{name}要来了！",
    "出门记得带{thing}。",
    "别在{place}{act}，会影响别人的。",
    "大家把手机调成静音，会议马上开始。",
    "麻烦把音乐声音调小一点儿。",
    "请排好队，一个一个来。",
    "记得多喝水，早点休息。",
    "把{device}关了再重新打开试试。",
    "往前走{dur}，看到{place}再左转。",
    # ---- 叙述、说明
    "{name}{when}在{place}买了{nthing}。",
    "{when}的{place}又{padj}又{padj}。",
    "我最喜欢{place}的地方，就是那里很{padj}。",
    "{name}小声说：“我觉得有人在跟着我们。”",
    "{name}是个{job}，每天都要在{place}忙到{clock}。",
    "{year}，{name}第一次去{city}，就爱上了那里的{food}。",
    "听说{city}的{food}特别{fadj}，我一直想去尝尝。",
    "这家店的{food}做得很地道，老板是{city}人。",
    "{name}一边{act}，一边跟我们聊{topic}。",
    "我们家的{pet}特别{hadj}，每天早上都叫我起床。",
    "{when}我在{place}看见了{one_animal}。",
    "简单来说，{app}就是一个帮你省时间的工具。",
    "其实{topic}没有大家想的那么复杂。",
    "说实话，我对{topic}有点{feeling}。",
    "如果你问我的话，{topic}挺{eadj}的，就是有点长。",
    "用一个成语来形容今天，那就是“{idiom}”。",
    "老师说做事不能[半途而废|三心二意|马马虎虎]，要坚持到底。",
    "{name}从小就喜欢{act}，现在已经是一名{job}了。",
    "这个{job}每天骑车去{place}，风雨无阻。",
    "{city}的夏天很[热|闷热|潮湿|凉快|舒服]，冬天却特别[冷|干燥|湿冷|暖和]。",
    # ---- 数字
    "我们需要{nthing}、{nthing}，还有{nthing}。",
    "火车{clock}出发，大概[{cnt}个小时|{mins}|半个小时|一个多小时]以后到。",
    "{date}，[热闹|盛大|一年一度]的[灯会|音乐节|美食节|庙会]开始了。",
    "价格涨了{pct}，这真是个坏消息。",
    "这件衣服打[八|七|九|五|六|八五]折，只要{money}。",
    "一共{money}，扫码还是付现金？",
    "会议定在{date}{clock}，别迟到。",
    "{city}现在是{clock}，气温{temp}。",
    "我们等{food}等了{dur}。",
    "今天已经播了{dur}了，大家累不累？",
    "{name}跑了{ord}名，拿到了{nthing}。",
    "这是我{ord}次玩{game}。",
    "最后比分是{score}，我们赢了！",
    "{score}，只差一个球就追平了。",
    "大概需要{range}天，看情况。",
    "这个活动需要{range}个志愿者。",
    "快递单号尾号是{digits}，你查一下。",
    "验证码是{digits}，五分钟内有效。",
    "我住在{n}号楼{floor}层。",
    "这座桥建于{year}，到现在还很结实。",
    "{year}的时候，大家都还没有{device}。",
    "这道菜要放{dec}克盐和{cnt}个鸡蛋。",
    "手机电量只剩{pct}了，谁有充电宝？",
    "我们的目标是{month_goal}。",
    "{viewer}送了{money}的礼物，谢谢老板！",
    "粉丝终于破{round}了，谢谢大家！",
    "我家{pet}大概有{dec}公斤重。",
    "{name}今年{age}了，身体还很硬朗。",
    "从{place}到{place}大概{dec}公里。",
    "昨晚只睡了{dur}，今天困死了。",
    "离{event}还有{cnt}天！",
    "大概{pct}的观众投了{food}。",
    "这个月的房租是{num}块，水电另算。",
    "打八折以后，{this_thing}只要{money}。",
    "今天的温度只有[零|三|五|八|零下两|零下十]度，出门记得多穿点儿。",
    "开[一点五|两|一点二五]倍速看剧，{dur}就看完了一整季。",
    # ---- 中英混说
    "我用iPhone拍的，效果还不错吧？",
    "这个{app}好不好用？",
    "你下载{app}了吗？我发你链接。",
    "B站有个up主专门教{act}，讲得特别好。",
    "老板让我今晚把PPT做完，我还在{place}呢。",
    "家里的Wi-Fi又断了，我用流量开的直播。",
    "OK，那我们{clock}在{place}见。",
    "现在的AI连{act}都会了，太厉害了。",
    "这个{app}的bug修了{dur}还没修好。",
    "今天的KPI完成了吗？",
    "我刚买了个新的{device}，还没拆开呢。",
    "今年的GDP增长了{pct}。",
    "你的QQ号是多少？我加你。",
    "开个PK吧，输了的人要{act}。",
    "打开{app}，点右上角的设置。",
    "这期vlog是在{city}拍的。",
    "周末去KTV唱歌，谁来？",
    "他是公司的CEO，平时特别忙。",
    "这个NPC说话好有意思，{laugh}。",
    "我在Steam上买了个新游戏，打折只要{money}。",
    # ---- 多音字
    "这家银行的行长人很好，做事很行。",
    "他的头发长长了，孩子也长高了。",
    "这件事很重要，你要重新做一遍。",
    "我还要去图书馆还书，你还去吗？",
    "你得好好休息，不然身体会吃不消的，跑得再快也没用。",
    "我了解了，这件事就这么定了。",
    "我觉得有点儿困，想早点儿睡觉。",
    "首都的冬天都很冷，大家都穿得很厚。",
    "因为每天坚持{act}，他成为了大家的榜样，我认为这很难得。",
    "别着急，宝宝刚睡着了，我们看着他就行。",
    "这个地方的人慢慢地走着，一点儿也不着急。",
    "他好奇心特别强，爱好也很多，什么都想试试。",
    "听着音乐，大家都很快乐。",
    "我发现你的头发变长了。",
    "我家只有{one_pet}，它叫{nick}。",
    "把空调调到{temp}，别太冷了。",
    "这个字的声调你读错了，再读一遍。",
    "你数一数，这些数据一共有多少条？",
    "这次出差的结果差不多，只是比上次差一点儿。",
    "多少人年少的时候都有过这种梦想。",
    "他一枪就打中了靶心，高兴得像中了奖一样。",
    "你要看好这只小狗，它需要你的照顾。",
    "春天种下一颗种子，秋天就能收获各种果实。",
    "他在教室里教大家{act}。",
    "当时我上当了，还把他当作好朋友。",
    "这个App更新以后更好用了。",
    "请把{this_thing}给我，我给你看一样东西。",
    "这页纸上只写了一行字，看着空荡荡的。",
    "{name}还没还钱，我得去提醒他一下。",
    "重要的事情说三遍，别再重复犯错了。",
    # ---- 变调、儿化
    "你好，我是{name}，很高兴认识你。",
    "今天的天气很好，我们去{place}走走吧。",
    "我们一样大，都是{year}出生的。",
    "这不是你的{thing}，不对，好像是你的。",
    "我给你看一看新买的{thing}。",
    "一个人去{city}旅行，一点儿也不孤单。",
    "你想一想，我们是不是在哪儿见过？",
    "去哪儿玩儿都行，只要别太远。",
    "咱们在这儿等一会儿，{name}马上就到。",
    "小孩儿们在门口儿玩儿得可开心了。",
    "这个{thing}有点儿贵，能便宜一点儿吗？",
    "走，遛弯儿去，顺便买根冰棍儿。",
    "我们一块儿去{place}聊天儿吧。",
    # ---- 情绪
    "{emo_happy}",
    "{emo_sad}",
    "{emo_angry}",
    "{emo_surprised}",
    "{emo_fearful}",
    "{emo_disgusted}",
    "{emo_happy}谢谢{viewer}！",
    "{emo_angry}房管快来管管！",
    "{emo_fearful}{interj}，我不玩了！",
    "{emo_surprised}{viewer}你早就知道了？",
    "听到这个消息我很难过，丢了{this_thing}一定很不好受。",
    "我现在特别{feeling}，都不知道该说什么了。",
    "咦，谁把{food}放在我的{thing}里了？",
    "气死我了，{pet}又把我的{food}吃了！",
    "好{feeling}啊，{short}",
    # ---- 长句（两三个分句）
    "刚来{city}的时候我谁都不认识，所以下班以后经常一个人去{place}{act}。",
    "如果{app}一直卡的话，我们就换备用的，要是还不行，就先休息一下。",
    "虽然{place}很{padj}，{food}也凉了，但是{name}说这是今年最开心的一个晚上。",
    "{name}想去{act}，可是{name}非要先把{this_thing}收拾好，结果一弄就是{dur}。",
    "开始玩{game}之前，先谢谢{viewer}送的{gift}，真的太有心了。",
    "因为路上堵车，我们{clock}才到{place}，连{food}都没吃上。",
    "我平时不太在直播里聊{topic}，不过今天想跟大家说说我在{country}的那段日子。",
    "{name}一边{act}一边听歌，{animal}在旁边睡觉，屋子里安安静静的。",
    "坚持{act}{dur}以后，{name}终于明白为什么大家都这么喜欢它了。",
    "新来的朋友欢迎你们，我们每周{cnt}次直播，周末一般是{act}。",
    "我们在{food}上花了{money}，听着很多，其实够{cnt}个人吃了。",
    "趁着天气好，我们先去{place}{act}，然后去{city}吃{food}，晚上再回来直播。",
    "明天{city}{weather}，出门记得带伞，别着凉了。",
    "夜深了，{scene}，{name}还在{place}{chore}。",
    "{when}，{scene}，我一个人坐在{place}发呆。",
    "{scene}，这就是我最喜欢的{city}。",
    "那天傍晚，{scene}，{name}突然说想去{scenic}看看。",
    "我还记得那个{season}，{scene}，我们在{place}第一次见面。",
    "{name}在一家{org}上班，每天{clock}下班。",
    "我表姐去年跳槽去了{org}，听说待遇还不错。",
    "据统计，{city}今年的{stat}比去年增长了{pct}。",
    "新闻里说，{year}全国的{stat}创下了新高。",
    "这是{org}今年第{cnt}次招人了，你要不要去试试？",
    "{this_pet}好乖啊，都不怕人。",
    "我把{this_thing}借给{name}了，到现在还没还给我。",
    "{name}，你看见{this_thing}了吗？我找了半天都没找到。",
    "买{nthing}送{nthing}，今天最后一天！",
    "天气预报说{when}{weather}，我们的活动可能要推迟。",
    "{name}{ill}了，今天请假在家休息。",
    "最近天气忽冷忽热，大家小心别{ill}了。",
    "我的{body}有点儿疼，可能是昨天{act}的时候拉伤了。",
    "这学期我最喜欢的课是{subject}，因为老师讲得特别生动。",
    "{subject}考了{n}分，我妈说还得再努力。",
    "俗话说得好，{proverb}",
    "我奶奶常说：“{proverb}”",
    "{scenic}的{season}特别美，有机会一定要去看看。",
    "去年{season}我们去了{scenic}，{nature}美得像一幅画。",
    "站在山顶往下看，{nature}和{nature}连成一片，大家都看呆了。",
    "周末在家{chore}、{chore}，忙了一整天。",
    "{name}，你{chore}了没有？",
    "我负责{chore}，你负责{chore}，谁也别偷懒。",
    "今晚吃{food}，明天吃{food}，后天再说。",
    "弹幕说：“{laugh}，主播又翻车了。”",
    "前方高能，大家注意！",
    "这波血赚，{laugh}。",
    "主播今天状态拉满了啊！",
    "又是被{game}支配的一天。",
    "上次直播抽到了{cnt}个SSR，今天再试试手气。",
    "今天冲到{ord}名就下播，大家帮我加加油！",
    "他长得很高，长大以后想当{job}。",
    "我们得先把作业写完，得到老师的同意才能出去玩儿。",
    "都几点了，大家怎么都还没睡？",
    "为了这次比赛，他每天练习到{clock}。",
    "乐队一上台，台下的观众都乐坏了。",
    "他发了一条消息，说刚把头发剪短了。",
    "只要你愿意，这只{pet}就送给你。",
    "数学课上，老师让我们数一数教室里有几扇窗户。",
    "重庆的火锅又麻又辣，重口味的人一定喜欢。",
    "她教了十年书，当了五年班主任。",
    "这种花要种在阳光充足的地方。",
    "你少说两句吧，大家都少操点儿心。",
    "一起去吧，一共{cnt}个人，一定很好玩儿。",
    "我们试一试吧，说不定能成功。",
    "我想了想，还是不去了。",
    "你尝一尝，这个{food}很好吃。",
    "展览馆很小，老李也很早就到了。",
    "我也想买两把雨伞。",
    "这事儿你别管，我自个儿来。",
    "今儿个天儿真好，咱们出去溜达溜达。",
    "他说话带着一股北京味儿。",
    "你把瓶盖儿拧紧点儿，别洒了。",
    (
        "上个月我们一家人去{scenic}旅游，白天爬山看{nature}，晚上住在山脚下的民宿里，"
        "老板还请我们吃了一顿{food}。"
    ),
    (
        "虽然今天加班到{clock}，回家的路上还{weather}了，但是一想到明天就是{event}，"
        "我就一点儿也不觉得累了。"
    ),
    ("如果{when}不下雨的话，我们就去{place}{act}，要是下雨了，就在家里{act}，反正怎么样都开心。"),
    (
        "大家好，欢迎来到今天的直播间，先感谢{viewer}送的{gift}，然后我们抽{cnt}位幸运观众，"
        "每人送一份小礼物。"
    ),
    ("听说{city}新开了一家{food}店，排队要排{dur}，可是{name}说味道一般，价格还贵得离谱。"),
    ("我跟{name}约好了{date}{clock}在{place}门口见面，结果他迟到了{mins}，还说是因为路上堵车。"),
    ("昨天我在{place}排了{dur}的队，好不容易买到了{nthing}，结果回家一看，发现颜色不对。"),
    "医生说{ill}要多喝水、多休息，少吃{food}，晚上最好在{clock}之前睡觉。",
    (
        "这个视频是我用[手机|相机|iPhone|运动相机|无人机]拍的，剪辑用了{dur}，如果大家喜欢的话，记得一键三连支持一下up主。"
    ),
    "第一局我们输了，第二局{score}扳了回来，第三局一直打到{clock}，最后还是赢了！",
    # ---- 很短
    "{short}",
    "{short}",
    "{short}",
    "{short}{short}",
    "{laugh}！",
    "{laugh}，{short}",
    "{interj}！",
    "{interj}，{short}",
    "谢谢{viewer}！",
    "晚安，{viewer}！",
    "{viewer}？",
    "{food}？",
    "{food}！",
    "{cnt}个！",
    "{clock}？",
    "{money}？",
    "去{city}？",
    "好{adj}！",
    "太{adj}了！",
    "有点儿{adj}。",
    "好{feeling}。",
    "{idiom}！",
    "{latin}？",
    "哈哈哈哈，{short}",
)
ZH_SLOTS["month_goal"] = lambda r: r.choice(
    [
        f"{r.randint(1, 12)}月之前涨到{zh_int(r.randint(1, 99))}万粉丝",
        f"年底之前攒够{r.randint(1, 9)}万块钱",
        f"每天跑{zh_int(r.randint(3, 10))}公里",
    ]
)

_ZH_PUNCT_FIX = re.compile(r"([，。！？])\1+")


_HANZI = re.compile(r"[\u4e00-\u9fff]")


def _zh_post(s: str) -> str:
    """Tidy punctuation; a line with no hanzi at all ("233！") is dropped (returns "")."""
    s = _ZH_PUNCT_FIX.sub(r"\1", s.strip())
    s = re.sub(r"([。！？])，", r"\1", s)
    return s if _HANZI.search(s) else ""


# ================================================================================ API
GRAMMARS: dict[str, tuple[tuple[str, ...], dict[str, Maker], Callable[[str], str]]] = {
    "en": (EN_TEMPLATES, EN_SLOTS, _en_post),
    "zh": (ZH_TEMPLATES, ZH_SLOTS, _zh_post),
}


def heldout(lang: str) -> list[str]:
    """The hand-written held-out evaluation lines for ``lang`` (``models/corpus/heldout/``).

    These are never produced by :func:`generate`; an absent file means an empty set.
    """
    if lang not in GRAMMARS:
        raise KeyError(lang)
    path = HELDOUT_DIR / f"{lang}.txt"
    if not path.exists():
        return []
    lines = (_clean(x) for x in path.read_text(encoding="utf-8").splitlines())
    return [x for x in lines if x and not x.startswith("#")]


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def generate(lang: str, n: int, *, seed: int = 0) -> list[str]:
    """``n`` distinct sentences in ``lang`` (``"en"`` or ``"zh"``), deterministic in ``seed``.

    Templates are drawn uniformly, so no sentence frame dominates; lines of :func:`heldout`
    are skipped.
    """
    templates, slots, post = GRAMMARS[lang]
    r = random.Random(f"{lang}:{seed}")
    seen: set[str] = set(heldout(lang))
    out: list[str] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 50 * n + 1000:
            raise RuntimeError(f"could only compose {len(out)} distinct {lang} sentences")
        s = _clean(post(expand(r.choice(templates), slots, r)))
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out
