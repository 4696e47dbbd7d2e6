"""Twitch chat: IRC over WebSocket with IRCv3 tags (sans-I/O: text in, messages and events
out).

The client connects to ``wss://irc-ws.chat.twitch.tv``, asks for tags
(``CAP REQ :twitch.tv/tags twitch.tv/commands``), logs in anonymously (``NICK justinfan…``,
no password) and joins ``#channel``. Each WebSocket message holds one or more lines
ending in CRLF: ``@tags :prefix COMMAND params :trailing``. Tag values are escaped (``\\s``
space, ``\\:`` ``;``, ``\\\\`` ``\\``, ``\\r``, ``\\n``).

* ``PRIVMSG #chan :text``: chat; with a ``bits`` tag, a cheer. ``id`` is the message's id,
  ``display-name``/``user-id`` the user, ``badges`` ``broadcaster/1,moderator/1,...``,
  ``emotes`` ``25:0-4,12-16/1902:6-10`` (code point ranges, end inclusive).
* ``USERNOTICE``: ``msg-id`` ``sub``, ``resub`` (``msg-param-cumulative-months``),
  ``subgift`` (``msg-param-recipient-display-name``), ``submysterygift``
  (``msg-param-mass-gift-count``; the subs it gives follow as ``subgift`` lines with the same
  ``msg-param-community-gift-id``), ``raid`` (``msg-param-viewerCount``); others are not chat.
* ``PING`` → answer ``PONG`` with the same parameter; ``RECONNECT``: the server will drop the
  connection soon, connect again at once.

:class:`TwitchSession` holds one connection's state: what to send on open, what each line
asks of the client (pong, reconnect) and the chat events it carries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from emostream.bridge.chat.events import ChatEvent, Kind

PLATFORM = "twitch"
MAX_LINE = 8192  # Twitch's own limit with tags is about 8 KiB; longer is malformed
_UNESCAPE = {"s": " ", ":": ";", "\\": "\\", "r": "\r", "n": "\n"}
NOT_CHAT = frozenset({
    "001", "002", "003", "004", "353", "366", "372", "375", "376", "CAP", "JOIN", "PART",
    "ROOMSTATE", "USERSTATE", "GLOBALUSERSTATE", "CLEARCHAT", "CLEARMSG", "HOSTTARGET",
    "WHISPER", "PONG", "MODE",
})  # fmt: skip


class IrcError(ValueError):
    """A line that is not IRC (the line is skipped)."""


@dataclass(frozen=True)
class IrcMessage:
    command: str
    params: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    prefix: str | None = None

    @property
    def nick(self) -> str:
        return (self.prefix or "").split("!", 1)[0]

    @property
    def trailing(self) -> str:
        return self.params[-1] if self.params else ""


def unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            i += 1
            if i < len(value):
                out.append(_UNESCAPE.get(value[i], value[i]))
        else:
            out.append(c)
        i += 1
    return "".join(out)


def parse_line(line: str) -> IrcMessage:
    """One IRC line (without its CRLF)."""
    if len(line) > MAX_LINE:
        raise IrcError(f"a line of {len(line)} characters (at most {MAX_LINE})")
    rest = line
    tags: dict[str, str] = {}
    if rest.startswith("@"):
        raw, _, rest = rest[1:].partition(" ")
        for item in raw.split(";"):
            key, _, value = item.partition("=")
            if key:
                tags[key] = unescape(value)
    rest = rest.lstrip(" ")
    prefix = None
    if rest.startswith(":"):
        prefix, _, rest = rest[1:].partition(" ")
    rest = rest.lstrip(" ")
    head, sep, trailing = rest.partition(" :")
    if rest.startswith(":"):  # no middle params: "CMD" cannot start with ':'
        raise IrcError("a line without a command")
    words = head.split()
    if not words:
        raise IrcError("a line without a command")
    params = tuple(words[1:]) + ((trailing,) if sep else ())
    return IrcMessage(words[0].upper(), params, tags, prefix)


def format_line(command: str, *params: str) -> str:
    """``command`` and its parameters; the last one as trailing when it needs to be."""
    for p in params:
        if "\r" in p or "\n" in p:
            raise IrcError("a parameter with a line break")
    if params and (not params[-1] or " " in params[-1] or params[-1].startswith(":")):
        return " ".join((command, *params[:-1], ":" + params[-1]))
    return " ".join((command, *params))


def _int(value: str | None, default: int = 0) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


def _emotes(value: str) -> tuple[tuple[int, int], ...]:
    """``25:0-4,12-16/1902:6-10`` → ``((0, 4), (12, 16), (6, 10))``; bad parts are skipped."""
    ranges: list[tuple[int, int]] = []
    for emote in value.split("/"):
        _, _, places = emote.partition(":")
        for place in places.split(","):
            a, _, b = place.partition("-")
            if a.isdigit() and b.isdigit():
                ranges.append((int(a), int(b)))
    return tuple(ranges[:200])


def _roles(tags: dict[str, str]) -> frozenset[str]:
    names = {b.partition("/")[0] for b in tags.get("badges", "").split(",") if b}
    if tags.get("mod") == "1":
        names.add("moderator")
    return frozenset(names & {"broadcaster", "moderator", "vip", "subscriber"})


def _event(kind: Kind, user: str, tags: dict[str, str], **fields: Any) -> ChatEvent:
    return ChatEvent(PLATFORM, kind, user, user_id=tags.get("user-id", ""),
                     msg_id=tags.get("id") or None, roles=_roles(tags), **fields)  # fmt: skip


def to_event(msg: IrcMessage) -> ChatEvent | None:
    """The chat event ``msg`` carries, or ``None`` (not chat)."""
    tags = msg.tags
    user = tags.get("display-name") or tags.get("login") or msg.nick
    if msg.command == "PRIVMSG":
        if len(msg.params) < 2:
            raise IrcError("PRIVMSG without a channel and a text")
        text = msg.trailing
        if text.startswith("\x01ACTION ") and text.endswith("\x01"):  # /me
            text = text[8:-1]
        bits = _int(tags.get("bits"))
        return _event("bits" if bits > 0 else "chat", user, tags, text=text, amount=float(bits),
                      emotes=_emotes(tags.get("emotes", "")))  # fmt: skip
    if msg.command != "USERNOTICE":
        return None
    kind = tags.get("msg-id", "")
    text = msg.trailing if len(msg.params) >= 2 else ""
    emotes = _emotes(tags.get("emotes", "")) if text else ()
    plan = tags.get("msg-param-sub-plan-name") or tags.get("msg-param-sub-plan", "")
    if kind == "sub":
        return _event("sub", user, tags, text=text, item=plan, emotes=emotes)
    if kind == "resub":
        months = _int(tags.get("msg-param-cumulative-months") or tags.get("msg-param-months"), 1)
        return _event("resub", user, tags, text=text, count=max(1, months), item=plan,
                      emotes=emotes)  # fmt: skip
    group = tags.get("msg-param-community-gift-id") or None
    if kind in ("subgift", "anonsubgift"):
        recipient = (tags.get("msg-param-recipient-display-name")
                     or tags.get("msg-param-recipient-user-name", ""))  # fmt: skip
        return _event("subgift", user, tags, item=recipient, group=group)
    if kind in ("submysterygift", "anonsubmysterygift"):
        count = max(1, _int(tags.get("msg-param-mass-gift-count"), 1))
        return _event("subgift", user, tags, count=count, group=group, extra={"mystery": "1"})
    if kind == "raid":
        viewers = _int(tags.get("msg-param-viewerCount"), 1)
        name = tags.get("msg-param-displayName") or user
        return _event("raid", name, tags, count=max(1, viewers))
    return None


Action = Literal["pong", "reconnect", "joined", "notice", "chat", "ignored"]


class TwitchSession:
    """One connection: :meth:`opening` lines, then :meth:`receive` for each WebSocket
    message; :attr:`outgoing` fills with lines to send (PONG)."""

    def __init__(self, channel: str, *, nick: str = "justinfan12345") -> None:
        channel = channel.strip().lstrip("#").lower()
        if not channel or not all(c.isalnum() or c == "_" for c in channel):
            raise ValueError(f"not a Twitch channel name: {channel!r}")
        self.channel = channel
        self.nick = nick
        self.outgoing: list[str] = []
        self.joined = False
        self.reconnect = False

    def opening(self) -> list[str]:
        return [
            format_line("CAP", "REQ", "twitch.tv/tags twitch.tv/commands"),
            format_line("NICK", self.nick),
            format_line("JOIN", f"#{self.channel}"),
        ]

    def receive(self, data: str) -> list[tuple[Action, ChatEvent | str | None]]:
        """Each line's meaning: ``("chat", event)``, ``("notice", text)``, ``("pong", None)``
        (a PONG queued), ``("reconnect", None)``, ``("joined", None)``,
        ``("ignored", command)``; a malformed line raises nothing: it comes back as
        ``("notice", "malformed: …")`` and the next line is read."""
        out: list[tuple[Action, ChatEvent | str | None]] = []
        for line in data.replace("\r\n", "\n").split("\n"):
            if not line.strip():
                continue
            try:
                out.append(self._line(parse_line(line)))
            except IrcError as exc:
                out.append(("notice", f"malformed: {exc}"))
        return out

    def _line(self, msg: IrcMessage) -> tuple[Action, ChatEvent | str | None]:
        if msg.command == "PING":
            self.outgoing.append(format_line("PONG", msg.trailing or "tmi.twitch.tv"))
            return ("pong", None)
        if msg.command == "RECONNECT":
            self.reconnect = True
            return ("reconnect", None)
        if msg.command == "JOIN" and msg.nick.lower() == self.nick.lower():
            self.joined = True
            return ("joined", None)
        if msg.command == "NOTICE":
            return ("notice", msg.trailing)
        if msg.command in ("PRIVMSG", "USERNOTICE"):
            if msg.params and msg.params[0].lower() != f"#{self.channel}":
                return ("ignored", f"{msg.command} for {msg.params[0]}")
            event = to_event(msg)
            if event is None:
                return ("ignored", f"{msg.command} {msg.tags.get('msg-id', '?')}")
            return ("chat", event)
        return ("ignored", msg.command)
