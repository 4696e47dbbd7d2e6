"""``/v1/stream``: the thin asyncio layer around :class:`SessionProtocol`.

One receive loop per connection feeds the protocol (through its
:class:`~emostream.transport.websocket.intake.TextIntake`) and carries out its actions; one task
per utterance pulls segments from a queue, streams audio and sends ``done``. Every frame goes
out through the connection's :class:`~emostream.transport.websocket.sender.BoundedSender`.

An utterance is admitted (a stream slot taken) before ``started`` is sent, and every
utterance that got ``started`` gets exactly one ``done``, however early it is cancelled. A
``start`` refused there (``busy``, with ``retry_after_ms``: the stream limit or the runner's
admission) gets that error as its one answer: the text, flush and end the client sent for it
are then dropped quietly, only counted (:meth:`ContextRouter.refused`). The voice a ``start``
names is looked up once, by the protocol (:class:`~emostream.transport.websocket.caller_voices.
CallerVoices`); the utterance speaks what it found.

Bounds (README "Security and limits"): per-key streams and characters per minute
(:mod:`emostream.transport.edge.limits`); a connection with no client message and no audio sent
for ``ws_idle_timeout_s`` gets ``error`` ``idle_timeout`` and is closed (1000); a client that
stops reading for ``slow_reader_timeout_s`` has its stream cut (``slow_reader``: the utterance
is cancelled and its slot freed; the error and a 1008 close are sent if the client reads again
within a second, else the socket is left to close). On drain (:mod:`emostream.transport.drain`)
a connection gets ``shutting_down`` and 1001. Lines (``line``: danmaku, chat) are played by the
connection's :class:`~emostream.transport.websocket.line_player.LinePlayer`.

Contexts (protocol v1.1, :mod:`emostream.transport.websocket.contexts`): every live context is
an utterance of its own with its own task, so several speak at once; their binary frames carry
the context's channel (:mod:`emostream.transport.websocket.frames`) and their events its
``context_id``. A v1 connection has one utterance at a time (context ``None``) and bare frames.

Rooms (:mod:`emostream.transport.rooms`): an utterance whose ``start`` (or ``line``) names a room
also goes to that room's listeners, through its :class:`~emostream.transport.rooms.hub.RoomTap`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from emostream.stream.service import SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest, UtteranceStats
from emostream.text.frontend import EspeakCrashed
from emostream.transport.drain import GOING_AWAY, SHUTTING_DOWN, Drain
from emostream.transport.edge.guard import principal_of
from emostream.transport.edge.limits import KeyLimits
from emostream.transport.errors import INVALID_UTF8, INVALID_UTF8_REASON, error
from emostream.transport.pronunciation_api import caller_dictionaries
from emostream.transport.rooms.publishing import Publishing
from emostream.transport.rooms.registry import RoomHub
from emostream.transport.websocket.caller_voices import CallerVoices
from emostream.transport.websocket.contexts import ContextRouter, Routed, tagged
from emostream.transport.websocket.intake import TextIntake
from emostream.transport.websocket.line_player import LinePlayer
from emostream.transport.websocket.line_queue import Line
from emostream.transport.websocket.protocol import (
    Action,
    BeginUtterance,
    CancelUtterance,
    ClearLines,
    Dropped,
    EndOfInput,
    EnqueueLine,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.transport.websocket.sender import BoundedSender
from emostream.transport.websocket.start_request import StartRequest
from emostream.transport.websocket.utterance import Utterance, admit, segment_texts

log = logging.getLogger(__name__)
SUBPROTOCOL = "emostream.v1"  # accepted when offered (browsers passing a token offer both)
IDLE_TIMEOUT = "idle_timeout"
SLOW_READER = "slow_reader"
UTTERANCE_TIMEOUT = "utterance_timeout"
AUDIO_TOO_LONG = "audio_too_long"  # the audio reached max_utterance_audio_s (done: truncated)
_LAST_WORDS_S = 1.0  # how long the closing error and close frame may wait on a stalled socket


class _Cut(Exception):
    """The client stopped reading: the utterance ends as cancelled."""


class StreamConnection:
    def __init__(
        self,
        ws: WebSocket,
        service: SpeechService,
        *,
        limits: KeyLimits | None = None,
        drain: Drain | None = None,
        rooms: RoomHub | None = None,
    ) -> None:
        self.ws = ws
        self.service = service
        self.principal = principal_of(ws)
        self.limits = limits or KeyLimits()
        self.drain = drain or Drain()
        self.rooms = Publishing(rooms, self.principal, self._send_json,
                                codec_delay_ms=service.opus_delay_ms)  # fmt: skip
        self.voices = CallerVoices(service, ws.app, self.principal, lambda: self.intake.refs)
        self.router = ContextRouter(
            self._new_protocol, max_contexts=service.settings.max_contexts_per_connection
        )
        self.protocol = self.router.default  # v1's protocol state
        self.intake = TextIntake(
            service, self.router, principal=self.principal, limits=self.limits, drain=self.drain
        )
        self.sender = BoundedSender(
            ws, timeout_s=service.settings.slow_reader_timeout_s,
            on_stall=lambda: self._request_stop(SLOW_READER),
        )  # fmt: skip
        self.lines = LinePlayer(
            service.settings, may_start=self._line_may_start, send=self.rooms.send,
            start=self._start_line,
        )  # fmt: skip
        self._utts: dict[str | None, Utterance] = {}  # by context (None: v1)
        self._stoppers: set[asyncio.Task[None]] = set()  # v1.1 cancels being carried out
        self._last_activity = time.monotonic()
        self._stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._shutting = False
        self._unsent_done: dict[str, Any] | None = None

    def _new_protocol(self) -> SessionProtocol:
        settings = self.service.settings
        registry = getattr(self.ws.app.state, "registry", None)
        return SessionProtocol(
            lookup_voice=self.voices.lookup,
            default_voice=settings.default_voice,
            max_text_chars=settings.max_text_chars,
            line_ttl_ms=settings.line_ttl_ms,
            new_stream_id=self.service.new_stream_id,
            unavailable=self.voices.unavailable,
            match_voice=self.service.timbre_match,
            unknown=self.voices.unknown,
            lookup_dictionary=caller_dictionaries(registry, self.principal),
            opus_delay_ms=self.service.opus_delay_ms,
            room_access=self.rooms.access,
        )

    # -- drain ------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return bool(self._utts)

    async def shut_down(self) -> None:
        """``shutting_down`` (utterances in progress are cancelled: their ``done`` follow), 1001."""
        if self._shutting:
            return
        self._shutting = True
        await self.lines.stop()
        await self.lines.drop_waiting()
        await self._send_error(SHUTTING_DOWN, "the server is shutting down; reconnect shortly")
        await self._stop_all()
        await self.sender.close(GOING_AWAY, SHUTTING_DOWN, timeout=_LAST_WORDS_S)
        self._request_stop(SHUTTING_DOWN)

    def _request_stop(self, reason: str) -> None:
        if not self._stop.done():
            self._stop.set_result(reason)

    # -- receive loop -----------------------------------------------------------------
    async def run(self) -> None:
        if self.drain.draining:
            await self._refuse_upgrade()
            return
        offered = list(self.ws.scope.get("subprotocols") or ())
        chosen = SUBPROTOCOL if SUBPROTOCOL in offered else next(iter(offered), None)
        await self.ws.accept(subprotocol=chosen)
        self.drain.connections.add(self)
        receiving: asyncio.Task[Any] | None = None
        watchdog = asyncio.create_task(self.sender.watch())
        try:
            while True:
                if receiving is None:
                    receiving = asyncio.ensure_future(self.ws.receive())
                idle_left = (
                    self._last_activity + self.service.settings.ws_idle_timeout_s
                    - time.monotonic()
                )  # fmt: skip
                if idle_left <= 0:
                    await self._end(IDLE_TIMEOUT, "no message and no audio for "
                                    f"{self.service.settings.ws_idle_timeout_s:g} s", 1000)  # fmt: skip
                    break
                await asyncio.wait(
                    {receiving, self._stop}, timeout=idle_left,
                    return_when=asyncio.FIRST_COMPLETED,
                )  # fmt: skip
                if self._stop.done():
                    break
                if not receiving.done():
                    continue  # recheck idleness (audio may have been sent meanwhile)
                message = receiving.result()
                receiving = None
                if message["type"] == "websocket.disconnect":
                    if message.get("reason") == INVALID_UTF8_REASON:  # closed 1007 by utf8.py
                        self.service.metrics.errors.labels(INVALID_UTF8).inc()
                    break
                self._last_activity = time.monotonic()
                await self._handle(message)
                if self.drain.draining and not self.busy:
                    await self.shut_down()
                    break
        except WebSocketDisconnect:
            pass
        finally:
            watchdog.cancel()
            if receiving is not None and not receiving.done():
                receiving.cancel()
            self.drain.connections.discard(self)
            await self.lines.stop()
            if self._stop.done() and self._stop.result() == SHUTTING_DOWN:
                await self.shut_down()
            await self._stop_all()
            if self.sender.stalled:
                await self._end(SLOW_READER, "the client stopped reading; the stream was cut "
                                f"after {self.service.settings.slow_reader_timeout_s:g} s", 1008)  # fmt: skip

    async def _handle(self, message: dict[str, Any]) -> None:
        try:
            if message.get("text") is not None:
                routed = await self.intake.receive_text(message["text"])
            else:
                data = message.get("bytes") or b""
                routed = [Routed(None, a) for a in self.protocol.receive_bytes(data)]
            for item in routed:
                await self._apply(item.action, item.context)
        except WebSocketDisconnect:
            raise
        except Exception:  # a bug for one message must not take the connection down
            log.exception("message handling failed")
            await self._apply(SendError("internal", "the server failed on this message"))

    async def _refuse_upgrade(self) -> None:
        self.service.metrics.errors.labels(SHUTTING_DOWN).inc()
        message = "the server is shutting down; reconnect shortly"
        await self.sender.deny(error(503, SHUTTING_DOWN, message), GOING_AWAY)

    async def _end(self, code: str, message: str, close_code: int) -> None:
        """Say why the connection ends and close it (each step bounded on a stalled socket)."""
        self.service.metrics.errors.labels(code).inc()
        self.sender.stalled = False  # allow these last words their own bounded wait
        await self._send_json(
            {"type": "error", "code": code, "message": message}, timeout=_LAST_WORDS_S
        )
        if self._unsent_done is not None:
            await self._send_json(self._unsent_done, timeout=_LAST_WORDS_S)
            self._unsent_done = None
        await self.sender.close(close_code, code, timeout=_LAST_WORDS_S)

    async def _apply(self, action: object, context: str | None = None) -> None:
        utt = self._utts.get(context)
        if isinstance(action, SendError):
            self.service.metrics.errors.labels(action.code).inc()
            await self._send_json(tagged(action.event, context))
        elif isinstance(action, BeginUtterance):
            await self._begin(action, context)
        elif isinstance(action, (QueueSegments, EndOfInput)):
            if utt is not None:
                utt.take(action)
        elif isinstance(action, CancelUtterance):
            # done(cancelled=True) follows, from the task or from _stop_task. v1 waits for it
            # (as it always did); a context's cancel lets the next message in meanwhile.
            if context is None:
                await self._stop_task(utt)
            elif utt is not None:
                stopper = asyncio.create_task(self._stop_task(utt))
                self._stoppers.add(stopper)
                stopper.add_done_callback(self._stoppers.discard)
        elif isinstance(action, EnqueueLine):
            self.rooms.line(action)
            await self.lines.enqueue(action, context)
        elif isinstance(action, ClearLines):
            await self.lines.clear()
        elif isinstance(action, Dropped):  # a refused start's later message: no answer
            self.service.metrics.refused_messages.labels(action.kind).inc()

    async def _begin(
        self,
        action: BeginUtterance,
        context: str | None = None,
        line_id: str | None = None,
        then: list[Action] | None = None,
    ) -> None:
        """Admit and start an utterance; ``then``: a queued line's segments and end, queued
        before anything is awaited (nothing a client sends meanwhile can reach them)."""
        req = action.request
        voice = req.spoken  # what the protocol's lookup found: not looked up again
        voices = req.voices_spoken()
        if voice is None or voices is None:  # (a lookup gave only an info: nothing speaks it)
            gone = SendError("unknown_voice", f"voice {req.voice.id!r} is gone")
            await self._refuse(gone, req, context, line_id)
            return
        # Before started: a refused start gets only the error.
        admitted = admit(self.service, self.limits, self.principal)
        if isinstance(admitted, SendError):
            await self._refuse(admitted, req, context, line_id)
            return
        slot, permit = admitted
        utt = Utterance(req, slot, permit, report_sent="word_timestamps" in action.started_event)
        utt.line_id = line_id
        utt.context_id = context
        utt.channel = self.router.channel_of(context)
        utt.room = self.rooms.tap(req)
        self._utts[context] = utt
        for item in then or ():
            utt.take(item)
        started = action.started_event
        if slot.degraded:  # admitted on a lighter path (README "Cluster": degradation)
            started = {**started, "degraded": slot.degraded}
        utt.relay(started)
        await self._send_json(started)
        if utt.done_sent:  # a line's start, cancelled while started was being sent
            return
        request = UtteranceRequest(voice=voice, controls=req.controls, fmt=req.fmt,
                                   timestamps=req.timestamps, stream_id=req.stream_id,
                                   word_timestamps=req.word_timestamps or req.room_words,
                                   mouth=req.mouth or req.room is not None,
                                   voices=voices)  # fmt: skip
        utt.task = asyncio.create_task(self._speak(utt, request))

    async def _refuse(
        self, refused: SendError, req: StartRequest, context: str | None, line_id: str | None
    ) -> None:
        if line_id is None:  # the client's start: its text and end are dropped quietly
            self.router.refused(context, req)
        else:  # a queued line's start: its text and end were never the client's
            self.router.finished(context, req)
        if refused.code != "busy":  # (busy is not counted as an error, as before)
            self.service.metrics.errors.labels(refused.code).inc()
        event = refused.event if line_id is None else {**refused.event, "id": line_id}
        await self._send_json(tagged(event, context))

    async def _speak(self, utt: Utterance, request: UtteranceRequest) -> None:
        cancelled = True
        stats = None
        limit_s = self.service.settings.max_utterance_s
        deadline = asyncio.timeout(limit_s if limit_s > 0 else None)
        try:
            async with (
                deadline,
                self.service.utterance(
                    request,
                    segment_texts(utt.queue),
                    transport="ws",
                    slot=utt.slot,
                    cache=utt.req.cache,
                    cache_scope=self.principal or "",
                    replay_lead_s=self.service.settings.phrase_cache_lead_s,
                ) as (out, stats),
            ):
                async for item in out:
                    if isinstance(item, Packet):
                        if await self.sender.send_frame(utt.frame(item.data)):
                            utt.sent_samples += item.samples
                            self.lines.playout.sent(utt.played_s(item), time.monotonic())
                        self._last_activity = time.monotonic()
                    else:  # (a room's listeners get words and mouth events, asked or not)
                        body = item.body
                        utt.relay(utt.place_words(body) if body["type"] == "words" else body)
                        if utt.asked(body):
                            await self._send_json(utt.tag(body))
                    if self.sender.stalled:
                        raise _Cut
                cancelled = stats.truncated
            if stats.truncated:
                await self._send_error(
                    AUDIO_TOO_LONG, "the utterance's audio reached "
                    f"{self.service.settings.max_utterance_audio_s:g} s and was cut there",
                    context=utt.context_id,
                )  # fmt: skip
        except TimeoutError as exc:
            if not deadline.expired():
                await self._failed(utt, exc)
            else:
                await self._send_error(
                    UTTERANCE_TIMEOUT, f"the utterance ran past {limit_s:g} s and was cut",
                    context=utt.context_id,
                )  # fmt: skip
        except (asyncio.CancelledError, _Cut):
            pass
        except Exception as exc:  # noqa: BLE001 - logged in _failed; the connection stays up
            await self._failed(utt, exc)
        finally:
            await self._finish(utt, stats, cancelled=cancelled)

    async def _failed(self, utt: Utterance, exc: BaseException) -> None:
        if isinstance(exc, EspeakCrashed):  # an input's fault, logged where it happened
            log.warning("utterance %s failed: %s", utt.req.stream_id, exc)
        else:
            log.error("utterance %s failed", utt.req.stream_id, exc_info=exc)
        self.service.metrics.errors.labels("internal").inc()
        await self._send_json(
            utt.tag({"type": "error", "code": "internal", "message": f"synthesis failed: {exc}"})
        )

    async def _finish(
        self, utt: Utterance, stats: UtteranceStats | None, *, cancelled: bool
    ) -> None:
        """Release the utterance and send its one ``done`` (a second call does nothing)."""
        if utt.done_sent:
            return
        utt.done_sent = True
        utt.slot.release()
        utt.permit.release()
        if self._utts.get(utt.context_id) is utt:
            del self._utts[utt.context_id]
        self.router.finished(utt.context_id, utt.req)
        done = (stats or UtteranceStats()).as_done(utt.req.fmt.sample_rate, cancelled=cancelled)
        if utt.report_sent:
            done.update(utt.sent_report())
        if utt.line_id is not None:
            done["id"] = utt.line_id
        utt.relay(done)
        done = utt.tag(done)
        if self.sender.stalled:
            self._unsent_done = done  # follows the slow_reader error, if the client reads again
        else:
            await self._send_json(done)
        self._last_activity = time.monotonic()
        if self.drain.draining:  # finished during a drain: the loop shuts this connection
            self._request_stop(SHUTTING_DOWN)
        self.lines.wake()  # the next line, if any, may start

    # -- lines (danmaku queue): played by self.lines ------------------------------------
    def _line_may_start(self) -> bool:
        return (
            not self._utts
            and self.router.idle
            and not self._shutting
            and not self.sender.stalled
            and not self._stop.done()
            and not self.drain.draining
        )

    async def _start_line(self, line: Line, speed_factor: float) -> None:
        """A queued line, spoken as a whole utterance. Synchronous up to :meth:`_begin`'s first
        await: the protocol leaves idle before a client message can be handled."""
        routed = self.router.start_line(line.id, line.text, line.fields, speed_factor)
        context = routed[0].context
        first, rest = routed[0].action, [r.action for r in routed[1:]]
        if isinstance(first, BeginUtterance):
            await self._begin(first, context, line.id, rest)
        elif isinstance(first, SendError):  # refused (e.g. its voice was deleted meanwhile)
            self.service.metrics.errors.labels(first.code).inc()
            await self._send_json(tagged({**first.event, "id": line.id}, context))
        for action in rest:
            if isinstance(action, SendError):
                await self._apply(action, context)

    async def _stop_all(self) -> None:
        """Stop every utterance (disconnect, shutdown) and see each ``done`` sent."""
        for utt in list(self._utts.values()):
            await self._stop_task(utt)
        while self._stoppers:
            await asyncio.gather(*list(self._stoppers), return_exceptions=True)

    async def _stop_task(self, utt: Utterance | None) -> None:
        """Stop an utterance (cancel, disconnect) and see its ``done`` sent."""
        if utt is None:
            return
        task = utt.task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        # A task cancelled before its first step never ran its finally.
        await self._finish(utt, None, cancelled=True)

    async def _send_error(self, code: str, message: str, *, context: str | None = None) -> None:
        self.service.metrics.errors.labels(code).inc()
        await self._send_json(tagged({"type": "error", "code": code, "message": message}, context))

    async def _send_json(self, body: dict[str, Any], *, timeout: float | None = None) -> None:
        await self.sender.send_json(body, timeout=timeout)


async def stream_endpoint(ws: WebSocket) -> None:
    state = ws.app.state
    service: SpeechService = state.service
    limits = getattr(state, "limits", None)
    drain, rooms = getattr(state, "drain", None), getattr(state, "rooms", None)
    await StreamConnection(ws, service, limits=limits, drain=drain, rooms=rooms).run()
