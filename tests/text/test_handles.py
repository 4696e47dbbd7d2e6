"""Chat handles read as a streamer says them (2026-12-06 handles audit, :mod:`emostream.text.handles`).

Before: "@nightowl99" was "at nightowl99" (espeak: "nigh-tole ninety nine") and "xXSniperXx"
"ex ex sniper ex-ex". The @ of an address, URLs, file names, versions and words stay as they were.
"""

import pytest

from emostream.text.english import normalize_english
from emostream.text.handles import say_handle, split_joined
from emostream.text.normalize import normalize
from emostream.text.phonemes import G2P

CASES = [  # (chat line, what normalize() makes of it)
    # mentions
    ("thanks @nightowl99 for the sub", "thanks night owl 99 for the sub"),
    ("shoutout to @nightowl99", "shoutout to night owl 99"),
    ("@Mira_Plays thanks for the follow", "Mira Plays thanks for the follow"),
    ("welcome in @CoolGuy2000!", "welcome in CoolGuy2000!"),
    ("gg @xXSniperXx", "gg Sniper"),
    ("ty @mira.plays, love the art", "ty mira plays, love the art"),
    ("@emostream is live", "emo stream is live"),
    ("hi @darkknight, @ghostrider and @PixelQueen", "hi dark knight, ghost rider and PixelQueen"),
    ("big thanks to @ishowspeed_fan.", "big thanks to i show speed fan."),
    ("@Gamergirl420 what rank are you?", "Gamer girl 420 what rank are you?"),
    ("raid incoming from @vampirequeen's squad", "raid incoming from vampire queen's squad"),
    ("@everyone stream starts now", "everyone stream starts now"),
    ("(cc @sleepycat)", "(cc sleepy cat)"),
    ("@ilovecats thanks!", "i love cats thanks!"),
    ("@KnightRider1982 lol", "Knight Rider 19 82 lol"),  # espeak: "nineteen hundred eighty two"
    ("gg Gamer1905 and CoolGuy2005", "gg Gamer 19 oh 5 and CoolGuy2005"),
    ("follow @ninjattv", "follow ninja TTV"),
    # bare handles
    ("xXSniperXx just raided", "Sniper just raided"),
    ("xX_Dragon_Xx with 20 viewers", "Dragon with 20 viewers"),
    ("shoutout to Pixel_Queen", "shoutout to Pixel Queen"),
    ("welcome CoolGuy2000", "welcome CoolGuy2000"),
    ("nightowl99 just subscribed", "night owl 99 just subscribed"),
    ("thanks dark_knight_77 for the bits", "thanks dark knight 77 for the bits"),
    ("ghostrider_x is here", "ghost rider x is here"),
    ("speedrunsunday42 hosted us", "speedrun sunday 42 hosted us"),
    ("#speedrunsunday clips", "hashtag speedrun sunday clips"),
    ("#TeamBlue and #gg_wp", "hashtag Team Blue and hashtag gg wp"),
    # an @ that keeps its reading
    ("mail me at bob@example.com", "mail me at bob at example.com"),
    ("night_owl99@gmail.com is my email", "night owl99 at gmail.com is my email"),
    ("meet me @ 5", "meet me at 5"),
    ("see you @5pm", "see you at 5pm"),
    ("my email is @gmail.com", "my email is at gmail.com"),
    ("the vod is on youtube.com/@emostream", "the vod is on youtube.com/ at emostream"),
    # not handles: unchanged readings
    ("check out twitch.tv/cool_guy99", "check out twitch.tv/cool guy99"),
    ("open my_file.py and config_v2.yaml", "open my file.py and config v2.yaml"),
    ("update to v1.2.3 today", "update to v1.2.3 today"),
    ("it was 3.14 or 2.5", "it was 3.14 or 2.5"),
    ("rename snake_case vars", "rename snake case vars"),
    ("the nightowl crowd is here", "the nightowl crowd is here"),
    ("I love my PS5 and my xbox360", "I love my PS5 and my xbox360"),
    ("play mp3 files in h264 and ipv6", "play mp3 files in h264 and ipv6"),
    ("covid19 and win10", "covid19 and win10"),
    ("Player1 vs Player2", "Player1 vs Player2"),
    ("gr8 game, see you l8r", "gr8 game, see you l8r"),
    ("YouTube, GitHub and McDonald's", "YouTube, GitHub and McDonald's"),
    ("the therapist was nice", "the therapist was nice"),
    ("that 4head moment", "that 4head moment"),
    ("NASA and the FBI", "NASA and the FBI"),
    ("Itachi123 and Naruto", "Itachi123 and Naruto"),
    ("xXx", "xXx"),
    ("#1 fan", " number 1 fan"),
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_handles_in_chat_lines(text: str, want: str) -> None:
    assert normalize(text) == want


@pytest.mark.parametrize(
    ("run", "want"),
    [
        ("nightowl", "night owl"),
        ("Nightowl", "Night owl"),  # the capital stays on its word
        ("mygamingchannel", "my gaming channel"),
        ("ishowspeed", "i show speed"),
        ("disguisedtoast", "disguised toast"),
        ("night", "night"),  # a word
        ("therapist", "therapist"),  # a word, not "the rapist"
        ("Tyler", "Tyler"),  # a name in the lexicon
        ("itachi", "itachi"),  # "i" + one rare word: no split
        ("kaicenat", "kaicenat"),  # no clean split
        ("NIGHTOWL", "NIGHTOWL"),  # capitals: an acronym's business
        ("owlcat", "owl cat"),
        ("xbox", "xbox"),  # too short to split
    ],
)
def test_split_joined(run: str, want: str) -> None:
    assert split_joined(run) == want


def test_say_handle() -> None:
    assert say_handle("xXx_Dragon_xXx") == "Dragon"
    assert say_handle("XxShadowHunterxX") == "ShadowHunter"  # espeak parts the camel case
    assert say_handle("TheRealMVP") == "TheRealMVP"
    assert say_handle("nightowlTV") == "night owl TV"


def test_english_rules_after_handles() -> None:
    """normalize_english still sees digits and shorthand after a handle is said."""
    assert normalize_english(normalize("ty @nightowl99, gl")) == "thank you night owl 99, good luck"


def test_handle_phonemes() -> None:
    """espeak said nightowl 'naɪɾoʊl' (nigh-tole); now night + owl. (The server normalises a
    line's text before the G2P sees it.)"""
    said = "".join(G2P()(normalize("thanks @nightowl99")).symbols)
    assert "nˈaɪt" in said and "ˈaʊl" in said and "æt" not in said


ZH_CASES = [  # (danmaku line, what normalize() makes of it): ASCII mentions in Mandarin lines
    # a handle's digits are an ID: one by one, in Mandarin (弌: 1 said yī whatever follows)
    ("感谢@nightowl99 的关注", "感谢 night owl 九九 的关注"),
    ("欢迎@gamer_42来到直播间", "欢迎 gamer 四二 来到直播间"),
    ("谢谢@小明123的礼物", "谢谢小明弌二三的礼物"),
    ("@主播说了15次", "@主播说了15次"),  # a count after it: not the handle's digits
    ("欢迎@CoolGuy2000", "欢迎 CoolGuy二零零零"),
    ("@小明 你好，@小红 也好", "@小明 你好,@小红 也好"),  # no digits: as before
    ("欢迎@Pixel_Queen来到直播间", "欢迎 Pixel Queen 来到直播间"),
    ("@xXSniperXx 欢迎", "Sniper 欢迎"),
    ("感谢@mira.plays送的火箭", "感谢 mira plays 送的火箭"),
    ("谢谢@小明 送的火箭", "谢谢@小明 送的火箭"),  # a hanzi name: the Mandarin front end's
    ("邮箱是abc@gmail.com", "邮箱是abc@gmail.com"),  # an address keeps its "at"
    ("发到support@emostream.tv就行", "发到support@emostream.tv就行"),
    ("今天PK赢了", "今天PK赢了"),
]


@pytest.mark.parametrize(("text", "want"), ZH_CASES)
def test_mentions_in_mandarin_lines(text: str, want: str) -> None:
    assert normalize(text) == want
