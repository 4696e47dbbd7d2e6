"""Text the simulated users send: chat-style replies, split into LLM-like tokens."""

from __future__ import annotations

import re

# Replies a virtual streamer or voice bot might give: one or two sentences, 2–6 s of speech.
REPLIES: tuple[str, ...] = (
    "Thanks for the follow, welcome to the stream! Grab a seat and enjoy the show.",
    "That is a great question, let me think about it for a second.",
    "Good morning everyone, the weather looks lovely today, so let's get started.",
    "Wow, that was an amazing play! I did not expect that at all.",
    "Sure, I can help you with that. Tell me a little more about what you need.",
    "I am not sure, but I will find out for you before the end of the stream.",
    "Please remember to stay hydrated, and take a short break every hour.",
    "Welcome back! We were just talking about the new update and its features.",
)

# Danmaku answers: very short, many at once.
SHORT_REPLIES: tuple[str, ...] = (
    "Thank you so much!",
    "Hi there, welcome!",
    "Haha, good one.",
    "Yes, absolutely.",
    "Oh no, not again!",
    "Nice, well done.",
    "See you tomorrow!",
    "Love that idea.",
)

_TOKEN = re.compile(r"\s*\S+")


def tokenize(text: str, *, chars_per_token: int = 4) -> list[str]:
    """Split ``text`` into LLM-like tokens: words with their leading space, long words cut
    into pieces of ``chars_per_token`` (default 4, about what BPE tokenizers average).

    ``"".join(tokenize(t)) == t`` for any ``t`` without trailing whitespace."""
    if chars_per_token < 1:
        raise ValueError("chars_per_token must be >= 1")
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        core_start = len(word) - len(word.lstrip())
        head, core = word[:core_start], word[core_start:]
        pieces = [core[i : i + chars_per_token] for i in range(0, len(core), chars_per_token)]
        pieces[0] = head + pieces[0]
        tokens.extend(pieces)
    tail = text[len("".join(tokens)) :]
    if tail and tokens:
        tokens[-1] += tail
    return tokens


def pick(corpus: tuple[str, ...], index: int) -> str:
    """The ``index``-th text of ``corpus`` (cycling)."""
    return corpus[index % len(corpus)]
