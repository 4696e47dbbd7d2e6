"""``emostream danmaku``: pipe chat into an EmoStream server (the asyncio layer).

Input lines (stdin, or every client of a local TCP port or unix socket the bridge listens on)
go through :class:`~emostream.bridge.lines.LineParser` into the
:class:`~emostream.bridge.lines.Outbox`, which is sent as ``line`` messages over one WebSocket.
Audio goes to the output (:mod:`emostream.bridge.sinks`), the server's events and the bridge's
own as JSON lines to the event log. The socket is reconnected with backoff; lines not yet
started are sent again. The server paces lines to the listener (its ``line_pace_lead_ms``), so
by default every line goes to it at once. With ``pace_lead_s`` (for a server that does not
pace: ``line_pace_lead_ms`` 0, or one older than that setting) the bridge sends one line at a
time, when less than that much received audio is left to play (see
:class:`~emostream.bridge.lines.Playout`).
On the end of input (stdin's EOF, or SIGINT/SIGTERM) the bridge waits
until every line it holds is spoken or dropped (``drain``), then exits; a second signal, or
``drain=False``, exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from emostream.bridge.lines import Backoff, InputError, LineParser, Outbox, Playout
from emostream.bridge.sinks import AudioSink, OutputFormat

log = logging.getLogger(__name__)
TICK_S = 0.25  # how often held lines are looked at (expiry, busy retries, give-up)


@dataclass
class BridgeOptions:
    url: str = "ws://127.0.0.1:8000/v1/stream"
    api_key: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # start fields of every line
    listen: str | None = None  # None: stdin; "tcp:HOST:PORT" or "unix:PATH"
    output_format: OutputFormat = "pcm"
    drain: bool = True
    pace_lead_s: float | None = None  # None: every line to the server at once
    connect_timeout_s: float = 10.0
    backoff_max_s: float = 15.0


def voices_option(spec: str) -> dict[str, str]:
    """``--voices en=af_heart,zh=zf_xiaoxiao`` as the ``voices`` field of every line (a
    voice per language: each line is cut where its language changes and spoken by the voice
    of each part's language). ValueError when it is not ``LANG=VOICE`` pairs; the server
    checks the languages and the voices (an error event per line)."""
    voices: dict[str, str] = {}
    for pair in spec.split(","):
        language, sep, voice = (part.strip() for part in pair.partition("="))
        if not sep or not language or not voice:
            raise ValueError(f"--voices takes LANG=VOICE pairs, e.g. en=af_heart,zh=zf_xiaoxiao "
                             f"(got {pair.strip()!r})")  # fmt: skip
        if language in voices:
            raise ValueError(f"--voices names {language!r} twice")
        voices[language] = voice
    return voices


class EventLog:
    """JSON lines to a text stream, one per event, flushed at once."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, event: dict[str, Any]) -> None:
        self.stream.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.stream.flush()


class AudioWriter:
    """Writes audio bytes on a thread of its own, so a slow reader of the output (a player on
    a pipe) never stops the socket from being read."""

    def __init__(self, out: IO[bytes] | None) -> None:
        self.out = out
        self._q: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="danmaku-audio", daemon=True)
        self.failed: OSError | None = None
        if out is not None:
            self._thread.start()

    def write(self, data: bytes) -> None:
        if self.out is not None and data:
            self._q.put(data)

    def _run(self) -> None:
        assert self.out is not None
        while (data := self._q.get()) is not None:
            if self.failed is not None:
                continue
            try:
                self.out.write(data)
                self.out.flush()
            except OSError as exc:  # e.g. the player went away (EPIPE): audio is dropped
                self.failed = exc

    def close(self, final_header: bytes | None = None) -> None:
        if self.out is None:
            return
        self._q.put(None)
        self._thread.join()
        with contextlib.suppress(OSError, ValueError):
            if final_header is not None and self.out.seekable():
                self.out.seek(0)
                self.out.write(final_header)
            self.out.flush()


