"""Twitch's IRC lines, alone: tags and their escapes, chat, cheers, subs, gift bombs, raids,
PING/PONG and RECONNECT, and malformed lines skipped."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.bridge.sources.twitch_irc import (
    IrcError,
    TwitchSession,
    format_line,
    parse_line,
    to_event,
    unescape,
)  # fmt: skip

CHAT = ("@badge-info=;badges=moderator/1,partner/1;bits=;color=#FF0000;display-name=Ann;"
        "emotes=25:6-10;id=11-aa;mod=1;user-id=101 :ann!ann@ann.tmi.twitch.tv PRIVMSG #chan "
        ":hello Kappa there")  # fmt: skip


def test_tags_prefix_command_and_params() -> None:
    m = parse_line(CHAT)
    assert m.command == "PRIVMSG" and m.params == ("#chan", "hello Kappa there")
    assert m.nick == "ann" and m.tags["display-name"] == "Ann" and m.tags["bits"] == ""
    assert parse_line("PING :tmi.twitch.tv").params == ("tmi.twitch.tv",)
    assert parse_line(":tmi.twitch.tv 001 justinfan1 :Welcome, GLHF!").command == "001"


def test_tag_values_are_unescaped() -> None:
    assert unescape(r"a\sb\:c\\d\re\nf\q") == "a b;c\\d\re\nfq"
    assert unescape("end\\") == "end"  # a lone trailing backslash is dropped
    m = parse_line(r"@system-msg=5\sgifted\ssubs;x= :tmi.twitch.tv USERNOTICE #chan")
    assert m.tags == {"system-msg": "5 gifted subs", "x": ""}


def test_format_line_puts_a_spaced_last_param_after_a_colon() -> None:
    assert format_line("PONG", "tmi.twitch.tv") == "PONG tmi.twitch.tv"
    assert format_line("CAP", "REQ", "twitch.tv/tags twitch.tv/commands") == (
        "CAP REQ :twitch.tv/tags twitch.tv/commands")  # fmt: skip
    with pytest.raises(IrcError):
        format_line("PRIVMSG", "#c", "two\r\nJOIN #evil")


def test_chat_and_cheer_events() -> None:
    ev = to_event(parse_line(CHAT))
    assert ev is not None and (ev.kind, ev.user, ev.user_id, ev.msg_id) == (
        "chat", "Ann", "101", "11-aa")  # fmt: skip
    assert ev.emotes == ((6, 10),) and ev.roles == {"moderator"}
    cheer = to_event(
        parse_line(
            "@bits=250;display-name=Bo;id=22;user-id=2 :bo!bo@bo PRIVMSG #chan :Cheer250 great run"
        )
    )
    assert cheer is not None and cheer.kind == "bits" and cheer.amount == 250.0
    me = to_event(parse_line(":cc!cc@cc PRIVMSG #chan :\x01ACTION waves\x01"))
    assert me is not None and me.text == "waves" and me.user == "cc" and me.msg_id is None


def test_usernotices_subs_gifts_and_raids() -> None:
    def notice(tags: str, text: str = "") -> object:
        line = f"@{tags} :tmi.twitch.tv USERNOTICE #chan" + (f" :{text}" if text else "")
        return to_event(parse_line(line))

    sub = notice("msg-id=sub;display-name=Dee;id=s1;msg-param-sub-plan=1000")
    assert sub is not None and sub.kind == "sub" and sub.item == "1000"
    resub = notice("msg-id=resub;display-name=Eve;id=s2;msg-param-cumulative-months=14", "hi!")
    assert resub is not None and (resub.kind, resub.count, resub.text) == ("resub", 14, "hi!")
    bomb = notice("msg-id=submysterygift;login=fay;id=g0;msg-param-mass-gift-count=5;"
                  "msg-param-community-gift-id=777")  # fmt: skip
    assert bomb is not None and (bomb.kind, bomb.count, bomb.group, bomb.user) == (
        "subgift", 5, "777", "fay")  # fmt: skip
    one = notice("msg-id=subgift;display-name=Fay;id=g1;msg-param-recipient-display-name=Gus;"
                 "msg-param-community-gift-id=777")  # fmt: skip
    assert one is not None and one.item == "Gus" and one.group == "777" and one.count == 1
    raid = notice("msg-id=raid;display-name=Hal;id=r1;msg-param-viewerCount=42")
    assert raid is not None and (raid.kind, raid.count) == ("raid", 42)
    assert notice("msg-id=announcement;display-name=Ivy;id=a1", "news") is None


def test_session_opens_answers_ping_and_reports_reconnect() -> None:
    s = TwitchSession("#Chan", nick="justinfan99")
    assert s.opening() == ["CAP REQ :twitch.tv/tags twitch.tv/commands", "NICK justinfan99",
                           "JOIN #chan"]  # fmt: skip
    out = s.receive(
        ":tmi.twitch.tv CAP * ACK :twitch.tv/tags twitch.tv/commands\r\n"
        ":justinfan99!justinfan99@justinfan99.tmi.twitch.tv JOIN #chan\r\n"
        "PING :tmi.twitch.tv\r\n" + CHAT + "\r\n:tmi.twitch.tv RECONNECT\r\n"
    )
    assert [a for a, _ in out] == ["ignored", "joined", "pong", "chat", "reconnect"]
    assert s.outgoing == ["PONG tmi.twitch.tv"] and s.joined and s.reconnect


def test_malformed_lines_are_notices_and_the_rest_is_read() -> None:
    s = TwitchSession("chan")
    out = s.receive(
        "@only-tags\r\n:prefix-only\r\n@a=b :x PRIVMSG\r\n" + "x" * 9000 + "\r\n" + CHAT + "\r\n"
    )
    kinds = [a for a, _ in out]
    assert kinds == ["notice", "notice", "notice", "notice", "chat"], out
    assert all(str(v).startswith("malformed: ") for a, v in out if a == "notice")
    other = s.receive(":x!x@x PRIVMSG #elsewhere :hi")
    assert other == [("ignored", "PRIVMSG for #elsewhere")]


@pytest.mark.parametrize("name", ["", "has space", "semi;colon", "#"])
def test_bad_channel_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        TwitchSession(name)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_no_text_makes_the_session_raise(data: str) -> None:
    s = TwitchSession("chan")
    for action, _ in s.receive(data) + s.receive("@a=b;id=x :u!u@u PRIVMSG #chan :" + data):
        assert action in ("chat", "notice", "pong", "reconnect", "joined", "ignored")
