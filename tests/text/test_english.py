import pytest

from emostream.text.english import normalize_english

CASES = [
    ("It costs $5.", "It costs 5 dollars."),
    ("Only $1 today", "Only 1 dollar today"),
    ("It costs $3.50 today.", "It costs 3 dollars 50 today."),
    ("That's $2.5M!", "That's 2.5 million dollars!"),
    ("We raised $1,200 so far", "We raised 1200 dollars so far"),
    ("I paid €20 and £15.", "I paid 20 euros and 15 pounds."),
    ("It was $10.00 flat", "It was 10 dollars flat"),
    ("Meet at 9:05 pm.", "Meet at 9 oh 5 pm."),
    ("It is 9:00.", "It is 9 o'clock."),
    ("Meet at 12:30.", "Meet at 12 30."),
    ("Stream starts at 20:15", "Stream starts at 20 15"),
    ("We need 10-15 people.", "We need 10 to 15 people."),
    ("They won 3-2!", "They won 3 to 2!"),
    ("Pages 4–7", "Pages 4 to 7"),
    ("Save 10%-20% today", "Save 10% to 20% today"),
    ("It's due 2025-12-31.", "It's due December 31st, 2025."),
    ("from 2026-01-02 on", "from January 2nd, 2026 on"),
    ("I am No.1 and he is No. 2", "I am number 1 and he is number 2"),
    ("No, not now.", "No, not now."),
    ("Call 555-0123 now.", "Call 5 5 5, 0 1 2 3 now."),
    ("Call +1 415 555 0199", "Call plus 1, 4 1 5, 5 5 5, 0 1 9 9"),
    ("In 2026 we won.", "In 20 26 we won."),
    ("since 1905", "since 19 oh 5"),
    ("back in the 1990s", "back in the 19 nineties"),
    ("Back in 1990s style", "Back in 19 nineties style"),
    ("in 2005 it began", "in 2005 it began"),
    ("by 1800", "by 18 hundred"),
    ("We have 2026 fans", "We have 2026 fans"),
    ("Up 30% today.", "Up 30% today."),
    ("Version 2.5 is out", "Version 2.5 is out"),
    ("The 1st and 2nd place.", "The 1st and 2nd place."),
    ("Hello there!", "Hello there!"),
    ("Plan A is fine.", "Plan eigh is fine."),  # the letter, not the article
    ("Option A or option B?", "Option eigh or option B?"),
    ("I got an A on the test.", "I got an eigh on the test."),
    ("A cat sat.", "A cat sat."),  # sentence-initial: the article
    ("It was a good day.", "It was a good day."),
    ("I like A.I. art", "I like A.I. art"),
    ("thx, pls come back", "thanks, please come back"),  # chat shorthand in full
    ("IDK tbh", "I don't know to be honest"),
    ("Thx btw!", "thanks by the way!"),
    ("brb, ngl that was close", "brb, not gonna lie that was close"),  # brb: B R B aloud too
    ("Hm, okay. Hmmm...", "hmm, okay. hmm..."),  # espeak said "aitch em"
    ("Aww, that's cute. Ewww!", "aw, that's cute. ew!"),
    ("Hehehe, gotcha", "heh heh heh, gotcha"),
    ("He was here.", "He was here."),  # words that only look like them stay
    ("Awwards and hems", "Awwards and hems"),
    (
        "Hit 10k followers, 2x faster, level up x2!",
        "Hit 10 thousand followers, 2 times faster, level up times 2!",
    ),
    ("$5k prize", "5 thousand dollars prize"),  # money first: not "5 dollars thousand"
    ("Open 24/7, a 50/50 chance, 7/10 stream", "Open 24 7, a 50 50 chance, 7 out of 10 stream"),
    ("1/2 cup", "1/2 cup"),  # espeak reads fractions
    ("We won 2:1 on a 16:9 screen at 9:05", "We won 2 to 1 on a 16 to 9 screen at 9 oh 5"),
    ("72°F is 22 °C", "72 degrees Fahrenheit is 22 degrees Celsius"),
    ("World War II, Chapter IV", "World War 2, Chapter 4"),  # espeak said "Roman two"
    ("ty! np, tysm, lvl 5", "thank you! no problem, thank you so much, level 5"),
    ("Ty is here, NP-hard", "Ty is here, NP-hard"),  # a name and a term stay
    ("Coming w/ friends, w/o sugar", "Coming with friends, without sugar"),
    # 2026-12-06 chat fixes
    ("see u tmrw, ofc", "see u tomorrow, of course"),  # espeak spelled T M R W
    ("busy rn bc work", "busy right now because work"),
    ("BC and RN stay", "BC and RN stay"),  # upper case: an era, a nurse
    ("1.5M views, 2B people", "1.5 million views, 2 billion people"),  # "one point five em"
    ("5M is 5 metres", "5 million is 5 metres"),
    ("AFK for 5 mins, 30 secs, 2 hrs", "AFK for 5 minutes, 30 seconds, 2 hours"),  # "minz"
    ("the mins and maxes, 1 min", "the mins and maxes, 1 minute"),  # no number: left alone
    ("That's 50-50 at best", "That's 50 50 at best"),  # espeak: "fifty to fifty"
    ("It was 21-19", "It was 21 to 19"),  # a score stays a range
    ("Vol. 2, Ep. 5, Pt. 3", "volume 2, episode 5, part 3"),
    ("awake 20+ hrs, ping 20ms", "awake 20+ hours, ping 20 milliseconds"),
    ("awake 20 plus hrs", "awake 20 plus hours"),  # what normalize() makes of "20+ hrs"
    ("the 90s, the 1980s, in the 20's", "the nineties, the 19 eighties, in the twenties"),
    ("live Mon-Fri, off Sat–Sun", "live Monday to Friday, off Saturday to Sunday"),
    # 2026-12-06: a weekday after on/every/until… (espeak read "Sat" as the verb), ez, versions
    ("starts at 8:30 EST on Sat", "starts at 8 30 EST on Saturday"),
    ("every Fri at 9, until Tue", "every Friday at 9, until Tuesday"),
    ("the Sun is up and she sat down", "the Sun is up and she sat down"),  # words stay
    ("gg ez", "gg easy"),
    ("the patch notes for v2.3.1 dropped", "the patch notes for version 2.3.1 dropped"),
    ("open dev.v2.api", "open dev.v2.api"),  # inside a name: left alone
    ("POV: nah fr fr", "P O V: nah for real for real"),
    ("FR and fry stay", "FR and fry stay"),
    ("LET'S GOOOO, soooo good, nooooo", "LET'S GO, so good, no"),  # espeak: "suːuː"
    ("heyyy whyyy, Yooo", "hey why, Yo"),
    ("too good, see you, kisss", "too good, see you, kisss"),  # real doubles and s stay
    ("x<3 and 3<4, VS Code", "x<3 and 3<4, VS Code"),  # comparisons, a name stay
    (
        "idc, w/e, approx 5, cats vs dogs",
        "I don't care, whatever, approximately 5, cats versus dogs",
    ),
    # 2026-12-06 chat audit (100 chat lines through espeak)
    ("mhm, yeah. Mm-hmm", "um-hum, yeah. um-hum"),  # espeak: "em aitch em"
    ("shh, Shhh! ssh into it", "sch, sch! ssh into it"),  # "ess aitch aitch"; ssh the tool
    ("LUL he fell, lul", "lul he fell, lul"),  # capitals: "el you el"
    # 2026-12-06, later: espeak spelled brr/grr as letters, said uhh "oo", ummm "um-um", oooh "oo-oh"
    ("Brrr it's cold. Grr, lag!", "burr it's cold. gurr, lag!"),
    ("uhh, ummm, Ooooh nice", "uh, um, ooh nice"),
    ("ttyl, ily! istg wyd", "talk to you later, I love you! I swear to god what you doing"),
    ("iirc afaik, tyvm", "if I remember correctly as far as I know, thank you very much"),
    ("cya, sry, hmu", "see ya, sorry, hit me up"),
    ("srsly coz obv, abt to go b4 2moro", "seriously cuz obviously, about to go before tomorrow"),
    ("l8 again m8, str8 up", "late again mate, straight up"),
    ("ABT and B4 stay, 8 m8s", "ABT and B4 stay, 8 m8s"),
    ("yw, ppl, new msg, gn, gm", "you're welcome, people, new message, good night, good morning"),
    ("MSG and GN stay, an emo song, Emos", "MSG and GN stay, an eemo song, Eemos"),
    ("emoji, emote, emotion, demo", "emoji, emote, emotion, demo"),
    ("bro, grr8, error, um, uh, oh, umbrella", "bro, grr8, error, um, uh, oh, umbrella"),
    ("hahahaha that voice crack, Haha", "ha ha ha ha that voice crack, ha ha"),
    ("imho, happy bday, BDAY", "in my humble opinion, happy birthday, birthday"),
    ("ggs, GGs, eggs", "gg's, gg's, eggs"),  # espeak: "G G S", "G G"
    ("gl hf, glhf!", "good luck have fun, good luck, have fun!"),
    ("GL and HF stay, OpenGL", "GL and HF stay, OpenGL"),
    (
        "gr8, see you l8r, stream 2day, live 2nite, a 2-day pass",
        "great, see you later, stream today, live tonight, a 2-day pass",
    ),
    ("met irl, IRL, girl", "met I R L, I R L, girl"),  # espeak: "earl"
    ("omfg, lmfaooo", "O M F G, L M F eigh O"),  # espeak: "ahmfg", "el-em-fow"
    ("at https://emostream.tv/schedule", "at emostream.tv/schedule"),
    ("example.fr, hf.co, foo/ty, ty", "example.fr, hf.co, foo/ty, thank you"),  # was "for real"
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_normalize_english(text: str, want: str) -> None:
    assert normalize_english(text) == want
