"""``emostream danmaku``'s options for live chat: a platform source, the chat policy's rules
and the reply step (the command's other options: :mod:`emostream.cli`; its run:
:mod:`emostream.cli.danmaku`).

:func:`add_live_arguments` adds them to the command's parser (imports nothing heavy: the CLI
builds its parser before it knows the command); :func:`live_setup` turns them into what the
bridge takes, or raises ``ValueError`` saying which option is wrong.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emostream.bridge.chat.policy import ChatPolicy
    from emostream.bridge.lines import Outbox
    from emostream.bridge.reply.client import ReplyOptions
    from emostream.bridge.reply.outbox import ReplyOutbox
    from emostream.bridge.sources.connect import ChatSource

REPLY_PACE_LEAD_S = 1.0  # a reply starts when at most this much audio is left to play


def add_live_arguments(d: argparse.ArgumentParser) -> None:
    g = d.add_argument_group("live chat (instead of stdin)")
    g.add_argument(
        "--source", default=None, metavar="bilibili:ROOM|twitch:CHANNEL",
        help="read a live stream's chat, anonymously: Bilibili's danmaku of room ROOM "
        "(live.bilibili.com/ROOM) or Twitch chat of CHANNEL; gifts, super chats, subs and "
        "bits are spoken first (docs/live.md)",
    )  # fmt: skip
    g.add_argument("--source-url", default=None, metavar="URL",
                   help="where the source connects: Bilibili's API base, Twitch's IRC "
                   "WebSocket (default: the platform's own)")  # fmt: skip
    g.add_argument("--chat-rules", default=None, metavar="FILE",
                   help="a TOML file of priorities, TTLs, limits, block list and templates "
                   "(docs/live.md); the flags below override it")  # fmt: skip
    g.add_argument(
        "--block-user",
        action="append",
        default=None,
        metavar="NAME",
        help="never speak this user (name or id; repeat the flag for more)",
    )
    g.add_argument(
        "--block-word",
        action="append",
        default=None,
        metavar="WORD",
        help="drop any line containing WORD (any case; repeatable)",
    )
    g.add_argument("--user-rate", default=None, metavar="N/SECONDS",
                   help="at most N lines per user per SECONDS (default 3/30; 0 for no limit); "
                   "paid events are not limited")  # fmt: skip
    g.add_argument("--dedupe-window-s", type=float, default=None, metavar="S",
                   help="drop a line the same as or nearly the same as one seen within S "
                   "seconds (default 30; 0: off)")  # fmt: skip
    g.add_argument("--gift-merge-s", type=float, default=None, metavar="S",
                   help="one user's gifts of one kind this close together become one line "
                   "(default 2; 0: off)")  # fmt: skip
    g.add_argument(
        "--chat-max-chars",
        type=int,
        default=None,
        metavar="N",
        help="drop a chat line longer than N characters, cut a paid one (default 200)",
    )
    r = d.add_argument_group("reply step: a chat model answers each line, and that is spoken")
    r.add_argument("--reply-url", default=None, metavar="URL",
                   help="an OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1); key "
                   "from $EMOSTREAM_REPLY_API_KEY or $OPENAI_API_KEY")  # fmt: skip
    r.add_argument("--reply-model", default=None, metavar="NAME", help="the model to ask")
    r.add_argument("--reply-system", default=None, metavar="FILE",
                   help="the system prompt (default: short spoken answers, each starting with "
                   "an emotion tag such as [happy])")  # fmt: skip
    r.add_argument(
        "--reply-history",
        type=int,
        default=4,
        metavar="N",
        help="earlier exchanges sent with each line (default 4)",
    )
    r.add_argument("--reply-max-tokens", type=int, default=150, metavar="N")


@dataclass
class LiveSetup:
    source: ChatSource | None
    policy: ChatPolicy
    reply: ReplyOptions | None

    def outbox(
        self, fields: dict[str, Any], max_held: int, language_voices: Mapping[str, str]
    ) -> Outbox | ReplyOutbox:
        """``language_voices``: the voice of a line (a reply: of the line it answers) in that
        language when ``fields`` name none (``--voice``, ``--voices``)."""
        if self.reply is not None:
            from emostream.bridge.reply.outbox import ReplyOutbox

            return ReplyOutbox(fields=fields, max_held=max_held, language_voices=language_voices)
        from emostream.bridge.lines import Outbox

        return Outbox(fields=fields, max_held=max_held, language_voices=language_voices)

    def pace_lead_s(self, given: float | None) -> float | None:
        """The bridge's pacing: as given; a reply step paces itself (the server paces only
        ``line`` messages) unless told otherwise."""
        if given is not None and given > 0:
            return given
        return REPLY_PACE_LEAD_S if self.reply is not None else None

    def bridge_args(self) -> dict[str, Any]:
        return {"source": self.source, "policy": self.policy, "reply": self.reply}


def _user_rate(value: str) -> tuple[int, float]:
    if value.strip() == "0":
        return 0, 30.0
    n, sep, secs = value.partition("/")
    try:
        lines, window = int(n), float(secs)
    except ValueError:
        lines, window = -1, -1.0
    if not sep or lines < 0 or window <= 0:
        raise ValueError(f"--user-rate takes N/SECONDS (e.g. 3/30) or 0, not {value!r}")
    return lines, window


def live_setup(args: argparse.Namespace) -> LiveSetup:
    from emostream.bridge.chat.policy import ChatPolicy
    from emostream.bridge.chat.rules import ChatRules, load_rules

    rules = load_rules(args.chat_rules) if args.chat_rules else ChatRules()
    lines, window = _user_rate(args.user_rate) if args.user_rate else (None, None)
    template = getattr(args, "template", "{text}")
    rules = rules.with_(
        user_lines=lines, user_window_s=window, duplicate_window_s=args.dedupe_window_s,
        gift_merge_s=args.gift_merge_s, max_chars=args.chat_max_chars,
        block_users=args.block_user, block_words=args.block_word,
        chat_template=template if template != "{text}" else None,
    )  # fmt: skip
    source = None
    if args.source and getattr(args, "listen", None):
        raise ValueError("--source and --listen are two inputs: give one")
    if args.source:
        from emostream.bridge.sources.spec import make_source, parse_source

        source = make_source(parse_source(args.source, args.source_url))
    elif args.source_url:
        raise ValueError("--source-url needs --source")
    return LiveSetup(source, ChatPolicy(rules), _reply(args))


def _reply(args: argparse.Namespace) -> ReplyOptions | None:
    if not args.reply_url:
        if args.reply_model or args.reply_system:
            raise ValueError("--reply-model and --reply-system need --reply-url")
        return None
    from emostream.bridge.reply.client import (
        DEFAULT_SYSTEM,
        ReplyOptions,
        api_key_from_env,
        check_available,
    )  # fmt: skip

    missing = check_available()
    if missing:
        raise ValueError(missing)
    if not args.reply_url.startswith(("http://", "https://")):
        raise ValueError(f"--reply-url must be an http(s) URL, not {args.reply_url!r}")
    if not args.reply_model:
        raise ValueError("--reply-url needs --reply-model")
    system = DEFAULT_SYSTEM
    if args.reply_system:
        try:
            with open(args.reply_system, encoding="utf-8") as f:
                system = f.read().strip()
        except OSError as exc:
            raise ValueError(f"--reply-system: cannot read {args.reply_system}: "
                             f"{exc.strerror or exc}") from None  # fmt: skip
        if not system:
            raise ValueError(f"--reply-system: {args.reply_system} is empty")
    if args.reply_history < 0 or args.reply_max_tokens < 1:
        raise ValueError("--reply-history must be >= 0 and --reply-max-tokens >= 1")
    return ReplyOptions(url=args.reply_url, model=args.reply_model, system=system,
                        api_key=api_key_from_env(dict(os.environ)), history=args.reply_history,
                        max_tokens=args.reply_max_tokens)  # fmt: skip
