"""``emostream danmaku --source`` against local fake platforms (tests/bridge/fakes.py) and a
real server on loopback (voice joe): chat, gifts and a spam burst are spoken in priority order
or dropped with their reasons, the platform dropping the connection costs nothing and speaks
nothing twice, and malformed input from the platform is logged and skipped."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from emostream.bridge.chat.policy import ChatPolicy
from emostream.bridge.chat.rules import ChatRules, rules_from_dict
from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge
from emostream.bridge.lines import Backoff, ChatLine, LineParser, Outbox
from emostream.bridge.sources.bilibili import BilibiliSource
from emostream.bridge.sources.twitch import TwitchSource
from emostream.voices.piper_voice import PiperVoice
from tests.bridge import fakes
from tests.bridge.test_danmaku import PCM24, Recorder, make_app
from tests.conftest import ServerThread

# joe reads English only: the Bilibili templates in English here (the defaults, Mandarin, are
# checked in tests/bridge/chat/test_policy.py)
RULES = rules_from_dict(
    {"templates": {"bilibili": {"gift": "Thanks {user} for {count} {item}",
                                "superchat": "Super chat from {user}: {text}"}}},
    ChatRules(gift_merge_s=0.3, user_lines=3, user_window_s=30, duplicate_window_s=30),
)  # fmt: skip


@pytest.fixture(scope="module")
def tts(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    # line_pace_lead_ms 0: lines as fast as joe makes them (no real-time pacing in tests)
    app = make_app(joe, str(tmp_path_factory.mktemp("live")), line_pace_lead_ms=0,
                   line_queue_max=32)  # fmt: skip
    with ServerThread(app) as srv:
        yield srv


@pytest.fixture(scope="module")
def paced(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """A server that paces lines to a listener in real time (its default): lines wait there
    while earlier audio plays, so a later, higher-priority line goes before them."""
    app = make_app(joe, str(tmp_path_factory.mktemp("paced")), line_queue_max=32)
    with ServerThread(app) as srv:
        yield srv


class Live:
    """A bridge on a source, with a record of every line it held (id → text)."""

    def __init__(self, url: str, source: Any, rules: ChatRules = RULES) -> None:
        self.rec = Recorder()
        self.lines: list[ChatLine] = []
        outbox = Outbox(fields=PCM24)
        add = outbox.add

        def recording_add(line: ChatLine, now: float) -> list[dict[str, Any]]:
            self.lines.append(line)
            return add(line, now)

        outbox.add = recording_add  # type: ignore[method-assign]
        self.bridge = DanmakuBridge(
            BridgeOptions(url=url, fields=PCM24, backoff_max_s=0.2), LineParser(), outbox,
            emit=self.rec, audio=None, backoff=Backoff(initial_s=0.1, max_s=0.3),
            source=source, policy=ChatPolicy(rules),
        )  # fmt: skip

    def spoken(self) -> list[str]:
        text = {line.id: line.text for line in self.lines}
        return [text[e["id"]] for e in self.rec.of("done") if not e.get("cancelled")]

    def drops(self) -> Counter[str]:
        return Counter(e["reason"] for e in self.rec.of("line_dropped") if e["where"] == "chat")

    async def run_until(self, done: Any, timeout: float = 40.0) -> int:
        task = asyncio.create_task(self.bridge.run())
        try:
            async with asyncio.timeout(timeout):
                while not done() and not task.done():
                    await asyncio.sleep(0.05)
        except TimeoutError:
            self.bridge.stop_now.set()
            self.bridge.end_of_input()
            await asyncio.wait_for(task, 30)
            raise AssertionError(f"not done in {timeout} s; events: {self.rec.events}") from None
        self.bridge.end_of_input()
        return await asyncio.wait_for(task, 30)


SPAMMER_LINES = [
    "I like turtles",
    "the weather is nice",
    "my cat says hi",
    "pizza or pasta",
    "who won yesterday",
]


def bilibili_burst() -> list[dict[str, Any]]:
    """Chat, a gift combo, a super chat and spam: all in one compressed batch."""
    return [
        fakes.danmu("good evening", 1, "ming", "d1"),
        fakes.danmu("what game today", 2, "hong", "d2"),
        fakes.gift(3, "qiang", "roses", 1, "g1"),
        fakes.gift(3, "qiang", "roses", 2, "g2"),
        fakes.superchat(90, 4, "boss", "can you sing", 30),
        *[fakes.danmu("666666" + "6" * i, 10 + i, f"fan{i}", f"s{i}") for i in range(5)],
        *[fakes.danmu(text, 20, "spammer", f"r{i}") for i, text in enumerate(SPAMMER_LINES)],
    ]


def test_bilibili_chat_in_priority_order_spam_dropped_and_a_reconnect_speaks_nothing_twice(
    paced: ServerThread,
) -> None:
    burst = bilibili_burst()
    scripts = [
        # the first connection: the burst, then the server drops the connection mid-stream
        [fakes.bili_batch(*burst), ("sleep", 0.5), ("drop",)],
        # the second: the platform sends the last messages again (same ids), then a new one
        [fakes.bili_batch(*burst[-3:]), fakes.bili_msg(fakes.danmu("after the reconnect", 5, "gang",
                                                                   "n1")), ("hold",)],
    ]  # fmt: skip

    async def go() -> Live:
        async with fakes.FakeBilibili(scripts) as fake:
            source = BilibiliSource(7, api=fake.api, heartbeat_s=0.2)
            live = Live(paced.ws_url, source, rules=RULES.with_(ttl_s={**RULES.ttl_s, "chat": 60}))
            rc = await live.run_until(
                lambda: "after the reconnect" in live.spoken() and live.bridge.outbox.drained,
                timeout=60,
            )
            assert rc == 0 and fake.connections == 2 and fake.heartbeats >= 1
            assert all(a["roomid"] == 7007 and a["key"] == "tok-123" and a["uid"] == 0
                       for a in fake.auths)  # fmt: skip
            return live

    live = asyncio.run(go())
    spoken = live.spoken()
    # the super chat first, then the gift combo (merged: 1 + 2; it comes gift_merge_s later,
    # while the chat waits), then chat in arrival order
    assert spoken[0] == "Super chat from boss: can you sing"
    assert spoken[1] == "Thanks qiang for 3 roses"
    assert spoken[2:5] == ["good evening", "what game today", "666"]
    assert spoken[5:8] == SPAMMER_LINES[:3]
    assert spoken[8:] == ["after the reconnect"]
    assert len(spoken) == len(set(spoken))  # nothing twice
    assert live.drops() == {"duplicate": 4, "rate_limited": 2, "already_seen": 3}
    rate = [e for e in live.rec.of("line_dropped") if e["reason"] == "rate_limited"]
    assert all(e["user"] == "spammer" and "again in" in e["detail"] for e in rate)
    sources = [e for e in live.rec.events if e["type"] == "source"]
    assert [e["event"] for e in sources] == ["connected", "disconnected", "connected"]
    (summary,) = [e for e in live.rec.events if e.get("event") == "exit"]
    assert summary["chat"]["dropped"] == dict(sorted(live.drops().items()))
    assert summary["chat"]["source"]["connections"] == 2 and summary["spoken"] == 9


def test_bilibili_bad_input_is_logged_and_skipped(tts: ServerThread) -> None:
    bad_zlib = fakes.bili_packet(5, b"not zlib at all", ver=2)
    scripts = [
        [
            "a text frame",
            b"\x00\x01",  # shorter than a header
            fakes.bili_packet(5, b"{broken json"),
            fakes.bili_msg({"cmd": "DANMU_MSG", "info": "not a list"}),
            bad_zlib,
            fakes.bili_msg({"cmd": "SOME_NEW_THING", "data": {}}),
            fakes.bili_msg({"cmd": "SOME_NEW_THING", "data": {}}),  # logged once
            fakes.bili_msg({"cmd": "INTERACT_WORD", "data": {}}),  # known, not chat: silent
            fakes.bili_msg(fakes.danmu("good news after bad", 1, "ming", "ok1")),
            fakes.bili_msg(fakes.danmu("a very long line " * 20, 2, "talker", "long1")),
            b"\x00" * (5 << 20),  # bigger than the bridge takes: the connection is dropped
        ],
        [fakes.bili_msg(fakes.danmu("still here after that", 1, "ming", "ok2")), ("hold",)],
    ]

    async def go() -> Live:
        async with fakes.FakeBilibili(scripts) as fake:
            live = Live(tts.ws_url, BilibiliSource(7, api=fake.api))
            rc = await live.run_until(lambda: "still here after that" in live.spoken())
            assert rc == 0 and fake.connections == 2
            return live

    live = asyncio.run(go())
    assert live.spoken() == ["good news after bad", "still here after that"]
    errors = [e["message"] for e in live.rec.of("input_error")]
    assert len(errors) == 5 and all(e for e in errors)
    assert any("text message" in e for e in errors) and any("not JSON" in e for e in errors)
    assert any("DANMU_MSG" in e for e in errors) and any("version 2 body" in e for e in errors)
    unknown = [e for e in live.rec.events if e.get("event") == "unknown_message"]
    assert [e["cmd"] for e in unknown] == ["SOME_NEW_THING"]
    assert live.drops() == {"too_long": 1}
    gone = [e for e in live.rec.events if e.get("event") == "disconnected"
            and e["type"] == "source"]  # fmt: skip
    assert gone and "1009" in gone[0]["reason"]  # message too big


def test_a_room_that_does_not_exist_ends_the_bridge(tts: ServerThread) -> None:
    async def go() -> tuple[int, Live]:
        async with fakes.FakeBilibili([]) as fake:
            live = Live(tts.ws_url, BilibiliSource(99, api=fake.api))
            return await asyncio.wait_for(live.bridge.run(), 30), live

    rc, live = asyncio.run(go())
    (summary,) = [e for e in live.rec.events if e.get("event") == "exit"]
    assert rc == 2 and "no live room 99" in summary["error"]


def twitch_first_batch() -> str:
    lines = [
        fakes.privmsg("hello everyone", "ann", "t1"),
        fakes.privmsg("what game is this", "bob", "t2"),
        fakes.privmsg("Cheer100 love the stream", "cy", "t3", bits="100"),
        fakes.usernotice("resub", "dee", "t4", "two years!", **{"msg-param-cumulative-months": "24"}),
        *[fakes.privmsg("LUL LUL LUL" + " LUL" * i, f"fan{i}", f"l{i}") for i in range(4)],
        fakes.privmsg("Kappa", "emo", "t5", emotes="25:0-4"),
    ]  # fmt: skip
    return "\r\n".join(lines) + "\r\n"


def test_twitch_chat_ping_reconnect_and_a_dropped_connection(tts: ServerThread) -> None:
    scripts = [
        [twitch_first_batch(), ("ping",), ("sleep", 0.3), ("reconnect",)],
        [fakes.privmsg("hello everyone", "ann", "t1") + "\r\n",  # sent again: same id
         fakes.privmsg("second connection", "eve", "t6") + "\r\n", ("sleep", 0.3), ("drop",)],
        [fakes.privmsg("third connection", "fay", "t7") + "\r\n", ("hold",)],
    ]  # fmt: skip

    async def go() -> Live:
        async with fakes.FakeTwitch(scripts) as fake:
            live = Live(tts.ws_url, TwitchSource("chan", url=fake.url))
            rc = await live.run_until(lambda: "third connection" in live.spoken()
                                      and live.bridge.outbox.drained)  # fmt: skip
            assert rc == 0 and fake.connections == 3 and fake.pongs == 1
            assert all(n.startswith("justinfan") for n in fake.nicks)
            return live

    live = asyncio.run(go())
    spoken = live.spoken()
    assert spoken[:2] == ["Dee subscribed for 24 months. two years!",
                          "Cy cheered 100 bits. love the stream"]  # fmt: skip
    assert spoken[2:] == ["hello everyone", "what game is this", "LUL LUL LUL", "second connection",
                          "third connection"]  # fmt: skip
    assert live.drops() == {"duplicate": 3, "empty": 1, "already_seen": 1}
    reasons = [e["reason"] for e in live.rec.events
               if e["type"] == "source" and e["event"] == "disconnected"]  # fmt: skip
    assert reasons[0] == "reconnect" and "no close frame" in reasons[1]
    retries = [e["retry_in_s"] for e in live.rec.events if e.get("event") == "disconnected"
               and e["type"] == "source"]  # fmt: skip
    assert retries[0] == 0.0  # RECONNECT: at once


def test_twitch_bad_lines_are_logged_and_skipped(tts: ServerThread) -> None:
    scripts = [[
        "@just-tags\r\n:only-a-prefix\r\n" + "x" * 9000 + "\r\n",
        b"\xff\xfe not utf-8",
        fakes.usernotice("announcement", "gus", "u1", "news") + "\r\n",
        ":tmi.twitch.tv NOTICE #chan :This channel has been suspended.\r\n",
        fakes.privmsg("still here", "hal", "h1") + "\r\n",
        ("hold",),
    ]]  # fmt: skip

    async def go() -> Live:
        async with fakes.FakeTwitch(scripts) as fake:
            live = Live(tts.ws_url, TwitchSource("chan", url=fake.url))
            assert await live.run_until(lambda: "still here" in live.spoken()) == 0
            return live

    live = asyncio.run(go())
    assert live.spoken() == ["still here"]
    assert len(live.rec.of("input_error")) == 4
    notices = [e["message"] for e in live.rec.events if e.get("event") == "notice"]
    assert notices == ["This channel has been suspended."]
    assert [e["cmd"] for e in live.rec.events if e.get("event") == "unknown_message"] == [
        "USERNOTICE announcement"]  # fmt: skip


def test_cli_reads_a_twitch_channel_and_exits_on_sigterm(tts: ServerThread) -> None:
    """The whole command: --source, --block-user and --user-rate reach the bridge."""
    scripts = [[fakes.privmsg("from the cli", "ann", "c1") + "\r\n"
                + fakes.privmsg("blocked words", "troll", "c2") + "\r\n", ("hold",)]]  # fmt: skip

    async def go() -> list[dict[str, Any]]:
        async with fakes.FakeTwitch(scripts) as fake:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "emostream", "danmaku", "--url", tts.ws_url,
                "--voice", "joe", "-o", "none", "--source", "twitch:Chan",
                "--source-url", fake.url, "--block-user", "TROLL", "--user-rate", "5/10",
                stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip
            assert proc.stderr is not None
            events: list[dict[str, Any]] = []
            async with asyncio.timeout(60):
                while not any(e["type"] == "done" for e in events):
                    line = await proc.stderr.readline()
                    assert line, "the bridge exited early"
                    if line.startswith(b"{"):
                        events.append(json.loads(line))
            proc.terminate()
            _, tail = await proc.communicate()
            assert await proc.wait() == 0
            events += [json.loads(x) for x in (tail or b"").splitlines() if x.startswith(b"{")]
            return events

    events = asyncio.run(go())
    blocked = [e for e in events if e["type"] == "line_dropped"]
    assert blocked and blocked[0]["reason"] == "blocked" and blocked[0]["user"] == "Troll"
    assert len([e for e in events if e["type"] == "done"]) == 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--source", "youtube:x"], "bilibili:ROOM or twitch:CHANNEL"),
        (["--source", "bilibili:abc"], "is a number"),
        (["--source", "twitch:bad name"], "not a Twitch channel"),
        (["--user-rate", "fast"], "N/SECONDS"),
        (["--source-url", "http://x"], "needs --source"),
        (["--source", "twitch:x", "--listen", "tcp:127.0.0.1:9"], "give one"),
        (["--reply-url", "http://127.0.0.1:1/v1"], "needs --reply-model"),
        (["--reply-model", "m"], "need --reply-url"),
    ],
)
def test_cli_refuses_bad_live_options(argv: list[str], says: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "emostream", "danmaku", "-o", "none", *argv],
                          input=b"", capture_output=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 2 and says in proc.stderr.decode(), proc.stderr.decode()
