"""The chat policy, alone: priorities and TTLs by kind, every drop with its reason, gift
combos merged, and what is spoken for each kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from emostream.bridge.chat.events import ChatEvent
from emostream.bridge.chat.policy import ChatPolicy
from emostream.bridge.chat.rules import ChatRules, RulesError, load_rules, rules_from_dict
from emostream.bridge.chat.spam import Duplicates, SeenIds, UserRate, normalise


def chat(text: str, user: str = "ann", msg_id: str | None = None, **kw: object) -> ChatEvent:
    return ChatEvent("twitch", "chat", user, text, msg_id=msg_id, **kw)  # type: ignore[arg-type]


def accept(policy: ChatPolicy, ev: ChatEvent, now: float = 0.0) -> tuple[list, list]:
    return policy.accept(ev, now)


def test_priorities_ttls_and_templates_by_kind() -> None:
    p = ChatPolicy(ChatRules(gift_merge_s=0))
    cases = [
        (chat("hello there"), 0, 8000, "hello there"),
        (ChatEvent("twitch", "bits", "bo", "Cheer100 nice", amount=100), 2, 30000,
         "bo cheered 100 bits. nice"),
        (ChatEvent("twitch", "resub", "cy", "", count=14), 3, 30000, "cy subscribed for 14 months."),
        (ChatEvent("twitch", "subgift", "di", count=5), 3, 30000, "di gifted 5 subs!"),
        (ChatEvent("twitch", "raid", "ed", count=42), 3, 30000, "ed is raiding with 42 viewers!"),
        (ChatEvent("bilibili", "gift", "小明", count=3, item="辣条", amount=0.3), 2, 30000,
         "谢谢小明送的3个辣条"),
        (ChatEvent("bilibili", "superchat", "cc", "唱首歌吧", amount=30), 5, 60000,
         "cc的醒目留言：唱首歌吧"),
        (ChatEvent("bilibili", "superchat", "cc", "[doge]", amount=30), 5, 60000, None),
        (ChatEvent("bilibili", "guard", "dd", item="舰长", amount=198), 4, 60000, "感谢dd开通舰长"),
    ]  # fmt: skip
    for ev, priority, ttl, spoken in cases:
        lines, drops = accept(p, ev)
        if spoken is None:
            assert drops[0]["reason"] == "empty"
            continue
        assert not drops, drops
        (line,) = lines
        assert (line.priority, line.ttl_ms, line.text) == (priority, ttl, spoken), ev
        assert line.user == ev.user and line.prompt and ev.user in line.prompt


def test_every_drop_says_why() -> None:
    rules = ChatRules(user_lines=2, user_window_s=10, max_chars=20,
                      block_users=frozenset({"troll"}), block_words=("badword",))  # fmt: skip
    p = ChatPolicy(rules)
    reasons = []
    for ev, t in [
        (chat("first", msg_id="m1"), 0.0),
        (chat("first again", msg_id="m1"), 0.1),  # same id: a replay after a reconnect
        (chat("hi", user="Troll"), 0.2),
        (chat("you BADWORD you", user="cy"), 0.3),
        (chat("abcdefghij" * 3, user="dd"), 0.4),
        (chat("second", user="ann"), 0.5),
        (chat("third", user="ann"), 0.6),  # ann's third within 10 s
        (chat("Second!!", user="ed"), 0.7),  # the same as ann's, near enough
        (chat("\u200b[", user="fi", emotes=((0, 1),)), 0.8),
    ]:
        lines, drops = p.accept(ev, t)
        reasons.append(drops[0]["reason"] if drops else "spoken")
    assert reasons == ["spoken", "already_seen", "blocked", "blocked", "too_long", "spoken",
                       "rate_limited", "duplicate", "empty"]  # fmt: skip
    assert p.dropped == {"already_seen": 1, "blocked": 2, "too_long": 1, "rate_limited": 1,
                         "duplicate": 1, "empty": 1}  # fmt: skip
    lines, drops = p.accept(chat("later", user="ann"), 10.6)  # the window has passed
    assert lines and not drops
    drop = p.accept(chat("later", user="ann"), 10.7)[1][0]
    assert drop["where"] == "chat" and drop["user"] == "ann" and drop["platform"] == "twitch"


def test_paid_events_skip_rate_and_duplicate_limits_and_are_cut_not_dropped() -> None:
    p = ChatPolicy(ChatRules(user_lines=1, max_chars=30, gift_merge_s=0))
    assert p.accept(chat("hi"), 0)[0]
    for i in range(3):
        lines, drops = p.accept(ChatEvent("twitch", "bits", "ann", "hi", amount=10), i)
        assert lines and not drops
    long = "word " * 20
    (line,), _ = p.accept(ChatEvent("bilibili", "superchat", "ann", long, amount=50), 5)
    assert line.text.endswith("…") and len(line.text) < 60


def test_gift_combos_merge_into_one_line_once_quiet() -> None:
    p = ChatPolicy(ChatRules(gift_merge_s=2.0))
    gift = ChatEvent("bilibili", "gift", "bo", user_id="9", count=1, item="辣条", amount=0.1)
    for t in (0.0, 0.5, 1.0, 1.5):
        assert p.accept(gift, t) == ([], [])
    assert p.merging == 1 and p.due(3.0) == []  # 1.5 s since the last one
    (line,) = p.due(3.5)
    assert line.text == "谢谢bo送的4个辣条" and p.merging == 0
    other = ChatEvent("bilibili", "gift", "cy", user_id="8", count=2, item="花", amount=0.2)
    p.accept(other, 10.0)
    (flushed,) = p.flush()
    assert "2个花" in flushed.text


def test_a_mystery_gift_is_spoken_once_not_per_sub() -> None:
    p = ChatPolicy(ChatRules(gift_merge_s=0))
    bomb = ChatEvent("twitch", "subgift", "fay", count=5, group="777", extra={"mystery": "1"})
    (line,), _ = p.accept(bomb, 0)
    assert line.text == "fay gifted 5 subs!"
    for i in range(5):
        one = ChatEvent("twitch", "subgift", "fay", item=f"r{i}", group="777", msg_id=f"g{i}")
        assert p.accept(one, 0.1)[1][0]["reason"] == "part_of_gift"
    lone = ChatEvent("twitch", "subgift", "fay", item="gus", group="888")
    (line,), _ = p.accept(lone, 0.2)
    assert line.text == "fay gifted a sub to gus!"


def test_stdin_style_template_and_names_cleaned() -> None:
    p = ChatPolicy(ChatRules(chat_template="{user} says {text}"))
    (line,), _ = p.accept(chat("hey  there\x07", user="a\u202eb\nc"), 0)
    assert line.text == "abc says hey there"


def test_line_ids_are_unique_and_bounded() -> None:
    p = ChatPolicy(ChatRules(duplicate_window_s=0, user_lines=0))
    ids = {p.accept(chat("x", msg_id="z" * 300), float(i))[0][0].id if i == 0
           else p.accept(chat("x"), float(i))[0][0].id for i in range(5)}  # fmt: skip
    assert len(ids) == 5 and all(len(i) <= 128 for i in ids)


def test_normalise_and_duplicates() -> None:
    assert normalise("66666666") == normalise("666") == "6"
    assert normalise("LOL lol lol!!") == "lol" and normalise("哈哈哈哈哈") == "哈"
    d = Duplicates(window_s=10, similarity=0.85)
    assert d.check("Great stream today!", 0) is None
    assert d.check("great stream today", 1) is not None
    assert d.check("great stream todayy", 2) is not None  # near-identical
    assert d.check("what game is this?", 3) is None
    assert d.check("great stream today", 20) is None  # the window has passed
    assert d.check("🎉🎉", 21) is None and d.check("🎉🎉", 22) is None  # nothing to compare
    strict = Duplicates(window_s=10, similarity=1.0)
    assert strict.check("abcdefghij", 0) is None and strict.check("abcdefghik", 1) is None


def test_user_rate_and_seen_ids_are_bounded() -> None:
    r = UserRate(lines=2, window_s=10)
    assert [r.allow("a", t) for t in (0, 1, 2, 10.5)] == [True, True, False, True]
    assert r.wait_s("a", 10.5) == pytest.approx(0.5)
    s = SeenIds(limit=3)
    assert all(s.add(str(i)) for i in range(5)) and "0" not in s and "4" in s


def test_rules_file_and_its_errors(tmp_path: Path) -> None:
    f = tmp_path / "rules.toml"
    f.write_text(
        '[priority]\nchat = 1\n[limits]\nuser_lines = 5\n[block]\nusers = ["Bot"]\n'
        '[templates.twitch]\nbits = "{user}: {amount} bits"\n',
        encoding="utf-8",
    )
    r = load_rules(f)
    assert r.priority["chat"] == 1 and r.priority["superchat"] == 5 and r.user_lines == 5
    assert r.block_users == {"bot"} and r.template("twitch", "bits") == "{user}: {amount} bits"
    assert r.template("bilibili", "gift", 3) == "谢谢{user}送的{count}个{item}"
    assert r.template("twitch", "gift", 3) == "Thanks {user} for {count} {item}!"
    assert r.with_(block_users=["x"]).block_users == {"bot", "x"}
    for bad, says in [
        ({"priority": {"chatt": 1}}, "unknown kind"),
        ({"priority": {"chat": 1.5}}, "whole number"),
        ({"limits": {"user_lines": -1}}, "user_lines"),
        ({"limits": {"similarity": 0}}, "similarity"),
        ({"limits": {"nope": 1}}, "unknown key"),
        ({"block": {"users": "bot"}}, "list of strings"),
        ({"templates": {"twitch": {"bits": "{who}"}}}, "not {who}"),
        ({"extra": {}}, "unknown section"),
        ({"ttl_s": {"chat": 0}}, "ttl_s.chat"),
    ]:
        with pytest.raises(RulesError, match=says):
            rules_from_dict(bad)
    f.write_text("[priority\n", encoding="utf-8")
    with pytest.raises(RulesError, match="not valid TOML"):
        load_rules(f)
    with pytest.raises(RulesError, match="cannot read"):
        load_rules(tmp_path / "missing.toml")
