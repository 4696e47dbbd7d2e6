"""EmoStream as a LiveKit Agents TTS, over WebSocket protocol v1 (``/v1/stream``).

Each :meth:`TTS.stream` (one agent turn: LiveKit opens a stream per speech) is one EmoStream
utterance on a pooled socket: ``start`` (``word_timestamps: true``, PCM s16le at the TTS's
rate), a ``text`` message per pushed chunk, ``flush`` on a flush, ``end`` on ``end_input``;
the stream ends at the server's ``done``. The server speaks one utterance per socket at a
time, so concurrent streams take separate sockets from the pool.

Word timestamps: each word of a ``words`` event is pushed as a
:class:`~livekit.agents.types.TimedString` (the text from the previous word's end up to this
word's end, so the words join back into exactly the text sent; start and end in seconds on
the utterance's audio timeline), which LiveKit's transcription synchronizer aligns with
playback. Interruption: closing the stream (what an agent session does on barge-in) sends
``cancel``; the socket goes back to the pool after the server's ``done``, which is emitted as
the TTS's ``utterance_done`` event (``cancelled``, ``sent_ms``, ``words_sent``: what the
listener can have heard).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
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
RETRYABLE = {"busy", "too_many_streams", "rate_limited", "shutting_down"}


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

    def start_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "type": "start",
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
    """What one stream sent and heard on its socket."""

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
        max_idle_s: a pooled socket unused this long is replaced (the server closes idle
            sockets after ``ws_idle_timeout_s``, 60 s by default).
        cancel_timeout_s: how long an interrupted utterance may take to answer ``done``
            before its socket is dropped instead of reused.

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
        self._pool = utils.ConnectionPool[ClientConnection](
            connect_cb=self._connect_ws, close_cb=self._close_ws,
            max_session_duration=max_idle_s, mark_refreshed_on_get=True,
        )  # fmt: skip
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

    # -- sockets -------------------------------------------------------------------------
    async def _connect_ws(self, timeout: float) -> ClientConnection:
        headers = {"Authorization": f"Bearer {self._opts.api_key}"} if self._opts.api_key else {}
        try:
            return await asyncio.wait_for(
                connect(self._opts.url, additional_headers=headers, compression=None), timeout
            )
        except TimeoutError as e:
            raise APITimeoutError(f"EmoStream: no connection to {self._opts.url}") from e
        except (OSError, ConnectionClosed) as e:
            raise APIConnectionError(f"EmoStream: cannot connect to {self._opts.url}: {e}") from e

    async def _close_ws(self, ws: ClientConnection) -> None:
        with contextlib.suppress(Exception):
            await ws.close()

    async def _acquire(self, timeout: float) -> ClientConnection:
        for _ in range(3):
            ws = await self._pool.get(timeout=timeout)
            if ws.state is State.OPEN:
                return ws
            self._pool.remove(ws)  # the server closed it (idle timeout)
        raise APIConnectionError("EmoStream: no open connection")

    def _settle(self, ws: ClientConnection, utt: _Utterance) -> None:
        """An utterance left before its ``done`` (interrupted, or failed): ``cancel`` it,
        wait for ``done`` in the background, then give the socket back (or drop it)."""

        async def settle() -> None:
            try:
                if utt.start_sent and not utt.refused and utt.done is None:
                    await ws.send(json.dumps({"type": "cancel"}))
                    async with asyncio.timeout(self._cancel_timeout_s):
                        while utt.done is None:
                            msg = await ws.recv()
                            if isinstance(msg, str) and json.loads(msg).get("type") == "done":
                                utt.done = json.loads(msg)
                                self._report_done(utt.done)
            except (OSError, TimeoutError, ValueError, WebSocketException) as e:
                logger.debug("EmoStream: dropping a socket after cancel: %s", e)
                self._pool.remove(ws)
            else:
                self._pool.put(ws)

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
        self._pool.prewarm()

    async def settled(self) -> None:
        """Wait until every interrupted utterance has had its ``done``."""
        while self._settling:
            await asyncio.gather(*list(self._settling), return_exceptions=True)

    async def aclose(self) -> None:
        await self.settled()
        await self._pool.aclose()


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
        ws = await self._emo._acquire(self._conn_options.timeout)
        utt = _Utterance()
        finished = False
        try:
            utt.start_sent = True
            await ws.send(json.dumps(self._opts.start_message()))
            sender = asyncio.create_task(self._send_input(ws, utt))
            try:
                await self._receive(ws, utt, output_emitter, request_id)
            finally:
                await utils.aio.cancel_and_wait(sender)
            if sender.done() and not sender.cancelled() and (exc := sender.exception()):
                raise exc
            finished = True
        except ConnectionClosed as e:
            raise APIConnectionError(f"EmoStream: connection lost: {e}") from e
        finally:
            if finished or utt.refused:
                self._emo._pool.put(ws)
            else:
                self._emo._settle(ws, utt)

    async def _send_input(self, ws: ClientConnection, utt: _Utterance) -> None:
        async for data in self._input_ch:
            if isinstance(data, self._FlushSentinel):
                if utt.text:
                    await ws.send(json.dumps({"type": "flush"}))
                continue
            if not data:
                continue
            self._mark_started()
            utt.text += data
            await ws.send(json.dumps({"type": "text", "text": data}))
        utt.ended = True
        # Nothing to say: cancel (done follows) rather than end (which answers empty_text).
        kind = "end" if utt.text.strip() else "cancel"
        await ws.send(json.dumps({"type": kind}))

    async def _receive(
        self, ws: ClientConnection, utt: _Utterance, emitter: tts.AudioEmitter, request_id: str
    ) -> None:
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
                        msg = await ws.recv()
                except TimeoutError as e:
                    raise APITimeoutError("EmoStream: no answer after end") from e
            else:
                msg = await ws.recv()
            if isinstance(msg, bytes):
                open_segment()
                emitter.push(msg)
                continue
            ev = json.loads(msg)
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
        if code == "not_started":
            return  # a cancel that crossed an earlier utterance's done on this socket
        if not utt.started:
            utt.refused = True  # no done follows a refused start
            raise APIStatusError(
                f"EmoStream {code}: {message}", status_code=503 if code in RETRYABLE else 400,
                body=ev, retryable=code in RETRYABLE,
            )  # fmt: skip
        # Mid-utterance (text_too_long, utterance_timeout, ...): done still follows.
        logger.warning("EmoStream %s: %s", code, message)
