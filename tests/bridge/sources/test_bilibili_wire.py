"""Bilibili's danmaku packets, alone: headers, compressed batches, and every way a packet can
be malformed costing that packet only. Packets here are built by hand with struct (not by
the codec under test), as the platform's documentation lays them out."""

from __future__ import annotations

import json
import struct
import zlib

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emostream.bridge.sources import bilibili_cmds as cmds
from emostream.bridge.sources import bilibili_wire as wire


def packet(op: int, body: bytes, ver: int = 0, header_len: int = 16, length: int | None = None,
           seq: int = 1) -> bytes:  # fmt: skip
    total = header_len + len(body) if length is None else length
    return struct.pack(">IHHII", total, header_len, ver, op, seq) + b"\0" * (header_len - 16) + body


def msg(obj: object) -> bytes:
    return packet(5, json.dumps(obj, ensure_ascii=False).encode())


def danmu(text: str, uid: int = 7, name: str = "ann", id_str: str | None = None) -> dict:
    extra = json.dumps({"id_str": id_str}) if id_str else ""
    meta = [0, 1, 25, 16777215, 1700000000123, 0, 0, "h", 0, 0, 0, "", 0, "{}", "{}",
            {"mode": 0, "extra": extra}]  # fmt: skip
    return {"cmd": "DANMU_MSG", "info": [meta, text, [uid, name, 0, 0, 0, 10000, 1, ""]]}


def test_auth_and_heartbeat_packets_are_laid_out_as_documented() -> None:
    a = wire.auth(5050, key="tok", protover=2)
    length, header, ver, op, seq = struct.unpack(">IHHII", a[:16])
    assert (length, header, ver, op, seq) == (len(a), 16, 1, 7, 1)
    assert json.loads(a[16:]) == {"uid": 0, "roomid": 5050, "protover": 2, "platform": "web",
                                  "type": 2, "key": "tok"}  # fmt: skip
    assert "key" not in json.loads(wire.auth(1)[16:])
    hb = wire.heartbeat()
    assert struct.unpack(">IHHII", hb[:16])[3] == 2 and len(hb) == struct.unpack(">I", hb[:4])[0]


def test_plain_zlib_and_brotli_batches_decode_to_the_same_messages() -> None:
    inner = msg(danmu("你好")) + msg({"cmd": "INTERACT_WORD", "data": {}})
    for data in (inner, packet(5, zlib.compress(inner), ver=2),
                 packet(5, brotli.compress(inner), ver=3)):  # fmt: skip
        out = wire.decode(data)
        assert [p.body["cmd"] for p in out if isinstance(p, wire.Packet)] == [
            "DANMU_MSG", "INTERACT_WORD"]  # fmt: skip


def test_auth_reply_and_heartbeat_reply() -> None:
    out = wire.decode(packet(8, b'{"code":0}', ver=1) + packet(3, struct.pack(">I", 5251), ver=1))
    assert out == [wire.Packet(8, {"code": 0}), wire.Packet(3, 5251)]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x00\x00\x00", "shorter than a header"),
        (packet(5, b"{}", length=999), "a header says 999 bytes"),
        (packet(5, b"{}", header_len=8), "header 8"),
        (packet(5, b"not zlib", ver=2), "version 2 body"),
        (packet(5, b"not brotli", ver=3), "version 3 body"),
        (packet(5, b"{bad json"), "not JSON"),
        (packet(5, b"[1, 2]"), "not an object"),
        (packet(5, b"\xff\xfe"), "not JSON"),
        (packet(5, b"{}", ver=9), "unknown protocol version 9"),
        (packet(3, b"\x00"), "without its popularity"),
        (packet(5, zlib.compress(packet(5, zlib.compress(b"{}"), ver=2)), ver=2), "inside"),
        (packet(5, zlib.compress(b"x" * (wire.MAX_DECOMPRESSED + 10)), ver=2), "inflates past"),
        (packet(5, zlib.compress(msg({"cmd": "A"}))[:-6], ver=2), "cut short"),
    ],
)
def test_malformed_packets_are_reported_not_raised(data: bytes, says: str) -> None:
    out = wire.decode(data)
    bad = [p for p in out if isinstance(p, wire.Malformed)]
    assert len(bad) == 1 and says in bad[0].reason, out


