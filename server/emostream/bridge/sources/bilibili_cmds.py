"""Bilibili live messages (operation 5's JSON, by ``cmd``) → chat events (sans-I/O).

* ``DANMU_MSG`` (also with a suffix, ``DANMU_MSG:4:0:2:2:2:0``): ``info[1]`` the text,
  ``info[2]`` ``[uid, name, ...]``, ``info[0][4]`` the time sent (ms), ``info[0][12]`` 1 for a
  sticker (no words), ``info[0][15].extra`` a JSON string whose ``id_str`` identifies it.
* ``SEND_GIFT``: ``data`` with ``uid``, ``uname``, ``giftName``, ``num``, ``price`` (per gift,
  in gold coins: 1000 = 1 CNY), ``coin_type`` (``gold`` paid, ``silver`` free), ``tid``.
* ``SUPER_CHAT_MESSAGE``: ``data`` with ``id``, ``uid``, ``price`` (CNY), ``message``,
  ``user_info.uname``.
* ``GUARD_BUY``: ``data`` with ``uid``, ``username``, ``guard_level`` (1 总督, 2 提督,
  3 舰长), ``num``, ``price`` (gold coins), ``gift_name``, ``start_time``.

:func:`parse` gives the :class:`~emostream.bridge.chat.events.ChatEvent`, ``None`` for a
``cmd`` that is not chat (entering, likes, ranks ...: :data:`IGNORED` and any other), or
raises :class:`BadMessage` for a chat ``cmd`` whose fields are not what they should be.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

from emostream.bridge.chat.events import ChatEvent

PLATFORM = "bilibili"
GUARD_NAMES = {1: "总督", 2: "提督", 3: "舰长"}
CHAT_CMDS = ("DANMU_MSG", "SEND_GIFT", "SUPER_CHAT_MESSAGE", "GUARD_BUY")
# Not chat, not worth a line; known so that the log does not call them unknown.
IGNORED = frozenset({
    "INTERACT_WORD", "ENTRY_EFFECT", "WATCHED_CHANGE", "ONLINE_RANK_COUNT", "ONLINE_RANK_V2",
    "ONLINE_RANK_TOP3", "LIKE_INFO_V3_UPDATE", "LIKE_INFO_V3_CLICK", "COMBO_SEND", "NOTICE_MSG",
    "ROOM_REAL_TIME_MESSAGE_UPDATE", "STOP_LIVE_ROOM_LIST", "WIDGET_BANNER", "HOT_RANK_CHANGED",
    "HOT_RANK_CHANGED_V2", "SUPER_CHAT_MESSAGE_JPN", "SUPER_CHAT_MESSAGE_DELETE", "PREPARING",
    "LIVE", "ROOM_CHANGE", "GUARD_HONOR_THOUSAND", "USER_TOAST_MSG", "POPULARITY_RED_POCKET_NEW",
    "DANMU_AGGREGATION", "ENTRY_EFFECT_MUST_RECEIVE", "AREA_RANK_CHANGED", "PK_BATTLE_START",
    "PK_BATTLE_END", "PK_BATTLE_PROCESS", "SPREAD_SHOW_FEET_V2", "WIDGET_GIFT_STAR_PROCESS",
})  # fmt: skip


class BadMessage(ValueError):
    """A chat message whose fields are not as documented (the message is skipped)."""


def cmd_of(message: dict[str, Any]) -> str | None:
    cmd = message.get("cmd")
    return cmd.split(":", 1)[0] if isinstance(cmd, str) else None


def parse(message: dict[str, Any]) -> ChatEvent | None:
    cmd = cmd_of(message)
    try:
        if cmd == "DANMU_MSG":
            return _danmu(message.get("info"))
        if cmd == "SEND_GIFT":
            return _gift(_data(message))
        if cmd == "SUPER_CHAT_MESSAGE":
            return _superchat(_data(message))
        if cmd == "GUARD_BUY":
            return _guard(_data(message))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise BadMessage(f"{cmd}: {type(exc).__name__}: {exc}") from None
    return None


def _data(message: dict[str, Any]) -> dict[str, Any]:
    data = message.get("data")
    if not isinstance(data, dict):
        raise BadMessage(f"{cmd_of(message)}: 'data' is not an object")
    return data


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise BadMessage(f"{what} is {type(value).__name__}, not a string")
    return str(value)


def _num(value: Any, what: str) -> float:
    if isinstance(value, str):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadMessage(f"{what} is not a number")
    return float(value)


def _danmu(info: Any) -> ChatEvent | None:
    if not isinstance(info, list) or len(info) < 3 or not isinstance(info[0], list):
        raise BadMessage("DANMU_MSG: 'info' is not [meta, text, user, ...]")
    meta, text, user = info[0], info[1], info[2]
    if not isinstance(text, str) or not isinstance(user, list) or len(user) < 2:
        raise BadMessage("DANMU_MSG: 'info' has no text or no user")
    uid, name = _str(user[0], "the user id"), _str(user[1], "the user name")
    sent_ms = meta[4] if len(meta) > 4 and isinstance(meta[4], int) else None
    sticker = len(meta) > 12 and meta[12] == 1
    msg_id = _id_str(meta)
    if msg_id is None and sent_ms is not None:
        msg_id = f"{uid}:{sent_ms}:{zlib.crc32(text.encode()):08x}"
    if sticker:
        text = ""  # a picture: its name is not speech
    return ChatEvent(PLATFORM, "chat", name, text, msg_id=msg_id and f"dm:{msg_id}",
                     user_id=uid)  # fmt: skip


def _id_str(meta: list[Any]) -> str | None:
    if len(meta) > 15 and isinstance(meta[15], dict):
        extra = meta[15].get("extra")
        if isinstance(extra, str) and extra.startswith("{"):
            try:
                parsed = json.loads(extra)
            except json.JSONDecodeError:
                return None
            value = parsed.get("id_str") if isinstance(parsed, dict) else None
            if isinstance(value, str) and value and len(value) <= 100:
                return value
    return None


def _gift(d: dict[str, Any]) -> ChatEvent:
    count = int(_num(d.get("num", 1), "num"))
    price = _num(d.get("price", 0), "price")
    paid = d.get("coin_type", "gold") == "gold" and price > 0
    uid = _str(d["uid"], "uid")
    tid = d.get("tid") or d.get("rnd")
    msg_id = f"gift:{tid}" if isinstance(tid, str | int) and tid else None
    return ChatEvent(
        PLATFORM, "gift" if paid else "free_gift", _str(d.get("uname", ""), "uname"),
        msg_id=msg_id, user_id=uid, amount=price * count / 1000.0 if paid else 0.0,
        count=max(1, count), item=_str(d.get("giftName", "gift"), "giftName"),
    )  # fmt: skip


def _superchat(d: dict[str, Any]) -> ChatEvent:
    user = d.get("user_info")
    name = user.get("uname", "") if isinstance(user, dict) else ""
    sc_id = d.get("id")
    return ChatEvent(
        PLATFORM, "superchat", _str(name, "user_info.uname"), _str(d.get("message", ""),
        "message"), msg_id=f"sc:{sc_id}" if sc_id is not None else None,
        user_id=_str(d["uid"], "uid"), amount=_num(d.get("price", 0), "price"),
    )  # fmt: skip


def _guard(d: dict[str, Any]) -> ChatEvent:
    level = int(_num(d.get("guard_level", 3), "guard_level"))
    uid = _str(d["uid"], "uid")
    start = d.get("start_time")
    count = max(1, int(_num(d.get("num", 1), "num")))
    return ChatEvent(
        PLATFORM, "guard", _str(d.get("username", ""), "username"),
        msg_id=f"guard:{uid}:{start}" if start is not None else None, user_id=uid,
        amount=_num(d.get("price", 0), "price") * count / 1000.0, count=count,
        item=str(d.get("gift_name") or GUARD_NAMES.get(level, "舰长")),
    )  # fmt: skip
