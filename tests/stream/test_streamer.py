"""The streamer's windows: filled to the buckets of a runner that pads (the engine path)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import numpy.typing as npt

from emostream.codec.packetizer import OutputFormat
from emostream.engine.chunks import PadSide
from emostream.engine.runner import Bucketed
from emostream.stream.streamer import Packet, UtteranceRequest, UtteranceStats, stream_utterance
from emostream.voices.base import Controls, Latent, Voice, VoiceInfo

HOP = 256
FRAMES = 344  # 4 s of audio


class _Voice:
    info = VoiceInfo("t", "t", "en", 22050, ())
    hop_length = HOP
    context_frames = 14


class _Runner:
    """Records the windows it is asked to decode; pads to ``buckets`` when given."""

    def __init__(self) -> None:
        self.windows: list[int] = []
        self.window_needs: list[tuple[float | None, float | None]] = []  # (deadline, need_by)

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        return Latent(np.zeros((80, FRAMES), np.float32))

    async def decode(
        self,
        voice: Voice,
        frames: npt.NDArray[np.float32],
        *,
        stream_id: str,
        pad_side: PadSide = "right",
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> npt.NDArray[np.float32]:
        self.windows.append(int(frames.shape[1]))
        self.window_needs.append((deadline, need_by))
        return np.zeros(frames.shape[1] * HOP, np.float32)

    def cancel(self, stream_id: str) -> None: ...

    def close(self) -> None: ...


class _Padding(_Runner):
    def decode_buckets(self, voice: Voice) -> tuple[int, ...]:
        return (32, 96)


async def _windows(runner: _Runner) -> tuple[list[int], int]:
    async def one() -> AsyncIterator[str]:
        yield "hello"

    voice: Voice = _Voice()  # type: ignore[assignment]
    request = UtteranceRequest(voice=voice, fmt=OutputFormat(codec="pcm_s16le"))
    items = [i async for i in stream_utterance(request, one(), runner)]
    samples = sum(i.samples for i in items if isinstance(i, Packet))
    return runner.windows, samples


async def test_windows_fill_the_buckets_of_a_padding_runner() -> None:
    assert isinstance(_Padding(), Bucketed) and not isinstance(_Runner(), Bucketed)
    planned, audio = await _windows(_Runner())
    assert planned == [28, 49, 59, 74, 76, 76, 76, 76, 54]  # 14, 21, 31, 46, 48 ... frames
    filled, filled_audio = await _windows(_Padding())
    assert filled == [32, 96, 96, 96, 96, 68]  # 18, 68, 68, 68, 68, 54 frames
    assert filled_audio == audio  # the same audio, in fewer calls


class _Deadlines(_Runner):
    """Records each acoustic call's deadline (and need_by) against the clock when it was
    made."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.clock = clock
        self.calls: list[tuple[float, float | None]] = []
        self.needs: list[float | None] = []

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        self.calls.append((self.clock[0], deadline))
        self.needs.append(need_by)
        self.clock[0] += 0.01  # each call takes 10 ms
        return await super().acoustic(voice, text, controls, deadline=deadline)


async def _three_segments(stats: UtteranceStats) -> _Deadlines:
    """A reply of three segments streamed on a still clock; its runner's calls."""
    now = [100.0]

    async def three() -> AsyncIterator[str]:
        for text in ("one.", "two.", "three."):
            yield text

    runner = _Deadlines(now)
    voice: Voice = _Voice()  # type: ignore[assignment]
    request = UtteranceRequest(voice=voice, fmt=OutputFormat(codec="pcm_s16le"))
    items = [i async for i in stream_utterance(request, three(), runner, stats=stats,
                                               clock=lambda: now[0])]  # fmt: skip
    assert sum(i.samples for i in items if isinstance(i, Packet)) > 0
    return runner


async def test_lookahead_calls_are_due_before_the_planned_audio_runs_out() -> None:
    """A reply's first acoustic call is due at once; the next one when the listener could
    run out of the first segment's 4 s (less the lead), not at once because no audio was
    sent yet (the sent-audio rule made 94 % of a GPU run's acoustic calls urgent)."""
    from emostream.stream.streamer import LOOKAHEAD_LEAD_S

    stats = UtteranceStats()
    runner = await _three_segments(stats)
    seg_s = FRAMES * HOP / 22050
    (t0, d0), (t1, d1), (_t2, d2) = runner.calls
    assert d0 == t0  # the first: at once
    start = stats.first_audio_at if stats.first_audio_at is not None else t1
    assert d1 is not None and d2 is not None
    assert d1 >= t1 + 1.0  # not urgent: about 4 s of audio ahead
    assert abs(d1 - max(t1, min(start, t1) + seg_s - LOOKAHEAD_LEAD_S)) < 0.05
    assert d2 > d1 + seg_s - 0.1  # two segments planned


