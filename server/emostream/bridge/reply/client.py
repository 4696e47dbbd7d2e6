"""The reply step's asyncio layer: each chat line the
:class:`~emostream.bridge.reply.outbox.ReplyOutbox` picks goes to an OpenAI-compatible chat
endpoint (``POST {url}/chat/completions``, ``"stream": true``), and the reply's pieces go
back into the outbox as they arrive (the bridge sends them on as ``text``).

The request: the system prompt (``--reply-system FILE``, else :data:`DEFAULT_SYSTEM`), the
last ``history`` exchanges, and the line as the user's message (``user: what they did and
said``); ``Authorization: Bearer`` the API key when there is one (``EMOSTREAM_REPLY_API_KEY``,
else ``OPENAI_API_KEY``). HTTP errors, a stream that is not a completion stream, and an
endpoint silent for ``idle_timeout_s`` are reported (``reply`` ``failed``) and cost that line
only. Needs ``httpx`` (the ``[live]`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emostream.bridge.reply.outbox import ReplyJob, ReplyOutbox
from emostream.bridge.reply.sse import DONE, ReplyStreamError, SseParser, delta
from emostream.text.emotion import EMOTIONS

DEFAULT_SYSTEM = (
    "You are the voice of a live stream's host, answering the chat out loud. Each message is "
    "one viewer's chat line, gift or subscription, as 'name: text'. Reply in one or two short "
    "spoken sentences, in the language of the message, with no lists, markdown or emoji. Begin "
    "every reply with the emotion to speak it with, in square brackets, one of: "
    + ", ".join(f"[{e}]" for e in EMOTIONS)
    + ". For example: [happy] Thank you so much for the gift!"
)
API_KEY_ENV = ("EMOSTREAM_REPLY_API_KEY", "OPENAI_API_KEY")
MAX_ERROR_BODY = 300


@dataclass(frozen=True)
class ReplyOptions:
    url: str  # the endpoint's base (…/v1) or its …/chat/completions
    model: str
    system: str = DEFAULT_SYSTEM
    api_key: str | None = None
    max_tokens: int = 150
    history: int = 4  # earlier exchanges sent with each line (0: none)
    temperature: float | None = None
    idle_timeout_s: float = 20.0  # no piece for this long: the reply failed
    total_timeout_s: float = 120.0

    @property
    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


def api_key_from_env(env: dict[str, str] | None = None) -> str | None:
    source = os.environ if env is None else env
    return next((source[k] for k in API_KEY_ENV if source.get(k)), None)


def check_available() -> str | None:
    """Why the reply step cannot run here (httpx missing), or None."""
    try:
        import httpx  # noqa: F401
    except ImportError:
        return "the reply step needs httpx: pip install 'emostream[live]'"
    return None


class Replier:
    def __init__(
        self,
        options: ReplyOptions,
        outbox: ReplyOutbox,
        *,
        emit: Callable[[dict[str, Any]], None],
        wake: Callable[[], None],
    ) -> None:
        self.opts = options
        self.outbox = outbox
        self.emit = emit
        self.wake = wake
        self.history: deque[tuple[str, str]] = deque(maxlen=max(1, options.history))
        self.asked = 0
        self._poke = asyncio.Event()

    def poke(self) -> None:
        """Something changed (a line came, a reply was spoken): look for the next ask."""
        self._poke.set()

    def prompt(self, job: ReplyJob) -> str:
        line = job.line
        if line.prompt:
            return line.prompt
        return f"{line.user}: {line.text}" if line.user else line.text

    def request(self, job: ReplyJob) -> dict[str, Any]:
        messages: list[dict[str, str]] = [{"role": "system", "content": self.opts.system}]
        if self.opts.history > 0:
            for asked, answered in self.history:
                messages += [{"role": "user", "content": asked},
                             {"role": "assistant", "content": answered}]  # fmt: skip
        messages.append({"role": "user", "content": self.prompt(job)})
        body: dict[str, Any] = {"model": self.opts.model, "messages": messages, "stream": True,
                                "max_tokens": self.opts.max_tokens}  # fmt: skip
        if self.opts.temperature is not None:
            body["temperature"] = self.opts.temperature
        return body

    async def run(self) -> None:
        import httpx

        timeout = httpx.Timeout(10.0, read=self.opts.idle_timeout_s)
        async with httpx.AsyncClient(timeout=timeout) as client:
            while True:
                job = self.outbox.next_ask(time.monotonic())
                if job is None:
                    await self._poke.wait()
                    self._poke.clear()
                    continue
                self.asked += 1
                await self._answer(client, job)

    async def _answer(self, client: Any, job: ReplyJob) -> None:
        import httpx

        headers = {"Accept": "text/event-stream"}
        if self.opts.api_key:
            headers["Authorization"] = f"Bearer {self.opts.api_key}"
        body = self.request(job)
        reply: list[str] = []
        events: list[dict[str, Any]] = []
        try:
            async with asyncio.timeout(self.opts.total_timeout_s):
                async with client.stream("POST", self.opts.endpoint, json=body,
                                         headers=headers) as resp:  # fmt: skip
                    if resp.status_code != 200:
                        detail = (await resp.aread())[:MAX_ERROR_BODY].decode("utf-8", "replace")
                        raise ReplyStreamError(f"HTTP {resp.status_code}: {detail}")
                    if not await self._stream(resp, job, reply):
                        return  # the job is over (the socket cut it): nothing more to say
            events = self.outbox.finished(job, time.monotonic())
            if self.opts.history > 0:
                self.history.append((body["messages"][-1]["content"], "".join(reply)))
        except (httpx.HTTPError, ReplyStreamError, TimeoutError) as exc:
            why = str(exc) or type(exc).__name__
            events = self.outbox.failed(job, why, time.monotonic())
        finally:
            for event in events:
                self.emit(event)
            self.wake()

    async def _stream(self, resp: Any, job: ReplyJob, reply: list[str]) -> bool:
        """Pieces into the outbox until the stream ends; False if the job ended first."""
        parser = SseParser()
        async for line in resp.aiter_lines():
            event = parser.feed(line)
            if event is None:
                continue
            piece = delta(event)
            if piece is DONE:
                break
            if not isinstance(piece, str) or not piece:
                continue
            reply.append(piece)
            alive, events = self.outbox.piece(job, piece, time.monotonic())
            for e in events:
                self.emit(e)
            self.wake()
            if not alive:
                return False
        else:
            tail = parser.end()
            if tail is not None:
                piece = delta(tail)
                if isinstance(piece, str) and piece:
                    reply.append(piece)
                    self.outbox.piece(job, piece, time.monotonic())
        return True


async def cancel(task: asyncio.Task[Any] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