def test_a_bad_packet_costs_only_itself() -> None:
    data = msg(danmu("one")) + packet(5, b"{oops") + msg(danmu("two"))
    out = wire.decode(data)
    assert [type(p).__name__ for p in out] == ["Packet", "Malformed", "Packet"]
    zipped = packet(5, zlib.compress(data), ver=2) + msg(danmu("three"))
    assert len([p for p in wire.decode(zipped) if isinstance(p, wire.Packet)]) == 3


def test_danmu_gift_superchat_and_guard_become_chat_events() -> None:
    ev = cmds.parse(danmu("主播好[doge]", uid=42, name="小明", id_str="abc123"))
    assert ev is not None and (ev.kind, ev.user, ev.user_id, ev.text) == (
        "chat", "小明", "42", "主播好[doge]")  # fmt: skip
    assert ev.msg_id == "dm:abc123"
    no_id = cmds.parse(danmu("hi"))
    assert no_id is not None and no_id.msg_id and no_id.msg_id.startswith("dm:7:1700000000123:")
    assert cmds.parse(danmu("hi")) == no_id  # the same message gets the same id
    gift = cmds.parse({"cmd": "SEND_GIFT", "data": {"uid": 9, "uname": "bo", "giftName": "辣条",
                       "num": 3, "price": 100, "coin_type": "gold", "tid": "t1"}})  # fmt: skip
    assert gift is not None and (gift.kind, gift.count, gift.item, gift.amount) == (
        "gift", 3, "辣条", 0.3)  # fmt: skip
    free = cmds.parse({"cmd": "SEND_GIFT", "data": {"uid": 9, "uname": "bo", "giftName": "小心心",
                       "num": 1, "price": 0, "coin_type": "silver"}})  # fmt: skip
    assert free is not None and free.kind == "free_gift" and free.msg_id is None
    sc = cmds.parse({"cmd": "SUPER_CHAT_MESSAGE", "data": {"id": 77, "uid": 1, "price": 30,
                     "message": "唱首歌吧", "user_info": {"uname": "cc"}}})  # fmt: skip
    assert sc is not None and (sc.kind, sc.amount, sc.text, sc.msg_id) == (
        "superchat", 30.0, "唱首歌吧", "sc:77")  # fmt: skip
    guard = cmds.parse({"cmd": "GUARD_BUY", "data": {"uid": 5, "username": "dd",
                        "guard_level": 3, "num": 1, "price": 198000, "start_time": 17}})  # fmt: skip
    assert guard is not None and (guard.kind, guard.item, guard.amount) == ("guard", "舰长", 198.0)
    assert cmds.parse({"cmd": "DANMU_MSG:4:0:2:2:2:0", **danmu("x")}) is not None  # suffixed cmd


def test_sticker_danmu_has_no_words_and_unknown_cmds_are_not_chat() -> None:
    d = danmu("[大笑]")
    d["info"][0][12] = 1
    ev = cmds.parse(d)
    assert ev is not None and ev.text == ""
    assert cmds.parse({"cmd": "SOMETHING_NEW", "data": {}}) is None
    assert cmds.parse({"cmd": "INTERACT_WORD"}) is None and "INTERACT_WORD" in cmds.IGNORED


@pytest.mark.parametrize(
    "message",
    [
        {"cmd": "DANMU_MSG", "info": "nope"},
        {"cmd": "DANMU_MSG", "info": [[], 5, [1, "a"]]},
        {"cmd": "DANMU_MSG", "info": [[], "hi", [None, "a"]]},
        {"cmd": "SEND_GIFT", "data": []},
        {"cmd": "SEND_GIFT", "data": {"uname": "x"}},  # no uid
        {"cmd": "SEND_GIFT", "data": {"uid": 1, "num": "many"}},
        {"cmd": "SUPER_CHAT_MESSAGE", "data": {"uid": 1, "price": True}},
        {"cmd": "GUARD_BUY", "data": {"uid": [1]}},
    ],
)
def test_chat_cmds_with_wrong_fields_raise_bad_message(message: dict) -> None:
    with pytest.raises(cmds.BadMessage):
        cmds.parse(message)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_no_bytes_make_decode_raise(data: bytes) -> None:
    for p in wire.decode(data) + wire.decode(packet(5, data, ver=2)):
        assert isinstance(p, wire.Packet | wire.Malformed)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c,
                                                                        max_size=4)))  # fmt: skip
def test_chat_cmds_with_any_fields_parse_or_raise_bad_message(value: object) -> None:
    for cmd in cmds.CHAT_CMDS:
        for message in ({"cmd": cmd, "info": value}, {"cmd": cmd, "data": value}):
            try:
                cmds.parse(message)
            except cmds.BadMessage:
                pass