async def test_lookahead_calls_are_needed_by_the_run_out_not_the_due() -> None:
    """A later segment's acoustic call is due LOOKAHEAD_LEAD_S before the listener could run
    out, but only late (the engine's count, which admission refuses on) after the run-out
    itself: it goes with need_by = due + lead. The first call and the vocoder windows are
    needed when due (need_by none: the due)."""
    from emostream.stream.streamer import LOOKAHEAD_LEAD_S

    runner = await _three_segments(UtteranceStats())
    (t0, d0), (t1, d1), (t2, d2) = runner.calls
    n0, n1, n2 = runner.needs
    assert d0 == t0 and n0 == d0  # the first: at once, needed at once
    for t, d, n in ((t1, d1, n1), (t2, d2, n2)):
        assert d is not None and n is not None
        assert d > t  # not clamped to now: about 4 s of audio ahead
        assert abs(n - (d + LOOKAHEAD_LEAD_S)) < 1e-9
    assert runner.window_needs and all(n is None for _, n in runner.window_needs)


def test_a_clamped_lookahead_due_keeps_the_run_out_as_need_by() -> None:
    """Less than the lead left: the call is due at once, still needed only at the run-out."""
    from emostream.stream.streamer import _lookahead_deadline, _lookahead_run_out

    stats = UtteranceStats(first_audio_at=100.0)
    assert _lookahead_deadline(stats, 24000, 0.5, 100.2) == 100.2
    assert _lookahead_run_out(stats, 24000, 0.5, 100.2) == 100.5
    before = UtteranceStats()  # no audio yet: from now
    assert _lookahead_run_out(before, 24000, 3.0, 50.0) == 53.0
    assert _lookahead_run_out(before, 24000, 0.0, 50.0) == 50.0  # the first segment


def test_audio_cap_cuts_the_chunk_that_passes_it() -> None:
    from emostream.stream.streamer import AudioCap

    cap = AudioCap(1.0, 100)  # 100 samples
    assert len(cap.take(np.zeros(60, np.float32))) == 60 and not cap.reached
    assert len(cap.take(np.zeros(40, np.float32))) == 40 and not cap.reached  # exactly at it
    assert len(cap.take(np.zeros(10, np.float32))) == 0 and cap.reached
    cap = AudioCap(1.0, 100)
    assert len(cap.take(np.zeros(150, np.float32))) == 100 and cap.reached
    off = AudioCap(0.0, 100)
    assert len(off.take(np.zeros(10**6, np.float32))) == 10**6 and not off.reached


async def test_an_utterance_stops_at_its_audio_cap() -> None:
    """Three 4 s segments under a 5 s cap: the audio ends at 5 s exactly (the chunk that
    passes it cut, the stream finished cleanly), the third segment is never begun and the
    stats say truncated; done reports it."""

    async def three() -> AsyncIterator[str]:
        for text in ("one.", "two.", "three."):
            yield text

    voice: Voice = _Voice()  # type: ignore[assignment]
    request = UtteranceRequest(voice=voice, fmt=OutputFormat(codec="pcm_s16le", sample_rate=24000))
    stats = UtteranceStats()
    items = [i async for i in stream_utterance(request, three(), _Runner(), stats=stats,
                                               max_audio_s=5.0)]  # fmt: skip
    pcm = b"".join(i.data for i in items if isinstance(i, Packet))
    assert len(pcm) // 2 == stats.audio_samples == 5 * 24000
    segments = [i.body["index"] for i in items if not isinstance(i, Packet)]
    assert segments == [0, 1] and stats.truncated
    done = stats.as_done(24000, cancelled=True)
    assert done["truncated"] is True and done["audio_ms"] == 5000.0
    whole = UtteranceStats()
    items = [i async for i in stream_utterance(request, three(), _Runner(), stats=whole,
                                               max_audio_s=60.0)]  # fmt: skip
    assert not whole.truncated and "truncated" not in whole.as_done(24000, cancelled=False)
    assert whole.audio_samples > 11 * 24000


class _PiecedVoice(_Voice):
    """Cuts a segment into its words (a voice with a model-call bound)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def pieces(self, text: str, controls: Controls) -> list[str]:
        self.asked.append(text)
        return text.split()


class _Texts(_Runner):
    """Records the text of each acoustic call."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def acoustic(
        self,
        voice: Voice,
        text: str,
        controls: Controls,
        *,
        deadline: float | None = None,
        need_by: float | None = None,
    ) -> Latent:
        self.texts.append(text)
        return Latent(np.zeros((80, 10), np.float32), np.array([10]), [text])


