"""EmoStream as a LiveKit Agents TTS, over WebSocket protocol v1.1 (``/v1/stream``, contexts).

One socket per TTS, one EmoStream context per :meth:`TTS.stream` (one agent turn: LiveKit
opens a stream per speech): ``start`` with the stream's ``context_id`` (``word_timestamps:
true``, PCM s16le at the TTS's rate, the options of that turn), a ``text`` message per pushed
chunk, ``flush`` on a flush, ``end`` on ``end_input``; the stream ends at its context's
``done``. The server synthesises contexts concurrently, so concurrent streams share the
socket: one reader task hands each binary frame (by the channel in its header) and each event
(by its ``context_id``) to its stream. A socket the server closed (idle) is replaced at the
next stream.

Word timestamps: each word of a ``words`` event is pushed as a
:class:`~livekit.agents.types.TimedString` (the text from the previous word's end up to this
word's end, so the words join back into exactly the text sent; start and end in seconds on
the utterance's audio timeline), which LiveKit's transcription synchronizer aligns with
playback. Interruption: closing the stream (what an agent session does on barge-in) sends
``cancel`` for its context only; the server's ``done`` (awaited in the background) is emitted
as the TTS's ``utterance_done`` event (``cancelled``, ``sent_ms``, ``words_sent``: what the
listener can have heard). Other streams on the socket go on untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from livekit.agents import (
    DEFAULT_API_CONNECT_OPTIONS,
    NOT_GIVEN,
    APIConnectionError,
    APIConnectOptions,
    APIStatusError,
    APITimeoutError,
    NotGivenOr,
    tts,
    utils,
)
from livekit.agents.types import TimedString
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.protocol import State

logger = logging.getLogger("livekit.plugins.emostream")

SERVER_RATES = (16000, 24000, 48000)
# Refusals of a start worth retrying (on a fresh attempt); the rest are the request's fault.
RETRYABLE = {"busy", "too_many_streams", "rate_limited", "shutting_down", "too_many_contexts"}
# v1.1 binary frame header: version 1, flags, channel (uint16 BE), sequence (uint32 BE).
FRAME_HEADER = struct.Struct(">BBHI")
_LOST = object()  # put on a stream's queue when the socket closes


@dataclass
class _Options:
    url: str
    api_key: str | None
    voice: str | None
    speed: float | None
    emotion: str | None
    intensity: float | None
    pitch_shift: float | None
    energy: float | None
    sample_rate: int

    def start_message(self, context_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "type": "start",
            "context_id": context_id,
            "word_timestamps": True,
            "format": {"codec": "pcm_s16le", "sample_rate": self.sample_rate},
        }
        for name in ("voice", "speed", "emotion", "intensity", "pitch_shift", "energy"):
            value = getattr(self, name)
            if value is not None:
                msg[name] = value
        return msg


@dataclass
class _Utterance:
    """What one stream (one context) sent and heard on the shared socket."""

    context_id: str = ""
    ws: ClientConnection | None = None  # the socket it speaks on
    # Binary payloads and events of this context, from the reader; _LOST if the socket closed.
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    channel: int | None = None
    text: str = ""  # the text messages joined as sent (word offsets point into it)
    cursor: int = 0  # end of the text already pushed as timed words
    start_sent: bool = False
    started: bool = False
    refused: bool = False
    ended: bool = False  # end (or cancel) sent: done is next
    stream_id: str = ""
    done: dict[str, Any] | None = None
    words: list[dict[str, Any]] = field(default_factory=list)

    def timed(self, word: dict[str, Any]) -> TimedString:
        end = max(self.cursor, min(int(word["char_end"]), len(self.text)))
        piece, self.cursor = self.text[self.cursor : end], end
        return TimedString(
            piece or str(word["word"]),
            start_time=float(word["start_ms"]) / 1000.0,
            end_time=float(word["end_ms"]) / 1000.0,
        )


class TTS(tts.TTS[Literal["utterance_done"]]):
    """LiveKit Agents TTS for an EmoStream server.

    Args:
        url: the server's stream endpoint, e.g. ``ws://127.0.0.1:8000/v1/stream``.
        api_key: sent as ``Authorization: Bearer`` on the upgrade.
        voice: a voice id (``af_heart``, ``joe``, a clone's id); None = the server's default.
        speed, emotion, intensity, pitch_shift, energy: the voice controls of protocol v1
            (``joe`` takes ``speed`` only; others are refused with ``unsupported_control``).
        sample_rate: 16000, 24000 (default) or 48000, delivered by the server as PCM s16le.
        max_idle_s: the socket, unused this long with no stream on it, is replaced at the next
            stream (the server closes idle sockets after ``ws_idle_timeout_s``, 60 s by
            default).
        cancel_timeout_s: how long an interrupted stream's context may take to answer
            ``done`` before it is given up.

    Events: ``utterance_done`` with the server's ``done`` event (a dict).
    """

    def __init__(
        self,
        *,
        url: str = "ws://127.0.0.1:8000/v1/stream",
        api_key: str | None = None,
        voice: str | None = None,
        speed: float | None = None,
        emotion: str | None = None,
        intensity: float | None = None,
        pitch_shift: float | None = None,
        energy: float | None = None,
        sample_rate: int = 24000,
        max_idle_s: float = 45.0,
        cancel_timeout_s: float = 5.0,
    ) -> None:
        if sample_rate not in SERVER_RATES:
            raise ValueError(f"sample_rate must be one of {SERVER_RATES}, not {sample_rate}")
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=True, aligned_transcript=True),
            sample_rate=sample_rate,
            num_channels=1,
        )
        self._opts = _Options(url, api_key, voice, speed, emotion, intensity, pitch_shift,
                              energy, sample_rate)  # fmt: skip
        self._cancel_timeout_s = cancel_timeout_s
        self._max_idle_s = max_idle_s
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()
        self._used_at = 0.0  # monotonic time the socket last had a stream or a message
        self._streams: dict[str, _Utterance] = {}  # by context id, start to done
        self._by_channel: dict[int, _Utterance] = {}
        self._settling: set[asyncio.Task[None]] = set()
        self.last_done: dict[str, Any] | None = None

    @property
    def model(self) -> str:
        return self._opts.voice or "default"

    @property
    def provider(self) -> str:
        return "EmoStream"

    def update_options(
        self,
        *,
        voice: NotGivenOr[str | None] = NOT_GIVEN,
        speed: NotGivenOr[float | None] = NOT_GIVEN,
        emotion: NotGivenOr[str | None] = NOT_GIVEN,
        intensity: NotGivenOr[float | None] = NOT_GIVEN,
        pitch_shift: NotGivenOr[float | None] = NOT_GIVEN,
        energy: NotGivenOr[float | None] = NOT_GIVEN,
    ) -> None:
        """Voice and controls for the streams opened from now on (one utterance each)."""
        asked: dict[str, Any] = {"voice": voice, "speed": speed, "emotion": emotion,
                                 "intensity": intensity, "pitch_shift": pitch_shift,
                                 "energy": energy}  # fmt: skip
        given = {k: v for k, v in asked.items() if utils.is_given(v)}
        self._opts = replace(self._opts, **given)

    # -- the socket ----------------------------------------------------------------------
    async def _connect_ws(self, timeout: float) -> ClientConnection:
        headers = {"Authorization": f"Bearer {self._opts.api_key}"} if self._opts.api_key else {}
        try:
            return await asyncio.wait_for(
                connect(self._opts.url, additional_headers=headers, compression=None,
                        max_size=None), timeout,
            )  # fmt: skip
        except TimeoutError as e:
            raise APITimeoutError(f"EmoStream: no connection to {self._opts.url}") from e
        except (OSError, ConnectionClosed) as e:
            raise APIConnectionError(f"EmoStream: cannot connect to {self._opts.url}: {e}") from e

    async def _socket(self, timeout: float) -> ClientConnection:
        """The open shared socket (connected, or replaced, when needed)."""
        async with self._connecting:
            ws = self._ws
            stale = time.monotonic() - self._used_at > self._max_idle_s and not self._streams
            if ws is not None and (ws.state is not State.OPEN or stale):
                await self._drop(ws)
                ws = None
            if ws is None:
                ws = await self._connect_ws(timeout)
                self._ws = ws
                self._reader = asyncio.create_task(self._read(ws), name="EmoStream.read")
            self._used_at = time.monotonic()
            return ws

    async def _drop(self, ws: ClientConnection) -> None:
        if self._ws is ws:
            self._ws = None
        with contextlib.suppress(Exception):
            await ws.close()

    async def _read(self, ws: ClientConnection) -> None:
        """Hand each frame and event to its context's stream until the socket closes."""
        try:
            async for msg in ws:
                self._used_at = time.monotonic()
                if isinstance(msg, bytes):
                    if len(msg) < FRAME_HEADER.size:
                        continue
                    channel = FRAME_HEADER.unpack_from(msg)[2]
                    utt = self._by_channel.get(channel)
                    if utt is not None:
                        utt.queue.put_nowait(msg[FRAME_HEADER.size :])
                    continue
                event = json.loads(msg)
                context = event.get("context_id")
                utt = self._streams.get(context) if isinstance(context, str) else None
                if utt is None:
                    if event.get("type") == "error" and event.get("code") != "unknown_context":
                        logger.debug("EmoStream %s: %s", event.get("code"), event.get("message"))
                    continue
                if event.get("type") == "started" and isinstance(event.get("channel"), int):
                    utt.channel = event["channel"]
                    self._by_channel[utt.channel] = utt
                utt.queue.put_nowait(event)
        except (ConnectionClosed, ValueError) as e:
            logger.debug("EmoStream: socket closed: %s", e)
        finally:
            if self._ws is ws:
                self._ws = None
            for utt in [u for u in self._streams.values() if u.ws is ws]:
                utt.queue.put_nowait(_LOST)

    def _register(self, utt: _Utterance) -> None:
        self._streams[utt.context_id] = utt

    def _release(self, utt: _Utterance) -> None:
        if self._streams.get(utt.context_id) is utt:
            del self._streams[utt.context_id]
        if utt.channel is not None and self._by_channel.get(utt.channel) is utt:
            del self._by_channel[utt.channel]
        self._used_at = time.monotonic()

    def _settle(self, utt: _Utterance) -> None:
        """A stream left before its ``done`` (interrupted, or failed): ``cancel`` its context,
        wait for the ``done`` in the background, report it."""

        async def settle() -> None:
            try:
                if utt.ws is not None and utt.start_sent and not utt.refused and utt.done is None:
                    await utt.ws.send(json.dumps({"type": "cancel", "context_id": utt.context_id}))
                    async with asyncio.timeout(self._cancel_timeout_s):
                        while utt.done is None:
                            item = await utt.queue.get()
                            if item is _LOST:
                                break
                            if isinstance(item, dict) and item.get("type") == "done":
                                utt.done = item
                                self._report_done(item)
            except (OSError, TimeoutError, WebSocketException) as e:
                logger.debug("EmoStream: no done after cancel: %s", e)
            finally:
                self._release(utt)

        task = asyncio.create_task(settle(), name="EmoStream.settle")
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    def _report_done(self, done: dict[str, Any]) -> None:
        self.last_done = done
        self.emit("utterance_done", done)

    # -- API -----------------------------------------------------------------------------
    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return self._synthesize_with_stream(text, conn_options=conn_options)

    def stream(
        self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> SynthesizeStream:
        return SynthesizeStream(tts=self, conn_options=conn_options)

    def prewarm(self) -> None:
        async def warm() -> None:
            with contextlib.suppress(APIConnectionError, APITimeoutError):
                await self._socket(DEFAULT_API_CONNECT_OPTIONS.timeout)

        task = asyncio.create_task(warm(), name="EmoStream.prewarm")
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def settled(self) -> None:
        """Wait until every interrupted utterance has had its ``done``."""
        while self._settling:
            await asyncio.gather(*list(self._settling), return_exceptions=True)

    async def aclose(self) -> None:
        await self.settled()
        if self._ws is not None:
            await self._drop(self._ws)
        if self._reader is not None:
            await utils.aio.cancel_and_wait(self._reader)


class SynthesizeStream(tts.SynthesizeStream):
    """One agent turn: one EmoStream utterance."""

    def __init__(self, *, tts: TTS, conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, conn_options=conn_options)
        self._emo: TTS = tts
        self._opts = tts._opts  # options as they were when the turn began

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        request_id = utils.shortuuid()
        output_emitter.initialize(
            request_id=request_id, sample_rate=self._opts.sample_rate, num_channels=1,
            mime_type="audio/pcm", stream=True,
        )  # fmt: skip
        ws = await self._emo._socket(self._conn_options.timeout)
        utt = _Utterance(context_id=f"lk-{request_id}", ws=ws)
        self._emo._register(utt)
        finished = False
        try:
            utt.start_sent = True
            await ws.send(json.dumps(self._opts.start_message(utt.context_id)))
            sender = asyncio.create_task(self._send_input(ws, utt))
            try:
                await self._receive(utt, output_emitter, request_id)
            finally:
                await utils.aio.cancel_and_wait(sender)
            if sender.done() and not sender.cancelled() and (exc := sender.exception()):
                raise exc
            finished = True
        except ConnectionClosed as e:
            raise APIConnectionError(f"EmoStream: connection lost: {e}") from e
        finally:
            if finished or utt.refused:
                self._emo._release(utt)
            else:
                self._emo._settle(utt)

    async def _send_input(self, ws: ClientConnection, utt: _Utterance) -> None:
        context = utt.context_id
        async for data in self._input_ch:
            if isinstance(data, self._FlushSentinel):
                if utt.text:
                    await ws.send(json.dumps({"type": "flush", "context_id": context}))
                continue
            if not data:
                continue
            self._mark_started()
            utt.text += data
            await ws.send(json.dumps({"type": "text", "context_id": context, "text": data}))
        utt.ended = True
        # Nothing to say: cancel (done follows) rather than end (which answers empty_text).
        kind = "end" if utt.text.strip() else "cancel"
        await ws.send(json.dumps({"type": kind, "context_id": context}))

    async def _receive(self, utt: _Utterance, emitter: tts.AudioEmitter, request_id: str) -> None:
        segment = False

        def open_segment() -> None:
            nonlocal segment
            if not segment:
                emitter.start_segment(segment_id=utt.stream_id or request_id)
                segment = True

        while True:
            if utt.ended:  # all input sent: the server owes audio and done, not text
                try:
                    async with asyncio.timeout(max(self._conn_options.timeout, 10.0)):
                        item = await utt.queue.get()
                except TimeoutError as e:
                    raise APITimeoutError("EmoStream: no answer after end") from e
            else:
                item = await utt.queue.get()
            if item is _LOST:
                raise APIConnectionError("EmoStream: connection lost")
            if isinstance(item, bytes):
                open_segment()
                emitter.push(item)
                continue
            ev: dict[str, Any] = item
            kind = ev.get("type")
            if kind == "started":
                utt.started, utt.stream_id = True, str(ev.get("stream_id", ""))
                if ev.get("word_timestamps") is False:
                    logger.warning("EmoStream: voice %r gives no word timestamps", ev.get("voice"))
            elif kind == "words":
                open_segment()
                for word in ev.get("words", []):
                    utt.words.append(word)
                    emitter.push_timed_transcript(utt.timed(word))
            elif kind == "done":
                utt.done = ev
                if segment:
                    if utt.cursor < len(utt.text) and not ev.get("cancelled"):
                        emitter.push_timed_transcript(TimedString(utt.text[utt.cursor :]))
                    emitter.end_segment()
                self._emo._report_done(ev)
                return
            elif kind == "error":
                self._on_error(utt, ev)

    def _on_error(self, utt: _Utterance, ev: dict[str, Any]) -> None:
        code, message = str(ev.get("code")), str(ev.get("message", ""))
        if code == "unknown_context":
            return  # a message that crossed this context's done
        if not utt.started:
            utt.refused = True  # no done follows a refused start
            raise APIStatusError(
                f"EmoStream {code}: {message}", status_code=503 if code in RETRYABLE else 400,
                body=ev, retryable=code in RETRYABLE,
            )  # fmt: skip
        # Mid-utterance (text_too_long, utterance_timeout, ...): done still follows.
        logger.warning("EmoStream %s: %s", code, message)
