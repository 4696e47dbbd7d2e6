"""``/v1/stream``: the thin asyncio layer around :class:`SessionProtocol`.

One receive loop per connection feeds the protocol and carries out its actions; one
task per utterance pulls segments from a queue, streams audio and sends ``done``.
Sends are serialised with a lock (two tasks write to the socket).

An utterance is admitted (a stream slot taken) before ``started`` is sent, and every
utterance that got ``started`` gets exactly one ``done``, however early it is cancelled. A
``start`` refused there (``busy``, with ``retry_after_ms``: the stream limit or the runner's
admission) gets that error as its one answer: the text, flush and end the client sent for it
are then dropped quietly (:meth:`ContextRouter.refused`).

Bounds (README "Security and limits"): per-key streams and characters per minute
(:mod:`emostream.transport.edge.limits`); a connection with no client message and no audio sent for
``ws_idle_timeout_s`` gets ``error`` ``idle_timeout`` and is closed (1000); a send that waits
more than ``slow_reader_timeout_s`` for a client that stopped reading cuts the stream
(``slow_reader``: the utterance is cancelled and its slot freed; the error and a 1008 close are
sent if the client reads again within a second, else the socket is left to close). Sends wait
for the transport's buffer to drain below its high-water mark (uvicorn), so what the server
holds for one stream is bounded by that mark (64 KiB) plus one frame, never the whole utterance.
An audio frame is sent without a timer of its own (50 frames a second a stream: an
``asyncio.timeout`` each was the larger half of a frame's CPU, ``bench/ws_send_cost.py``):
the connection's watchdog, waking every quarter of ``slow_reader_timeout_s``, cuts the
utterance whose frame has waited longer than that (so after 1-1.25 times it); other sends,
and a frame queued behind another, keep their own timeout.
On drain (:mod:`emostream.transport.drain`) a connection gets ``shutting_down`` and 1001.

Lines (``line``: danmaku, chat) wait in a per-connection
:class:`~emostream.transport.websocket.line_queue.LineQueue`; one task per connection (made at the first
``line``) reports expiries as they happen and starts the next line whenever the socket is idle
and (``line_pace_lead_ms`` > 0) the audio already sent is at most that lead ahead of a listener
playing it in real time (the connection's :class:`~emostream.transport.websocket.line_queue.Playout`,
fed with every binary frame sent), so lines wait, expire and speed up against what is heard.
Waiting lines are dropped (``cleared``) on shutdown. An ``error`` refusing a ``line`` carries
the line's ``id`` (when the client gave a well-formed one).

Contexts (protocol v1.1, :mod:`emostream.transport.websocket.contexts`): every live context is an
utterance of its own with its own task, so several speak at once; their binary frames carry
the context's channel (:mod:`emostream.transport.websocket.frames`) and their events its ``context_id``.
A v1 connection has one utterance at a time (context ``None``) and bare frames, as before.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from emostream.codec.packetizer import FRAME_MS
from emostream.stream.service import Busy, SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest, UtteranceStats
from emostream.text.espeak import EspeakCrashed
from emostream.transport.drain import GOING_AWAY, SHUTTING_DOWN, Drain
from emostream.transport.edge.guard import principal_of, voice_visible
from emostream.transport.edge.limits import KeyLimits, LimitExceeded, StreamPermit
from emostream.transport.errors import error, retry_after_ms
from emostream.transport.http import (
    STORE_UNAVAILABLE,
    clone_unavailable,
    store_unavailable_message,
)
from emostream.transport.websocket.contexts import ContextRouter, Routed, tagged
from emostream.transport.websocket.line_queue import Dropped, Line, LineQueue, Playout
from emostream.transport.websocket.protocol import (
    MAX_LINE_ID_CHARS,
    Action,
    BeginUtterance,
    CancelUtterance,
    ClearLines,
    EndOfInput,
    EnqueueLine,
    ProtocolError,
    QueueSegments,
    SendError,
    SessionProtocol,
    frame_too_large,
    load_message,
)
from emostream.transport.websocket.utf8 import INVALID_UTF8, INVALID_UTF8_REASON
from emostream.transport.websocket.utterance import END, Utterance, segment_texts
from emostream.voices.base import Voice, VoiceInfo
from emostream.voices.cloning.clip import ClipError
from emostream.voices.cloning.registry import StoreUnavailable

log = logging.getLogger(__name__)
SUBPROTOCOL = "emostream.v1"  # accepted when offered (browsers passing a token offer both)
IDLE_TIMEOUT = "idle_timeout"
SLOW_READER = "slow_reader"
UTTERANCE_TIMEOUT = "utterance_timeout"
AUDIO_TOO_LONG = "audio_too_long"  # the audio reached max_utterance_audio_s (done: truncated)
_LAST_WORDS_S = 1.0  # how long the closing error and close frame may wait on a stalled socket


class _Cut(Exception):
    """The client stopped reading: the utterance ends as cancelled."""


@dataclass(frozen=True)
class _LineRefused(SendError):
    """An ``error`` refusing a ``line``: it carries the line's ``id``."""

    id: str = ""

    @property
    def event(self) -> dict[str, Any]:
        return {**super().event, "id": self.id}