async def test_a_long_segment_is_made_piece_by_piece_one_call_each() -> None:
    """Each piece is a model call of its own (cancellable, scheduled among other streams'
    calls); the segment's events and latent are as one: one segment event, the pieces'
    latents joined. A short segment goes whole, without asking for pieces."""
    from emostream.voices.base import PiecedVoice

    long = "alpha beta gamma delta epsilon zeta eta theta iota kappa"  # > ALONE_CHARS

    async def two() -> AsyncIterator[str]:
        yield "Hi there."
        yield long

    voice = _PiecedVoice()
    assert isinstance(voice, PiecedVoice)
    runner = _Texts()
    request = UtteranceRequest(voice=voice, fmt=OutputFormat(codec="pcm_s16le"))  # type: ignore[arg-type]
    request.timestamps = True
    items = [i async for i in stream_utterance(request, two(), runner)]
    assert voice.asked == [long]
    assert runner.texts == ["Hi there.", *long.split()]
    events = [i.body for i in items if not isinstance(i, Packet)]
    assert [e["type"] for e in events] == ["segment", "timestamps", "segment", "timestamps"]
    assert events[2]["text"] == long
    assert [u["unit"] for u in events[3]["units"]] == long.split()
    audio = sum(i.samples for i in items if isinstance(i, Packet))
    assert audio == round(11 * 10 * HOP * 48000 / 22050)  # 1 + 10 latents of 10 frames


async def test_a_segment_rendered_in_context_is_decoded_with_its_context_frames() -> None:
    """Latent.before/after (a segment cut between words): its first and last windows read them,
    and the audio is the segment's own frames only."""
    from emostream.stream.streamer import with_context

    class Context(_Runner):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[npt.NDArray[np.float32]] = []

        async def acoustic(self, voice: Voice, text: str, controls: Controls, *,
                           deadline: float | None = None, need_by: float | None = None
                           ) -> Latent:  # fmt: skip
            frames = np.full((80, FRAMES), 1.0, np.float32)
            return Latent(frames, before=np.full((80, 20), -1.0, np.float32),
                          after=np.full((80, 10), 2.0, np.float32))  # fmt: skip

        async def decode(self, voice: Voice, frames: npt.NDArray[np.float32], **kw: object
                         ) -> npt.NDArray[np.float32]:  # fmt: skip
            self.seen.append(frames)
            return await super().decode(voice, frames, stream_id="")

    runner = Context()
    _, samples = await _windows(runner)
    assert samples == (await _windows(_Runner()))[1]  # the segment's audio, no more
    assert (runner.seen[0][:, 0] == -1.0).all()  # the first window starts in the left context
    assert (runner.seen[-1][:, -1] == 2.0).all()  # the last one ends in the right context
    frames, before, after = with_context(Latent(np.zeros((2, 3), np.float32)))
    assert frames.shape == (2, 3) and before == after == 0


class _Constant(_Runner):
    """Decodes every window to a constant 0.1."""

    async def decode(self, voice: Voice, frames: npt.NDArray[np.float32], *, stream_id: str,
                     pad_side: PadSide = "right", deadline: float | None = None,
                     need_by: float | None = None) -> npt.NDArray[np.float32]:  # fmt: skip
        return np.full(frames.shape[1] * HOP, 0.1, np.float32)


class _Louder(_Voice):
    """A voice whose loudness is a gain on its audio (voices.base.LevelledVoice)."""

    def __init__(self) -> None:
        self.asked: list[Controls] = []

    def output_gain(self, controls: Controls) -> float:
        self.asked.append(controls)
        return 2.0 * controls.energy


async def _level(voice: object, controls: Controls) -> float:
    async def one() -> AsyncIterator[str]:
        yield "hello"

    request = UtteranceRequest(voice=voice, controls=controls,  # type: ignore[arg-type]
                               fmt=OutputFormat(codec="pcm_s16le"))  # fmt: skip
    items = [i async for i in stream_utterance(request, one(), _Constant())]
    pcm = np.frombuffer(b"".join(i.data for i in items if isinstance(i, Packet)), np.int16)
    return float(np.median(pcm)) / 32767.0


async def test_the_voices_gain_reaches_every_chunk() -> None:
    """The streamer applies a LevelledVoice's gain for the request to all of its audio (a
    voice without one is left as decoded); past -3 dBFS the soft limiter bends it."""
    voice = _Louder()
    assert abs(await _level(voice, Controls(energy=1.0)) - 0.2) < 2e-3
    assert voice.asked == [Controls(energy=1.0)]  # once per utterance
    assert abs(await _level(voice, Controls(energy=0.25)) - 0.05) < 2e-3
    assert abs(await _level(_Voice(), Controls(energy=2.0)) - 0.1) < 2e-3
    limited = await _level(voice, Controls(energy=4.0))  # 0.8 asked
    assert 0.708 < limited < 0.8
