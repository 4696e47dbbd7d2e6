"""EmoStream as a Pipecat TTS service, over WebSocket protocol v1.1 (``/v1/stream``, contexts).

One socket per service, one EmoStream context per Pipecat turn context (the sentences of one
LLM reply, or one ``TTSSpeakFrame``): ``start`` with the turn's ``context_id`` (and
``word_timestamps: true``, PCM s16le output, the turn's voice and controls) when its first text
arrives, a ``text`` message per sentence or token, ``end`` when Pipecat closes the turn. The
server synthesises contexts concurrently, so a turn never waits for the previous one's
``done``; each binary frame's header names its context's channel, and its audio goes to that
turn's audio context (Pipecat plays the turns in order).

Word timestamps: each ``words`` event becomes :meth:`add_word_timestamps` entries (the word
as the client wrote it, its start on the utterance's audio timeline), so Pipecat emits
``TTSTextFrame`` words in step with playback. Interruption: Pipecat drops the turn's audio
context and this service sends ``cancel`` for that context only; the server's ``done``
(``cancelled: true``, with ``words_sent`` and ``sent_ms``: what the listener can have heard)
is reported through the ``on_utterance_done`` event. The next turn starts at once.

Resampling (a pipeline rate the server does not offer, e.g. 8 kHz): each context's audio is
one stream through its own soxr stream resampler, which works in blocks and so holds back up
to ~175 ms (24 -> 8 kHz: 1100-sample blocks); its tail is flushed into the turn at ``done``, so
no audio is lost. The resampler is never cleared on a pause in the server's chunks (Pipecat's
default clears after 0.2 s, dropping what it held).
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
import unicodedata
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from loguru import logger
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    StartFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
)
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TextAggregationMode, WebsocketTTSService
from pipecat.utils.types import NOT_GIVEN, NotGiven
from websockets.exceptions import ConnectionClosedError, WebSocketException
from websockets.protocol import State

SERVER_RATES = (16000, 24000, 48000)  # what a start's format may ask for
CONTROLS = ("speed", "emotion", "intensity", "pitch_shift", "energy")
SOCKET_ERRORS = (OSError, TimeoutError, WebSocketException)  # connect, send, close
# v1.1 binary frame header: version 1, flags, channel (uint16 BE), sequence (uint32 BE).
FRAME_HEADER = struct.Struct(">BBHI")
CONTEXT_ID = re.compile(r"[A-Za-z0-9._:\-]{1,64}")


@dataclass
class EmoStreamTTSSettings(TTSSettings):
    """Voice and controls of the next utterances (each turn's ``start`` carries them).

    Parameters:
        speed: 0.5-2. emotion: e.g. ``"happy"``. intensity: 0-1. pitch_shift: -12..12
            semitones. energy: 0.5-2. A control the voice does not support is refused by the
            server (``unsupported_control``): the embedded voice ``joe`` takes ``speed`` only.
    """

    speed: float | None | NotGiven = field(default_factory=lambda: NOT_GIVEN)
    emotion: str | None | NotGiven = field(default_factory=lambda: NOT_GIVEN)
    intensity: float | None | NotGiven = field(default_factory=lambda: NOT_GIVEN)
    pitch_shift: float | None | NotGiven = field(default_factory=lambda: NOT_GIVEN)
    energy: float | None | NotGiven = field(default_factory=lambda: NOT_GIVEN)


@dataclass
class _Utterance:
    """One Pipecat turn context: one EmoStream context on the socket."""

    context_id: str  # Pipecat's
    wire_id: str  # the EmoStream context_id (Pipecat's when it is a valid one)
    resampler: Any = None  # this context's stream resampler (rates the server does not offer)
    started: bool = False  # the server answered ``started``
    ended: bool = False  # ``end`` sent
    cancelled: bool = False  # ``cancel`` sent (interrupted)
    stream_id: str | None = None
    channel: int | None = None


def _is_cjk(word: str) -> bool:
    return any(unicodedata.east_asian_width(c) in ("W", "F") for c in word)


class EmoStreamTTSService(WebsocketTTSService):
    """Pipecat TTS service for an EmoStream server.

    Args:
        url: the server's stream endpoint, e.g. ``ws://127.0.0.1:8000/v1/stream``.
        api_key: sent as ``Authorization: Bearer`` on the upgrade (a server off loopback
            needs one).
        settings: voice and controls (:class:`EmoStreamTTSSettings`); ``voice=None`` is the
            server's default voice.
        sample_rate: output rate; by default the pipeline's. 16, 24 and 48 kHz come straight
            from the server, any other rate is resampled from 24 kHz here.
        done_timeout_s: kept for compatibility (protocol v1 made a turn wait for the
            previous ``done``; with contexts no turn waits).
        text_aggregation_mode: ``SENTENCE`` (default: each sentence is sent and flushed) or
            ``TOKEN`` (tokens go straight to the server, whose segmenter splits them).

    Event handlers: ``on_utterance_done(service, done)``, with the server's ``done`` event
    (``cancelled``, ``audio_ms``, and ``sent_ms`` / ``words_sent``).
    """

    Settings = EmoStreamTTSSettings
    _settings: EmoStreamTTSSettings

    def __init__(
        self,
        *,
        url: str = "ws://127.0.0.1:8000/v1/stream",
        api_key: str | None = None,
        settings: EmoStreamTTSSettings | None = None,
        sample_rate: int | None = None,
        done_timeout_s: float = 10.0,
        text_aggregation_mode: TextAggregationMode | None = None,
        **kwargs: Any,
    ) -> None:
        store = EmoStreamTTSSettings(
            model=None, voice=None, language=None, speed=None, emotion=None, intensity=None,
            pitch_shift=None, energy=None,
        )  # fmt: skip
        if settings is not None:
            store.apply_update(settings)
        super().__init__(
            text_aggregation_mode=text_aggregation_mode,
            push_text_frames=False,  # words come from the server's timestamps
            push_start_frame=True,
            pause_frame_processing=False,
            # Sentences are sent one by one: keep them apart ("one." + "Two" would be "one.Two").
            append_trailing_space=kwargs.pop("append_trailing_space", True),
            sample_rate=sample_rate,
            settings=store,
            **kwargs,
        )
        self._url = url
        self._api_key = api_key
        self._done_timeout_s = done_timeout_s
        self._receive_task: asyncio.Task[None] | None = None
        self._receive_ws: Any = None  # the socket that task reads
        self._utts: dict[str, _Utterance] = {}  # by EmoStream context id, start to done
        self._by_context: dict[str, _Utterance] = {}  # by Pipecat context id
        self._by_channel: dict[int, _Utterance] = {}
        self.last_done: dict[str, Any] | None = None
        self._register_event_handler("on_utterance_done")

    def can_generate_metrics(self) -> bool:
        return True

    @property
    def _server_rate(self) -> int:
        return self.sample_rate if self.sample_rate in SERVER_RATES else 24000

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self._connect()

    async def _connect(self) -> None:
        await super()._connect()
        await self._connect_websocket()
        ws, task = self._websocket, self._receive_task
        if ws is None or (task is not None and not task.done() and self._receive_ws is ws):
            return
        if task is not None and not task.done():
            await self.cancel_task(task)  # it read a socket that is gone
        self._receive_ws = ws
        self._receive_task = self.create_task(self._receive_task_handler(self._report_error))

    async def _disconnect(self) -> None:
        await super()._disconnect()
        await self._disconnect_websocket()

    async def _connect_websocket(self) -> None:
        if self._websocket and self._websocket.state is State.OPEN:
            return
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            self._websocket = await self._websocket_connect(self._url, additional_headers=headers)
            await self._call_event_handler("on_connected")
        except SOCKET_ERRORS as e:
            self._websocket = None
            await self.push_error(error_msg=f"EmoStream: cannot connect to {self._url}: {e}",
                                  exception=e)  # fmt: skip
            await self._call_event_handler("on_connection_error", f"{e}")

    async def _disconnect_websocket(self) -> None:
        task, self._receive_task = self._receive_task, None
        if task is not None and task is not asyncio.current_task():
            await self.cancel_task(task)
        try:
            await self.stop_all_metrics()
            if self._websocket:
                await self._websocket.close()
        except SOCKET_ERRORS as e:
            logger.debug(f"{self}: close: {e}")
        finally:
            self._websocket = None
            await self._abandon_utterances()
            await self._call_event_handler("on_disconnected")

    async def _abandon_utterances(self) -> None:
        """The socket is gone: no ``done`` will come for the open contexts."""
        utts = list(self._utts.values())
        self._utts.clear()
        self._by_context.clear()
        self._by_channel.clear()
        for utt in utts:
            await self._end_context(utt)

    def _forget(self, utt: _Utterance) -> None:
        if self._utts.get(utt.wire_id) is utt:
            del self._utts[utt.wire_id]
        if self._by_context.get(utt.context_id) is utt:
            del self._by_context[utt.context_id]
        if utt.channel is not None and self._by_channel.get(utt.channel) is utt:
            del self._by_channel[utt.channel]

    async def _end_context(self, utt: _Utterance) -> None:
        """Close the turn's audio context (unless an interruption already dropped it)."""
        if not utt.cancelled and self.audio_context_available(utt.context_id):
            await self.append_to_audio_context(
                utt.context_id, TTSStoppedFrame(context_id=utt.context_id)
            )
            await self.remove_audio_context(utt.context_id)

    async def _send(self, msg: dict[str, Any]) -> None:
        if self._websocket is None:
            raise ConnectionError("EmoStream socket is not connected")
        await self._websocket.send(json.dumps(msg))

    # -- turns -------------------------------------------------------------------------
    def _start_message(self, wire_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "type": "start",
            "context_id": wire_id,
            "word_timestamps": True,
            "format": {"codec": "pcm_s16le", "sample_rate": self._server_rate},
        }
        if isinstance(self._settings.voice, str) and self._settings.voice:
            msg["voice"] = self._settings.voice
        for name in CONTROLS:
            value = getattr(self._settings, name)
            if value is not None and not isinstance(value, NotGiven):
                msg[name] = value
        return msg

    async def _begin(self, context_id: str) -> _Utterance:
        if self._websocket is None or self._websocket.state is not State.OPEN:
            await self._connect()
        wire_id = context_id if CONTEXT_ID.fullmatch(context_id) else uuid.uuid4().hex
        while wire_id in self._utts:  # the same turn again before its old context's done
            wire_id = uuid.uuid4().hex
        utt = _Utterance(context_id, wire_id)
        if self._server_rate != self.sample_rate:
            utt.resampler = create_stream_resampler(clear_after_secs=None)
        self._utts[wire_id] = utt
        self._by_context[context_id] = utt
        await self._send(self._start_message(wire_id))
        return utt

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        """Send ``text`` into the context of ``context_id`` (opened on its first text)."""
        try:
            utt = self._by_context.get(context_id)
            if utt is None or utt.ended or utt.cancelled:
                utt = await self._begin(context_id)
            await self._send({"type": "text", "context_id": utt.wire_id, "text": text})
            if self._text_aggregation_mode == TextAggregationMode.SENTENCE:
                # A whole sentence: speak it now rather than wait for more text.
                await self._send({"type": "flush", "context_id": utt.wire_id})
            await self.start_tts_usage_metrics(text)
        except SOCKET_ERRORS as e:
            yield ErrorFrame(error=f"EmoStream: {e}")
            yield TTSStoppedFrame(context_id=context_id)
            await self._disconnect_websocket()
            return
        yield None  # audio arrives on the receive task

    async def flush_audio(self, context_id: str | None = None) -> None:
        """The turn is complete: ``end`` its context (``done`` follows its last audio); with
        no ``context_id``, every open context."""
        if context_id is None:
            utts = list(self._by_context.values())
        else:
            utts = [u for u in (self._by_context.get(context_id),) if u is not None]
        for utt in utts:
            if utt.ended or utt.cancelled:
                continue
            utt.ended = True
            try:
                await self._send({"type": "end", "context_id": utt.wire_id})
            except SOCKET_ERRORS as e:
                logger.warning(f"{self}: end: {e}")
                await self._abandon_utterances()
                return

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """Barge-in: ``cancel`` that turn's context only; its ``done`` reports what was heard."""
        await self.stop_all_metrics()
        utt = self._by_context.get(context_id)
        if utt is not None and not utt.cancelled:
            utt.cancelled = True
            try:
                await self._send({"type": "cancel", "context_id": utt.wire_id})
            except SOCKET_ERRORS as e:
                logger.warning(f"{self}: cancel: {e}")
                await self._abandon_utterances()
        await super().on_audio_context_interrupted(context_id)

    # -- server events -----------------------------------------------------------------
    async def _receive_task_handler(self, report_error: Any) -> None:
        """Read one socket until it closes. No reconnect loop: the next turn reconnects
        (the server also closes a socket idle for ``ws_idle_timeout_s``, 60 s by default)."""
        ws = self._receive_ws
        lost: Exception | None = None
        try:
            await self._receive_messages()
        except ConnectionClosedError as e:
            lost = e
        if self._websocket is not ws:
            return  # replaced meanwhile; its own task took over
        self._websocket = None
        if self._utts and not self._disconnecting:
            await self.push_error(error_msg=f"EmoStream: connection lost mid-utterance ({lost})")
        await self._abandon_utterances()

    async def _receive_messages(self) -> None:
        ws = self._receive_ws
        if ws is None:
            return
        async for message in ws:
            if isinstance(message, bytes):
                await self._on_audio(message)
            else:
                await self._on_event(json.loads(message))

    async def _on_audio(self, frame: bytes) -> None:
        if len(frame) < FRAME_HEADER.size:
            return
        _version, _flags, channel, _seq = FRAME_HEADER.unpack_from(frame)
        utt = self._by_channel.get(channel)
        if utt is None or utt.cancelled:
            return  # audio of an interrupted turn still in flight
        pcm = frame[FRAME_HEADER.size :]
        if utt.resampler is not None:
            pcm = await utt.resampler.resample(pcm, self._server_rate, self.sample_rate)
            if not pcm:
                return  # held in the resampler's block
        await self._append_audio(utt, pcm)

    async def _append_audio(self, utt: _Utterance, pcm: bytes) -> None:
        await self.append_to_audio_context(
            utt.context_id, TTSAudioRawFrame(pcm, self.sample_rate, 1, context_id=utt.context_id)
        )

    async def _flush_resampler(self, utt: _Utterance) -> None:
        """The context's audio is complete: emit what its resampler still holds."""
        if utt.resampler is None:
            return
        tail = await utt.resampler.flush()
        if tail and not utt.cancelled:
            await self._append_audio(utt, tail)

    async def _on_event(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        wire_id = msg.get("context_id")
        utt = self._utts.get(wire_id) if isinstance(wire_id, str) else None
        if kind == "started":
            if utt is not None:
                utt.started = True
                utt.stream_id = msg.get("stream_id")
                utt.channel = msg.get("channel")
                if isinstance(utt.channel, int):
                    self._by_channel[utt.channel] = utt
                if msg.get("word_timestamps") is False:
                    logger.warning(f"{self}: voice {msg.get('voice')!r} gives no word timestamps")
        elif kind == "words":
            if utt is None or utt.cancelled:
                return
            await self._add_words(utt.context_id, msg.get("words", []))
        elif kind == "done":
            self.last_done = msg
            if utt is not None:
                self._forget(utt)
                await self._flush_resampler(utt)  # before the turn's TTSStoppedFrame
                await self._end_context(utt)
            await self._call_event_handler("on_utterance_done", msg)
        elif kind == "error":
            await self._on_error(utt, msg)

    async def _add_words(self, context_id: str, words: list[dict[str, Any]]) -> None:
        group: list[tuple[str, float]] = []
        cjk = False
        for w in words:
            word_cjk = _is_cjk(w["word"])
            if group and word_cjk != cjk:
                await self.add_word_timestamps(group, context_id, includes_inter_frame_spaces=cjk)
                group = []
            cjk = word_cjk
            group.append((w["word"], w["start_ms"] / 1000.0))
        if group:
            await self.add_word_timestamps(group, context_id, includes_inter_frame_spaces=cjk)

    async def _on_error(self, utt: _Utterance | None, msg: dict[str, Any]) -> None:
        code, text = msg.get("code"), msg.get("message", "")
        if code == "unknown_context" or (code == "already_ended" and utt is None):
            # A cancel that crossed the context's own done, or text after a refused start:
            # nothing is open on the server, nothing to report.
            logger.debug(f"{self}: {code}: {text}")
            return
        if code == "idle_timeout":
            logger.debug(f"{self}: the server closed the idle socket")
            return
        if utt is not None and not utt.started:
            # The start was refused (unknown_voice, unsupported_control, busy,
            # too_many_contexts, ...): no done will follow, so the turn ends here.
            self._forget(utt)
            await self._end_context(utt)
        await self.push_error(error_msg=f"EmoStream {code}: {text}")