@dataclass(frozen=True)
class _Busy(SendError):
    """The ``busy`` error: it says when a new ``start`` is likely to be admitted."""

    retry_after_ms: int = 0

    @property
    def event(self) -> dict[str, Any]:
        return {**super().event, "retry_after_ms": self.retry_after_ms}


def _refused_with_id(routed: list[Routed], msg: dict[str, Any]) -> list[Routed]:
    """Errors answering a ``line`` message carry its ``id`` (when it is a well-formed one)."""
    line_id = msg.get("id")
    if msg.get("type") != "line" or not isinstance(line_id, str):
        return routed
    if not line_id or len(line_id) > MAX_LINE_ID_CHARS:
        return routed
    return [
        Routed(r.context, _LineRefused(r.action.code, r.action.message, line_id))
        if isinstance(r.action, SendError)
        else r
        for r in routed
    ]


class StreamConnection:
    def __init__(
        self,
        ws: WebSocket,
        service: SpeechService,
        *,
        limits: KeyLimits | None = None,
        drain: Drain | None = None,
    ) -> None:
        self.ws = ws
        self.service = service
        self.principal = principal_of(ws)
        self.limits = limits or KeyLimits()
        self.drain = drain or Drain()
        self.router = ContextRouter(
            self._new_protocol, max_contexts=service.settings.max_contexts_per_connection
        )
        self.protocol = self.router.default  # v1's protocol state
        self._send_lock = asyncio.Lock()
        self._utts: dict[str | None, Utterance] = {}  # by context (None: v1)
        self._stoppers: set[asyncio.Task[None]] = set()  # v1.1 cancels being carried out
        self._refs: set[str] = set()  # inline reference voices this connection sent
        self._last_activity = time.monotonic()
        self._stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._stalled = False
        self._shutting = False
        self._unsent_done: dict[str, Any] | None = None
        self._lines: LineQueue | None = None  # made at the first line
        self._lines_task: asyncio.Task[None] | None = None
        self._lines_wake = asyncio.Event()
        self._playout = Playout()  # the listener's clock: every binary frame sent
        # The audio frame being sent without a timer: (its utterance's task, since when).
        self._frame_send: tuple[asyncio.Task[Any], float] | None = None

    def _new_protocol(self) -> SessionProtocol:
        settings = self.service.settings
        return SessionProtocol(
            lookup_voice=self._lookup,
            default_voice=settings.default_voice,
            max_text_chars=settings.max_text_chars,
            line_ttl_ms=settings.line_ttl_ms,
            new_stream_id=self.service.new_stream_id,
            unavailable=self._unavailable,
            opus_delay_ms=self.service.opus_delay_ms,
        )

    # -- voices this caller may use ---------------------------------------------------
    # (Registry down: the protocol refuses the start or line with ``store_unavailable``, and
    # the connection goes on.)
    def _lookup(self, voice_id: str) -> VoiceInfo | None:
        try:
            if voice_id in self._refs or voice_visible(
                self.service.registry, self.principal, voice_id
            ):
                return self.service.voice_info(voice_id)
            return None
        except StoreUnavailable as exc:
            raise ProtocolError(STORE_UNAVAILABLE, store_unavailable_message(exc)) from None

    def _unavailable(self, voice_id: str) -> str | None:
        try:
            if not voice_visible(self.service.registry, self.principal, voice_id):
                return None
            return clone_unavailable(self.ws.app, voice_id)
        except StoreUnavailable as exc:
            raise ProtocolError(STORE_UNAVAILABLE, store_unavailable_message(exc)) from None

    # -- drain ------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return bool(self._utts)

    async def shut_down(self) -> None:
        """``shutting_down`` (utterances in progress are cancelled: their ``done`` follow), 1001."""
        if self._shutting:
            return
        self._shutting = True
        await self._stop_lines()
        if self._lines is not None and len(self._lines):
            await self._report_lines(self._lines.clear(time.monotonic()))
        await self._send_error(SHUTTING_DOWN, "the server is shutting down; reconnect shortly")
        await self._stop_all()
        await self._close(GOING_AWAY, SHUTTING_DOWN)
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
        watchdog = asyncio.create_task(self._watch_frames())
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
                    if message.get("reason") == INVALID_UTF8_REASON:  # closed 1007 by ws_utf8
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
            await self._stop_lines()
            if self._stop.done() and self._stop.result() == SHUTTING_DOWN:
                await self.shut_down()
            await self._stop_all()
            if self._stalled:
                await self._end(SLOW_READER, "the client stopped reading; the stream was cut "
                                f"after {self.service.settings.slow_reader_timeout_s:g} s", 1008)  # fmt: skip

    async def _handle(self, message: dict[str, Any]) -> None:
        try:
            if message.get("text") is not None:
                routed = await self._receive_text(message["text"])
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
        response = error(503, SHUTTING_DOWN, "the server is shutting down; reconnect shortly")
        if "websocket.http.response" in self.ws.scope.get("extensions", {}):
            await self.ws.send_denial_response(response)
        else:
            await self.ws.close(GOING_AWAY)

    async def _end(self, code: str, message: str, close_code: int) -> None:
        """Say why the connection ends and close it (each step bounded on a stalled socket)."""
        self.service.metrics.errors.labels(code).inc()
        self._stalled = False  # allow these last words their own bounded wait
        await self._send_json(
            {"type": "error", "code": code, "message": message}, timeout=_LAST_WORDS_S
        )
        if self._unsent_done is not None:
            await self._send_json(self._unsent_done, timeout=_LAST_WORDS_S)
            self._unsent_done = None
        await self._close(close_code, code)

    async def _close(self, code: int, reason: str) -> None:
        if self.ws.application_state != WebSocketState.CONNECTED:
            return
        try:
            async with asyncio.timeout(_LAST_WORDS_S):
                await self.ws.close(code, reason)
        except (TimeoutError, WebSocketDisconnect, RuntimeError, OSError):
            log.debug("close not sent")

    async def _receive_text(self, raw: str) -> list[Routed]:
        try:
            msg = load_message(raw)
        except ProtocolError as exc:
            return [Routed(None, SendError(exc.code, exc.message))]
        return _refused_with_id(await self._route(raw, msg), msg)

    async def _route(self, raw: str, msg: dict[str, Any]) -> list[Routed]:
        settings = self.service.settings
        oversized = frame_too_large(
            len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass")), msg,
            max_message_bytes=settings.max_message_bytes, max_start_bytes=settings.max_start_bytes,
        )  # fmt: skip
        if oversized is not None:
            return [Routed(None, SendError(oversized.code, oversized.message))]
        kind = msg.get("type")
        if kind in ("start", "line") and self.drain.draining:
            return [Routed(None, SendError(SHUTTING_DOWN, "the server is shutting down; no new "
                                           "utterances"))]  # fmt: skip
        if (kind == "text" and self.router.state_of(msg) == "open" or kind == "line") and (
            isinstance(msg.get("text"), str)
        ):
            try:
                self.limits.charge_chars(self.principal, len(msg["text"]))
            except LimitExceeded as exc:
                return [Routed(None, SendError(exc.code, exc.message))]
        if (
            msg.get("type") == "start"
            and msg.get("reference_audio") is not None
            and self.service.can_clone
            and self.router.may_start(msg)
        ):
            error = await self._inline_reference(msg)
            if error is not None:
                context = msg.get("context_id") if self.router.mode != "v1" else None
                return [Routed(context if isinstance(context, str) else None, error)]
        return self.router.receive_message(msg)

    async def _inline_reference(self, msg: dict[str, Any]) -> SendError | None:
        """``start`` with ``reference_audio`` (base64 clip): embed it and speak as that voice.

        The clip becomes a transient voice whose id replaces ``voice`` in ``msg``; the protocol
        core then sees a plain ``start``. Voices that cannot clone keep the field, and the
        protocol refuses it as the unsupported ``speaker`` control."""
        ref = msg.pop("reference_audio")
        if not isinstance(ref, str) or not ref:
            return SendError("bad_value", "'reference_audio' must be a base64 string")
        try:
            # ValueError: not base64 (binascii.Error) or not ASCII at all.
            data = base64.b64decode(ref, validate=True)
        except ValueError:
            return SendError("bad_value", "'reference_audio' is not valid base64")
        try:
            voice = await self.service.reference_voice(data)
        except ClipError as exc:
            return SendError(exc.code, f"reference_audio: {exc.message}")
        msg["voice"] = voice.info.id
        self._refs.add(voice.info.id)
        return None

    async def _apply(self, action: object, context: str | None = None) -> None:
        utt = self._utts.get(context)
        if isinstance(action, SendError):
            self.service.metrics.errors.labels(action.code).inc()
            await self._send_json(tagged(action.event, context))
        elif isinstance(action, BeginUtterance):
            await self._begin(action, context)
        elif isinstance(action, QueueSegments):
            if utt is not None:
                utt.sources.extend(action.sources)
                for text in action.texts:
                    utt.queue.put_nowait(text)
        elif isinstance(action, EndOfInput):
            if utt is not None:
                utt.queue.put_nowait(END)
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
            await self._enqueue_line(action, context)
        elif isinstance(action, ClearLines):
            await self._report_lines(self._line_queue().clear(time.monotonic()))
            self._lines_wake.set()

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
        refused: SendError | None = None
        permit: StreamPermit | None = None
        voice = self._voice_or_refusal(req.voice.id)
        if isinstance(voice, SendError):
            voice, refused = None, voice
        elif voice is None:
            refused = SendError("unknown_voice", f"voice {req.voice.id!r} is gone")
        else:
            try:
                permit = self.limits.open_stream(self.principal)
            except LimitExceeded as exc:
                refused = SendError(exc.code, exc.message)
        if permit is not None:
            try:
                slot = self.service.admit()  # before started: a refused start gets only the error
            except Busy as exc:
                permit.release()
                refused = _Busy("busy", f"{exc}; retry shortly", retry_after_ms(exc))
        if refused is not None or voice is None or permit is None:
            if line_id is None:  # the client's start: its text and end are dropped quietly
                self.router.refused(context, req)
            else:  # a queued line's start: its text and end were never the client's
                self.router.finished(context, req)
            refused = refused or SendError("internal", "the utterance could not start")
            if refused.code != "busy":  # (busy is not counted as an error, as before)
                self.service.metrics.errors.labels(refused.code).inc()
            event = refused.event if line_id is None else {**refused.event, "id": line_id}
            await self._send_json(tagged(event, context))
            return
        utt = Utterance(req, slot, permit, report_sent="word_timestamps" in action.started_event)
        utt.line_id = line_id
        utt.context_id = context
        utt.channel = self.router.channel_of(context)
        self._utts[context] = utt
        for item in then or ():
            if isinstance(item, QueueSegments):
                utt.sources.extend(item.sources)
                for text in item.texts:
                    utt.queue.put_nowait(text)
            elif isinstance(item, EndOfInput):
                utt.queue.put_nowait(END)
        started = action.started_event
        if slot.degraded:  # admitted on a lighter path (README "Cluster": degradation)
            started = {**started, "degraded": slot.degraded}
        await self._send_json(started)
        if utt.done_sent:  # a line's start, cancelled while started was being sent
            return
        request = UtteranceRequest(
            voice=voice,
            controls=req.controls,
            fmt=req.fmt,
            timestamps=req.timestamps,
            stream_id=req.stream_id,
            word_timestamps=req.word_timestamps,
        )
        utt.task = asyncio.create_task(self._speak(utt, request))

    def _voice_or_refusal(self, voice_id: str) -> Voice | SendError | None:
        """The voice to speak (a clone is read from the registry unless built already)."""
        try:
            return self.service.voice(voice_id)
        except StoreUnavailable as exc:
            return SendError(STORE_UNAVAILABLE, store_unavailable_message(exc))

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
                        if await self._send_bytes(utt.frame(item.data)):
                            utt.sent_samples += item.samples
                            self._playout.sent(self._played_s(utt, item), time.monotonic())
                        self._last_activity = time.monotonic()
                    elif item.body.get("type") == "words":
                        await self._send_json(utt.tag(utt.place_words(item.body)))
                    else:
                        await self._send_json(utt.tag(item.body))
                    if self._stalled:
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

    @staticmethod
    def _played_s(utt: Utterance, packet: Packet) -> float:
        """How long a listener plays ``packet``: an Opus packet its whole frame (the last
        one's padding too), PCM its samples."""
        if utt.req.fmt.codec == "opus":
            return FRAME_MS / 1000.0
        return len(packet.data) / 2 / utt.req.fmt.sample_rate

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
        done = utt.tag(done)
        if self._stalled:
            self._unsent_done = done  # follows the slow_reader error, if the client reads again
        else:
            await self._send_json(done)
        self._last_activity = time.monotonic()
        if self.drain.draining:  # finished during a drain: the loop shuts this connection
            self._request_stop(SHUTTING_DOWN)
        self._lines_wake.set()  # the next line, if any, may start

    # -- lines (danmaku queue) ----------------------------------------------------------
    def _line_queue(self) -> LineQueue:
        """This connection's line queue, made at its first ``line`` or ``clear``."""
        if self._lines is None:
            settings = self.service.settings
            self._lines = LineQueue(
                max_lines=max(1, settings.line_queue_max),
                max_speed=max(1.0, settings.line_queue_max_speed),
                lead_s=max(0.0, settings.line_pace_lead_ms) / 1000.0,
                hear_delay_s=max(0.0, settings.line_hear_delay_ms) / 1000.0,
                playout=self._playout,
            )
        return self._lines

    async def _enqueue_line(self, action: EnqueueLine, context: str | None = None) -> None:
        queue = self._line_queue()
        now = time.monotonic()
        line = Line(action.id, action.text, action.priority, action.ttl_s, fields=action.fields)
        if context is not None:  # a v1.1 line: spoken as that context
            line = Line(line.id, line.text, line.priority, line.ttl_s,
                        fields={**line.fields, "context_id": context})  # fmt: skip
        await self._report_lines(queue.push(line, now))
        if self._lines_task is None:
            self._lines_task = asyncio.create_task(self._run_lines(queue))
        self._lines_wake.set()

    async def _report_lines(self, dropped: list[Dropped]) -> None:
        """``line_dropped`` for each line dropped, then the ``queue`` status."""
        for gone in dropped:
            context = gone.line.fields.get("context_id")
            await self._send_json(tagged(gone.event, context if isinstance(context, str) else None))
        if self._lines is not None:
            await self._send_json(self._lines.status(time.monotonic()))

    def _line_may_start(self) -> bool:
        return (
            not self._utts
            and self.router.idle
            and not self._shutting
            and not self._stalled
            and not self._stop.done()
            and not self.drain.draining
        )

    async def _run_lines(self, queue: LineQueue) -> None:
        """Report expiries when they fall due; start the next line whenever idle and paced
        (woken when an utterance ends, a line or clear arrives, an expiry falls due, or the
        listener's clock comes within the lead)."""
        while True:
            self._lines_wake.clear()
            try:
                await self._step_lines(queue)
            except Exception:  # a bug must not stop the queue (nor take the connection down)
                log.exception("line queue step failed")
            # (Ready time included even when already past: it may pass between the pop that
            # found the listener too far ahead and now; the next step then starts the line.)
            due = queue.wake_at(may_start=self._line_may_start())
            timeout = None if due is None else max(0.001, due - time.monotonic())
            try:
                async with asyncio.timeout(timeout):
                    await self._lines_wake.wait()
            except TimeoutError:
                pass

    async def _step_lines(self, queue: LineQueue) -> None:
        now = time.monotonic()
        expired = queue.expire(now)
        if expired:
            await self._report_lines(expired)
        if not self._line_may_start() or not len(queue):
            return
        line, dropped = queue.pop(time.monotonic())
        if line is None:  # none left, or the listener is more than the lead ahead
            if dropped:
                await self._report_lines(dropped)
            return
        # Synchronous up to _begin's first await: the protocol leaves idle before a client
        # message can be handled.
        routed = self.router.start_line(line.id, line.text, line.fields, queue.speed())
        context = routed[0].context
        first, rest = routed[0].action, [r.action for r in routed[1:]]
        if isinstance(first, BeginUtterance):
            await self._begin(first, context, line.id, rest)
        else:  # refused before anything changed (e.g. its voice was deleted meanwhile)
            if isinstance(first, SendError):
                self.service.metrics.errors.labels(first.code).inc()
                await self._send_json(tagged({**first.event, "id": line.id}, context))
        for action in rest:
            if isinstance(action, SendError):
                await self._apply(action, context)
        await self._report_lines(dropped)

    async def _stop_lines(self) -> None:
        task, self._lines_task = self._lines_task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

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
        await self._send(text=json.dumps(body, ensure_ascii=False), timeout=timeout)

    async def _send_bytes(self, data: bytes) -> bool:
        """One audio frame, from an utterance's task. With nothing queued before it, no timer
        of its own: :meth:`_watch_frames` bounds the wait (and cancels the task)."""
        task = asyncio.current_task()
        if self._send_lock.locked() or task is None:
            return await self._send(data=data)
        if not self._sendable():
            return False
        self._frame_send = (task, time.monotonic())
        try:
            async with self._send_lock:
                await self.ws.send_bytes(data)
            return True
        except (WebSocketDisconnect, RuntimeError, OSError):
            log.debug("send after disconnect dropped")
            return False
        finally:
            self._frame_send = None

    def _sendable(self) -> bool:
        """The connection is up on both sides and not cut as a slow reader."""
        return (
            not self._stalled
            and self.ws.client_state == WebSocketState.CONNECTED
            and self.ws.application_state == WebSocketState.CONNECTED
        )

    async def _watch_frames(self) -> None:
        """Cut the utterance whose audio frame waits longer than ``slow_reader_timeout_s``
        for a client that does not read (as :meth:`_send`'s timeout does for other sends)."""
        limit = self.service.settings.slow_reader_timeout_s
        while True:
            await asyncio.sleep(max(limit / 4, 0.05))  # never a busy loop, whatever the setting
            pending = self._frame_send
            if pending is not None and time.monotonic() - pending[1] >= limit:
                log.info("client stopped reading for %.1f s; cutting its stream", limit)
                self._stalled = True
                self._request_stop(SLOW_READER)
                pending[0].cancel()

    async def _send(
        self, *, text: str | None = None, data: bytes | None = None, timeout: float | None = None
    ) -> bool:
        """One frame; waits at most ``slow_reader_timeout_s`` for a client that does not read,
        then marks the connection stalled (later sends are dropped; the loop ends it).
        True when the frame was handed to the connection."""
        if not self._sendable():
            return False
        limit = self.service.settings.slow_reader_timeout_s if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                async with self._send_lock:
                    if text is not None:
                        await self.ws.send_text(text)
                    else:
                        await self.ws.send_bytes(data or b"")
            return True
        except TimeoutError:
            if timeout is None:
                log.info("client stopped reading for %.1f s; cutting its stream", limit)
                self._stalled = True
                self._request_stop(SLOW_READER)
        except (WebSocketDisconnect, RuntimeError, OSError):
            log.debug("send after disconnect dropped")
        return False


async def stream_endpoint(ws: WebSocket) -> None:
    state = ws.app.state
    service: SpeechService = state.service
    limits = getattr(state, "limits", None)
    await StreamConnection(ws, service, limits=limits, drain=getattr(state, "drain", None)).run()