class DanmakuBridge:
    def __init__(
        self,
        options: BridgeOptions,
        parser: LineParser,
        outbox: Outbox,
        *,
        emit: Callable[[dict[str, Any]], None],
        audio: IO[bytes] | None,
        backoff: Backoff | None = None,
    ) -> None:
        self.opts = options
        self.parser = parser
        self.outbox = outbox
        self.emit = emit
        self.sink = AudioSink(options.output_format)
        self.writer = AudioWriter(audio)
        self.backoff = backoff or Backoff(max_s=options.backoff_max_s)
        self.playout = Playout()
        self.wake = asyncio.Event()
        self.input_done = asyncio.Event()  # end of input: drain, then exit
        self.stop_now = asyncio.Event()  # exit at once
        self.connections = 0
        self.fatal: str | None = None

    # -- input ---------------------------------------------------------------------------
    def feed(self, raw: str) -> None:
        """One input line (from any source)."""
        parsed = self.parser.parse(raw)
        now = time.monotonic()
        if parsed is None:
            return
        if isinstance(parsed, InputError):
            self.outbox.tally.input_errors += 1
            self.emit(parsed.event)
            return
        for event in self.outbox.add(parsed, now):
            self.emit(event)
        self.wake.set()

    def end_of_input(self) -> None:
        if self.input_done.is_set() or not self.opts.drain:
            self.stop_now.set()
        self.input_done.set()
        self.wake.set()

    def _read_stdin(self, loop: asyncio.AbstractEventLoop, stream: IO[bytes]) -> None:
        """Thread: stdin lines into the loop (works for pipes, files and terminals alike)."""
        try:
            for raw in stream:
                loop.call_soon_threadsafe(self.feed, raw.decode("utf-8", "replace"))
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be gone already
                loop.call_soon_threadsafe(self.end_of_input)

    async def _serve_input(self) -> asyncio.Server:
        """Listen on ``tcp:HOST:PORT`` or ``unix:PATH``; every client's lines are input."""

        async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while raw := await reader.readline():
                    self.feed(raw.decode("utf-8", "replace"))
            except (ConnectionError, ValueError) as exc:  # ValueError: an over-long line
                self.emit({"type": "input_error", "message": f"input connection: {exc}"})
            finally:
                writer.close()

        listen = self.opts.listen or ""
        kind, _, where = listen.partition(":")
        if kind == "unix":
            server = await asyncio.start_unix_server(client, path=where)
        elif kind == "tcp":
            host, _, port = where.rpartition(":")
            server = await asyncio.start_server(client, host or "127.0.0.1", int(port))
        else:
            raise ValueError(f"--listen takes tcp:HOST:PORT or unix:PATH, not {listen!r}")
        names = [str(s.getsockname()) for s in server.sockets]
        self.emit({"type": "bridge", "event": "listening", "on": names})
        return server

    # -- the socket ----------------------------------------------------------------------
    def _finished(self) -> bool:
        return self.stop_now.is_set() or (self.input_done.is_set() and self.outbox.drained)

    async def _connect(self) -> Any:
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {self.opts.api_key}"} if self.opts.api_key else {}
        return await connect(
            self.opts.url, additional_headers=headers, compression=None, max_size=None,
            open_timeout=self.opts.connect_timeout_s,
        )  # fmt: skip

    async def _session(self, ws: Any) -> None:
        """One connection: send held lines as they come, account every event; returns when
        the socket closes or the bridge is finished."""
        from websockets.exceptions import ConnectionClosed

        async def send_loop() -> None:
            while not self._finished():
                now = time.monotonic()
                messages, events = self.outbox.to_send(now, self._send_limit(now))
                events += self.outbox.give_up(now)
                for event in events:
                    self.emit(event)
                for msg in messages:
                    await ws.send(json.dumps(msg, ensure_ascii=False))
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(TICK_S):
                        await self.wake.wait()

        async def recv_loop() -> None:
            async for msg in ws:
                if isinstance(msg, bytes):
                    if self.outbox.on_audio(len(msg)) is not None:
                        self.writer.write(self.sink.frame(msg))
                        self.playout.audio(self.sink.duration_s(msg), time.monotonic())
                    continue
                try:
                    event = json.loads(msg)
                except json.JSONDecodeError:
                    continue
                if not isinstance(event, dict):
                    continue
                self.backoff.reset()  # the server talks to us: the connection works
                self.emit(event)
                if event.get("type") == "started" and "id" in event:
                    try:
                        self.writer.write(self.sink.started(event))
                    except ValueError as exc:
                        self.emit({"type": "bridge", "event": "format", "message": str(exc)})
                for note in self.outbox.on_event(event, time.monotonic()):
                    self.emit(note)
                self.wake.set()

        sender = asyncio.create_task(send_loop())
        receiver = asyncio.create_task(recv_loop())
        try:
            await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sender, receiver):
                task.cancel()
            for task in (sender, receiver):
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, OSError):
                    await task

    def _send_limit(self, now: float) -> int | None:
        """How many held lines may go now: all (no pacing), else one when nothing is at the
        server and the listener has less than the lead left to hear."""
        lead = self.opts.pace_lead_s
        if lead is None:
            return None
        return 1 if self.outbox.at_server == 0 and self.playout.ahead_s(now) <= lead else 0

    async def _connection_loop(self) -> None:
        from websockets.exceptions import InvalidStatus

        while not self._finished():
            try:
                ws = await self._connect()
            except InvalidStatus as exc:
                status = exc.response.status_code
                if status in (401, 403):
                    self.fatal = f"the server refused the connection ({status}): check the key"
                    return
                await self._wait_before_retry(f"HTTP {status}")
                continue
            except (OSError, TimeoutError) as exc:
                await self._wait_before_retry(str(exc) or type(exc).__name__)
                continue
            self.connections += 1
            self.emit({"type": "bridge", "event": "connected", "url": self.opts.url})
            try:
                await self._session(ws)
            finally:
                code = getattr(ws.close_code, "value", ws.close_code)
                await ws.close()
                for event in self.outbox.disconnected(time.monotonic()):
                    self.emit(event)
            if not self._finished():
                await self._wait_before_retry(f"closed by the server (code {code})")

    async def _wait_before_retry(self, why: str) -> None:
        delay = self.backoff.next_delay()
        self.emit({"type": "bridge", "event": "disconnected", "reason": why,
                   "retry_in_s": round(delay, 2), "holding": len(self.outbox)})  # fmt: skip
        deadline = time.monotonic() + delay
        while not self._finished() and (left := deadline - time.monotonic()) > 0:
            for event in self.outbox.expire_held(time.monotonic()):
                self.emit(event)
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(TICK_S, left)):
                    await self.wake.wait()

    # -- run -----------------------------------------------------------------------------
    async def run(self, stdin: IO[bytes] | None = None) -> int:
        loop = asyncio.get_running_loop()
        server: asyncio.Server | None = None
        if self.opts.listen:
            server = await self._serve_input()
        else:
            source = stdin if stdin is not None else sys.stdin.buffer
            threading.Thread(target=self._read_stdin, args=(loop, source), name="danmaku-stdin",
                             daemon=True).start()  # fmt: skip
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.end_of_input)
        try:
            await self._connection_loop()
        finally:
            for sig in signals:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(sig)
            if server is not None:
                server.close()
                if self.opts.listen and self.opts.listen.startswith("unix:"):
                    with contextlib.suppress(OSError):
                        os.unlink(self.opts.listen.partition(":")[2])
            self.writer.write(self.sink.close())
            self.writer.close(self.sink.final_header())
        summary = {"type": "bridge", "event": "exit", **self.outbox.tally.as_dict(),
                   "left": len(self.outbox), "connections": self.connections}  # fmt: skip
        if self.fatal:
            summary["error"] = self.fatal
        if self.writer.failed is not None:
            summary["output_error"] = str(self.writer.failed)
        self.emit(summary)
        return 2 if self.fatal else 0
