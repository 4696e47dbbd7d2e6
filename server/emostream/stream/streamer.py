"""One utterance, streamed: segments in, audio packets and events out.

:func:`stream_utterance` is an async generator. It takes segments (already split by
the text front-end) from an async iterator, runs the acoustic stage and the chunked
decoder through a :class:`~emostream.engine.runner.Runner`, and yields
:class:`Packet` and :class:`Event` items in order. Cancelling the consuming task
stops it at the next await; nothing keeps running for a cancelled stream except a
model call already in flight, whose result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.codec.packetizer import OutputFormat, Packetizer
from emostream.engine.chunks import ChunkSchedule, bucketed_schedule, pad_side, trim_output
from emostream.engine.runner import Bucketed, Runner
from emostream.engine.scheduling.scheduler import REFILL_AHEAD_S
from emostream.stream.mouth import MouthTrack, mouth_event
from emostream.text.context import spoken_text
from emostream.text.languages import segment_language
from emostream.text.pron.wire import display_text
from emostream.voices.base import (
    Controls,
    Latent,
    LevelledVoice,
    PiecedVoice,
    Voice,
    WordTimedVoice,
    join_latents,
)
from emostream.voices.effort import apply_gain
from emostream.voices.words import WordUnits

# A segment this short (characters) goes to the acoustic stage whole, without asking the voice
# for its pieces (a thread hop and a G2P before the first audio); longer ones are made piece by
# piece, each piece a model call of its own (voices.base.PiecedVoice): a 300-character segment
# of digits was one call of 3-10 s, holding a model thread from other streams (and from a
# drain) all that time. 40 characters of seven-digit numbers are 386 units read out (af_heart;
# Piper ~770 ids), under the bounds; the voice itself still cuts whatever comes to it whole.
ALONE_CHARS = 40

# A look-ahead acoustic call (segment k+1) is due this long before the listener could run
# out of the audio of segments 0..k: shorter leads left late chunks at saturation, a longer
# one was the old rule again in bursts (simulated with bench/engine_sim.py --lookahead-due
# planned: docs/measurements.md, "Engine scheduler and loop"). The call's need_by (Runner) is the run-out itself: arriving within the lead is
# not an underrun, so the engine does not count it late (nor refuses admission for it).
LOOKAHEAD_LEAD_S = 1.0


@dataclass
class Packet:
    data: bytes
    samples: int = 0  # audio samples it carries at the output rate (final padding excluded)


@dataclass
class Event:
    body: dict[str, Any]


@dataclass
class UtteranceStats:
    started_at: float = 0.0  # monotonic time the first segment became available
    first_audio_at: float | None = None
    audio_samples: int = 0  # at the output rate
    compute_s: float = 0.0
    segments: int = 0
    cached: bool = False  # replayed from the phrase cache (engine.phrase_replay)
    truncated: bool = False  # the audio reached the utterance's cap and was cut there

    def as_done(self, sample_rate: int, *, cancelled: bool) -> dict[str, Any]:
        audio_ms = 1000.0 * self.audio_samples / sample_rate
        first = (
            None
            if self.first_audio_at is None
            else round(1000.0 * (self.first_audio_at - self.started_at), 1)
        )
        done: dict[str, Any] = {
            "type": "done",
            "audio_ms": round(audio_ms, 1),
            "first_audio_ms": first,
            "rtf": round(self.compute_s / (audio_ms / 1000.0), 4) if audio_ms else None,
            "cancelled": cancelled,
            "segments": self.segments,
        }
        if self.cached:
            done["cached"] = True
        if self.truncated:
            done["truncated"] = True
        return done


@dataclass
class UtteranceRequest:
    """``voices``: a voice per language (``{"en": ..., "zh": ...}``: every language of
    :data:`~emostream.text.languages.LANGUAGES`, as :func:`emostream.voices.per_language.resolve`
    gives them), each segment spoken by its language's (:meth:`voice_for`), and each
    ``segment`` event saying which voice and language; empty: ``voice`` speaks every segment.
    The voices of one utterance share a sample rate."""

    voice: Voice
    controls: Controls = field(default_factory=Controls)
    fmt: OutputFormat = field(default_factory=OutputFormat)
    timestamps: bool = False
    stream_id: str = ""
    word_timestamps: bool = False  # ``words`` events, when the voice can time words
    mouth: bool = False  # ``mouth`` events: a mouth shape per 20 ms frame (stream.mouth)
    voices: Mapping[str, Voice] = field(default_factory=dict)

    def voice_for(self, segment: str) -> tuple[Voice, str | None]:
        """The voice that speaks ``segment`` (wired) and its language (None without
        ``voices``)."""
        if not self.voices:
            return self.voice, None
        language = segment_language(segment)
        return self.voices.get(language, self.voice), language

    def check_rates(self) -> None:
        """Raise ValueError when the voices do not share one sample rate."""
        rates = {v.info.sample_rate for v in (self.voice, *self.voices.values())}
        if len(rates) > 1:
            raise ValueError(f"the voices of one utterance must share a sample rate: {rates}")


def unit_timestamps(
    latent: Latent, *, hop: int, sample_rate: int, offset_ms: float
) -> list[dict[str, Any]]:
    """Per-unit start/end times (ms, utterance clock). Padding units (``_``, ``^``, ``$``)
    are merged into the unit before them."""
    out: list[dict[str, Any]] = []
    frame_ms = 1000.0 * hop / sample_rate
    pos = 0
    for label, n in zip(latent.units, latent.unit_frames.tolist()):
        start, pos = pos, pos + int(n)
        if label in ("_", "^", "$", " ") and out:
            out[-1]["end_ms"] = round(offset_ms + pos * frame_ms, 1)
            continue
        if label in ("_", "^", "$"):
            continue
        out.append(
            {
                "unit": label,
                "start_ms": round(offset_ms + start * frame_ms, 1),
                "end_ms": round(offset_ms + pos * frame_ms, 1),
            }
        )
    return out


def word_timestamps(
    words: list[WordUnits],
    latent: Latent,
    *,
    hop: int,
    in_rate: int,
    out_rate: int,
    offset: int,
) -> list[dict[str, Any]]:
    """Start/end of each word on the stream's audio timeline, exact to the output sample.

    ``offset``: the segment's first sample at the voice's rate (every sample of the segments
    before it, silences included); a unit boundary ``f`` frames into the segment is input sample
    ``offset + f * hop``, output sample ``round((offset + f * hop) * out_rate / in_rate)`` (the
    resampler keeps time). Character offsets are into the segment's text."""
    n = len(latent.units)
    frames = latent.unit_frames.tolist()[:n]
    bounds = [0]
    for f in frames:
        bounds.append(min(latent.num_frames, bounds[-1] + int(f)))
    bounds += [bounds[-1]] * (n + 1 - len(bounds))

    def sample(unit: int) -> int:
        return ((offset + bounds[unit] * hop) * out_rate + in_rate // 2) // in_rate

    out: list[dict[str, Any]] = []
    for w in words:
        start, end = sample(min(w.lo, n)), sample(min(w.hi, n))
        out.append(
            {
                "word": w.word.text,
                "char_start": w.word.start,
                "char_end": w.word.end,
                "start_ms": round(1000.0 * start / out_rate, 3),
                "end_ms": round(1000.0 * end / out_rate, 3),
                "start_sample": start,
                "end_sample": end,
            }
        )
    return out


# A segment ready to decode: its spoken text, latent, words, and the voice and language that
# speak it (the language None without a voice per language).
Ahead = tuple[str, Latent, list[WordUnits] | None, Voice, str | None]


async def _acoustic_ahead(
    request: UtteranceRequest,
    segments: AsyncIterator[str],
    runner: Runner,
    stats: UtteranceStats,
    clock: Callable[[], float],
    out: asyncio.Queue[Ahead | BaseException | None],
    go_ahead: asyncio.Event,
) -> None:
    """Run the acoustic stage one segment ahead of the decoder (queue of size 1).

    After the first segment it waits for ``go_ahead``: the consumer sets it once the
    listener has audio buffered (or the current segment is fully decoded), so the
    look-ahead never competes with the chunks a starving listener is waiting for.
    """
    try:
        first = True
        planned_s = 0.0  # audio of the segments already made: the listener has that much
        async for text in segments:
            voice, language = request.voice_for(text)
            if first:
                if not stats.started_at:  # else set by a caller that held the segment
                    stats.started_at = clock()
                first = False
            else:
                await go_ahead.wait()
            t0 = clock()
            due = _lookahead_deadline(stats, request.fmt.sample_rate, planned_s, t0)
            need_by = _lookahead_run_out(stats, request.fmt.sample_rate, planned_s, t0)
            pieces = [text]
            if isinstance(voice, PiecedVoice) and len(text) > ALONE_CHARS:
                # Off the event loop: G2P of the segment (~2 ms for 300 characters).
                pieces = await asyncio.to_thread(voice.pieces, text, request.controls) or [text]
            latent = join_latents(
                [await runner.acoustic(voice, piece, request.controls, deadline=due,
                                       need_by=need_by) for piece in pieces]
            )  # fmt: skip
            planned_s += latent.num_frames * voice.hop_length / voice.info.sample_rate
            words = None
            spoken = spoken_text(text)  # without the context it was rendered with, if any
            if request.word_timestamps and isinstance(voice, WordTimedVoice):
                # Off the event loop: G2P of the words not yet cached (~0.2 ms a word).
                words = await asyncio.to_thread(voice.word_units, spoken, latent)
            stats.compute_s += clock() - t0
            # overrides: as written
            await out.put((display_text(spoken), latent, words, voice, language))
        await out.put(None)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, which re-raises it
        await out.put(exc)


async def stream_utterance(
    request: UtteranceRequest,
    segments: AsyncIterator[str],
    runner: Runner,
    *,
    schedule: ChunkSchedule | None = None,
    stats: UtteranceStats | None = None,
    clock: Callable[[], float] = time.monotonic,
    max_audio_s: float = 0.0,
) -> AsyncIterator[Packet | Event]:
    """Yield packets and ``segment``/``timestamps``/``words`` events for every segment in
    order; a segment's events come before its audio.

    The acoustic stage of segment k+1 runs while segment k is being decoded, so the
    next segment's audio is ready when the current one ends.

    ``max_audio_s`` (> 0): the utterance's audio stops there (the chunk that passes it is
    cut, the stream finished cleanly, no later segment begun; ``stats.truncated`` set).

    With a voice per language (``request.voices``) each segment is made and decoded by its
    language's voice (``schedule``, when given, serves them all).
    """
    request.check_rates()
    voice = request.voice
    schedules: dict[int, ChunkSchedule] = {}

    def schedule_for(v: Voice) -> ChunkSchedule:
        if schedule is not None:
            return schedule
        if id(v) not in schedules:
            # A runner that pads windows to buckets gets windows filling them (same device
            # time), and later chunks planned as wide as its largest bucket holds: a batched
            # GPU call costs little more for a wider row, and every window is one more call.
            buckets = tuple(runner.decode_buckets(v)) if isinstance(runner, Bucketed) else ()
            schedules[id(v)] = bucketed_schedule(v.context_frames, buckets)
        return schedules[id(v)]

    stats = stats if stats is not None else UtteranceStats()
    packetizer = Packetizer(request.fmt, in_rate=voice.info.sample_rate)
    out_rate = request.fmt.sample_rate
    ahead: asyncio.Queue[Ahead | BaseException | None] = asyncio.Queue(maxsize=1)
    go_ahead = asyncio.Event()
    producer = asyncio.create_task(
        _acoustic_ahead(request, segments, runner, stats, clock, ahead, go_ahead)
    )
    frame = request.fmt.frame_samples
    packets = 0  # sent so far, for the real samples in the final (padded) ones
    in_samples = 0  # at the voice's rate: where the next segment starts
    cap = AudioCap(max_audio_s, voice.info.sample_rate)
    mouth = MouthTrack(voice.info.sample_rate) if request.mouth else None
    # the voice's loudness for this request (vocal effort: voices.effort), on every chunk
    gain = voice.output_gain(request.controls) if isinstance(voice, LevelledVoice) else 1.0
    try:
        index = 0
        while not stats.truncated:
            go_ahead.set()  # waiting for the next segment: let the look-ahead run
            item = await ahead.get()
            if item is None:
                break
            go_ahead.clear()
            if isinstance(item, BaseException):
                raise item
            text, latent, words, seg_voice, language = item
            hop = seg_voice.hop_length
            seg_offset_ms = 1000.0 * packetizer.samples_out / out_rate
            event: dict[str, Any] = {
                "type": "segment",
                "index": index,
                "text": text,
                "start_ms": round(seg_offset_ms, 1),
            }
            if language is not None:
                event.update(voice=seg_voice.info.id, language=language)
            yield Event(event)
            if request.timestamps and latent.units:
                yield Event(
                    {
                        "type": "timestamps",
                        "index": index,
                        "units": unit_timestamps(
                            latent,
                            hop=hop,
                            sample_rate=seg_voice.info.sample_rate,
                            offset_ms=seg_offset_ms,
                        ),
                    }
                )
            if words is not None:
                yield Event(
                    {
                        "type": "words",
                        "index": index,
                        "words": word_timestamps(
                            words,
                            latent,
                            hop=hop,
                            in_rate=seg_voice.info.sample_rate,
                            out_rate=out_rate,
                            offset=in_samples,
                        ),
                    }
                )
            if mouth is not None:
                mouth.add_units(latent.units, latent.unit_frames.tolist(), hop=hop,
                                offset=in_samples)  # fmt: skip
            in_samples += latent.num_frames * hop
            index += 1
            stats.segments = index
            if latent.num_frames == 0:
                continue
            short_first = _listener_starving(stats, out_rate, clock())
            frames, before, after = with_context(latent)
            windows = schedule_for(seg_voice).windows(latent.num_frames, first=short_first,
                                                      before=before, after=after)  # fmt: skip
            for window in windows:
                t0 = clock()
                audio = await runner.decode(
                    seg_voice,
                    frames[:, window.lo : window.hi],
                    stream_id=request.stream_id,
                    pad_side=pad_side(window, frames.shape[-1]),
                    deadline=_listener_deadline(stats, out_rate, clock()),
                )
                stats.compute_s += clock() - t0
                chunk = cap.take(apply_gain(trim_output(window, audio, hop), gain))
                stats.truncated = cap.reached
                if mouth is not None and (shapes := mouth.push(chunk)):
                    yield Event(mouth_event(shapes, mouth.frames_out - len(shapes)))
                # Before the first packet, the first 0.1 s goes out packet by packet as each
                # is encoded (Packetizer.push_first); the rest and later chunks in one call.
                waiting = stats.first_audio_at is None
                for data in packetizer.push_first(chunk) if waiting else packetizer.push(chunk):
                    if stats.first_audio_at is None:
                        stats.first_audio_at = clock()
                    packets += 1
                    yield Packet(data, frame)
                stats.audio_samples = packetizer.samples_out
                if stats.truncated:
                    break
                if not _listener_starving(stats, out_rate, clock()):
                    go_ahead.set()
        if mouth is not None and (shapes := mouth.finish()):
            yield Event(mouth_event(shapes, mouth.frames_out - len(shapes)))
        for data in packetizer.finish():
            if stats.first_audio_at is None:
                stats.first_audio_at = clock()
            real = max(0, min(frame, packetizer.samples_out - packets * frame))
            packets += 1
            yield Packet(data, real)
        stats.audio_samples = packetizer.samples_out
    finally:
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer


def with_context(latent: Latent) -> tuple[npt.NDArray[np.float32], int, int]:
    """The frames to decode a segment from: its own with the context frames its voice rendered
    around it (``Latent.before``/``after``; a segment cut between two words), and how many
    of each."""
    parts = [p for p in (latent.before, latent.frames, latent.after) if p is not None]
    if len(parts) == 1:
        return latent.frames, 0, 0
    n_before = 0 if latent.before is None else int(latent.before.shape[-1])
    n_after = 0 if latent.after is None else int(latent.after.shape[-1])
    return np.ascontiguousarray(np.concatenate(parts, axis=-1)), n_before, n_after


class AudioCap:
    """An utterance's audio bound (sans-I/O): :meth:`take` passes chunks (at the voice's
    rate) through until ``max_s`` of audio went by, cuts the one that passes it, and from
    then on passes nothing (``reached``). ``max_s`` <= 0: no bound."""

    def __init__(self, max_s: float, sample_rate: int) -> None:
        self.left = round(max_s * sample_rate) if max_s > 0 else -1
        self.reached = False

    def take(self, chunk: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if self.left < 0:
            return chunk
        if len(chunk) <= self.left:
            self.left -= len(chunk)
            return chunk
        self.reached = True
        chunk, self.left = chunk[: self.left], 0
        return chunk


def _listener_deadline(stats: UtteranceStats, out_rate: int, now: float) -> float:
    """When the listener runs out of audio (now, before the first packet)."""
    if stats.first_audio_at is None:
        return now
    return stats.first_audio_at + stats.audio_samples / out_rate


def _lookahead_deadline(
    stats: UtteranceStats, out_rate: int, planned_s: float, now: float
) -> float:
    """When a segment's acoustic call is due: the first segment's at once; a later one's
    :data:`LOOKAHEAD_LEAD_S` before the listener could run out of the earlier segments'
    audio (``planned_s``, from the first audio or, before it, from now), not of the audio
    sent so far. The sent-audio rule made every reply's second call urgent (it leaves before
    the first packet), and those calls went ahead of the windows listeners were waiting for
    (measured, and this rule simulated: docs/measurements.md, "Engine scheduler and
    loop")."""
    run_out = _lookahead_run_out(stats, out_rate, planned_s, now)
    return run_out if planned_s <= 0.0 else max(now, run_out - LOOKAHEAD_LEAD_S)


def _lookahead_run_out(stats: UtteranceStats, out_rate: int, planned_s: float, now: float) -> float:
    """When the listener could run out of the earlier segments' audio (``planned_s``, from
    the first audio or, before it, from now): a segment's acoustic call's ``need_by``
    (:class:`~emostream.engine.runner.Runner`), :data:`LOOKAHEAD_LEAD_S` after its due
    unless that was clamped to now. The first segment's: when the listener runs out (now,
    before the first packet), as its due."""
    if planned_s <= 0.0:
        return _listener_deadline(stats, out_rate, now)
    start = now if stats.first_audio_at is None else stats.first_audio_at
    return start + planned_s


def _listener_starving(stats: UtteranceStats, out_rate: int, now: float) -> bool:
    """True when the client has (about) nothing buffered: start with a short chunk."""
    if stats.first_audio_at is None:
        return True
    played = now - stats.first_audio_at
    return stats.audio_samples / out_rate - played < REFILL_AHEAD_S
