"""The refinement queue (Refinements) with a scripted backend: the states a voice goes through,
one job at a time, what a busy, full, failed, skipped or interrupted attempt leaves stored."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import soxr

from emostream.voices.cloning.clip import Clip, ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine import RefineError, Refinement
from emostream.voices.cloning.refine_jobs import Refinements
from emostream.voices.cloning.refine_state import (
    QueueFull,
    RefineBusy,
    RefineState,
    RefineUnavailable,
)
from emostream.voices.cloning.refine_worker import RefineFailure, RefineTask
from emostream.voices.cloning.registry import VoiceRegistry
from tests.voices.voice_fixtures import to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


class Scripted:
    """A backend that answers each task with the next scripted outcome once ``go`` is set."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.tasks: list[RefineTask] = []
        self.running = 0
        self.most_at_once = 0
        self.go = asyncio.Event()
        self.go.set()
        self.closed = False

    async def refine(self, task: RefineTask) -> Refinement:
        self.tasks.append(task)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await self.go.wait()
            outcome = self.outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            assert isinstance(outcome, Refinement)
            return outcome
        finally:
            self.running -= 1

    async def aclose(self) -> None:
        self.closed = True


def refinement(seed: int = 0) -> Refinement:
    offset = np.random.default_rng(seed).normal(0, 0.3, 80)
    timbre = np.stack([np.ones(80), offset]).astype(np.float32)  # [2, 80]: scale, offset
    return Refinement(timbre, 5.0, 1.5, 0.80, 0.85, 8000.0, 2, 3.0)


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


@pytest.fixture(scope="module")
def clip(speech: Speech) -> Clip:
    return ClipIntake()(to_bytes(*speech))


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[VoiceRegistry]:
    reg = VoiceRegistry(tmp_path / "voices.sqlite3")
    yield reg
    reg.close()


def _voice(registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder) -> str:
    return registry.add(name="Me", embedding=encoder.embed_clip(clip), encoder=encoder.version,
                        clip_sha256=clip.sha256, duration_s=clip.duration_s,
                        speech_s=clip.speech_s, clip_audio=clip.audio,
                        source_rate=clip.source_sample_rate).id  # fmt: skip


def _queue(
    registry: VoiceRegistry, backend: Scripted | None, encoder: SpeakerEncoder, **kwargs: object
) -> tuple[Refinements, list[tuple[str, RefineState]]]:
    settled: list[tuple[str, RefineState]] = []
    queue = Refinements(registry, backend, embed_audio=encoder.embed_audio, intake=ClipIntake(),
                        on_settled=lambda vid, state: settled.append((vid, state)),
                        **kwargs)  # type: ignore[arg-type]  # fmt: skip
    return queue, settled


async def _settled(queue: Refinements) -> None:
    for _ in range(500):
        if queue.pending == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the queue did not settle")


async def test_ready_refining_refined(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder
) -> None:
    backend = Scripted(refinement(1))
    backend.go.clear()
    queue, settled = _queue(registry, backend, encoder)
    vid = _voice(registry, clip, encoder)
    assert queue.view(registry.get(vid))["state"] == "ready"  # type: ignore[arg-type]
    voice = await queue.submit(vid, clip=clip)
    assert voice is not None and queue.view(voice)["state"] == "refining"
    with pytest.raises(RefineBusy):  # one attempt at a time per voice: 409, no queueing
        await queue.submit(vid)
    backend.go.set()
    await _settled(queue)
    stored = registry.get(vid)
    assert stored is not None and stored.refine.state is RefineState.REFINED
    shown = queue.view(stored)
    assert shown["state"] == "refined"
    assert shown["refinement"]["ge2e_similarity_after"] == 0.85
    assert shown["refinement"]["clip_sha256"] == clip.sha256
    np.testing.assert_array_equal(stored.timbre, refinement(1).timbre)
    assert settled == [(vid, RefineState.REFINED)]
    task = backend.tasks[0]
    assert task.source_rate == clip.source_sample_rate and task.clip_rate == 16000
    np.testing.assert_array_equal(task.embedding, stored.embedding)
    await queue.aclose()
    assert backend.closed


async def test_one_at_a_time_and_a_bounded_queue(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder
) -> None:
    backend = Scripted(*(refinement(i) for i in range(3)))
    backend.go.clear()
    queue, _ = _queue(registry, backend, encoder, queue_size=2)
    ids = [_voice(registry, clip, encoder) for _ in range(4)]
    await queue.submit(ids[0], clip=clip)
    await queue.submit(ids[1], clip=clip)
    with pytest.raises(QueueFull):
        await queue.submit(ids[2], clip=clip)
    assert registry.get(ids[2]).refine.state is RefineState.READY  # type: ignore[union-attr]
    skipped = await queue.submit(ids[3], clip=clip, when_full="skip")  # a new clone
    assert skipped is not None and skipped.refine.state is RefineState.SKIPPED
    assert queue.view(skipped)["warning"]["code"] == "refine_busy"
    backend.go.set()
    await _settled(queue)
    assert backend.most_at_once == 1
    assert [registry.get(i).refine.state for i in ids[:2]] == [RefineState.REFINED] * 2  # type: ignore[union-attr]
    await queue.aclose()


async def test_a_stored_clip_is_refined_again_and_outcomes_keep_the_refinement(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder
) -> None:
    backend = Scripted(
        refinement(1),
        RefineError("too_little_speech", "the clip holds 1.0 s of clear speech"),
        RefineFailure("timeout", "refinement took over 120 s"),
        RuntimeError("boom"),
    )
    queue, settled = _queue(registry, backend, encoder)
    vid = _voice(registry, clip, encoder)
    await queue.submit(vid)  # no clip: the stored one, read through the intake again
    await _settled(queue)
    first = registry.get(vid)
    assert first is not None and first.refine.state is RefineState.REFINED
    expected = [("refine_skipped", "warning", "too_little_speech"),
                ("refine_failed", "error", "timeout"), ("refine_failed", "error", "internal")]  # fmt: skip
    for state, key, code in expected:
        await queue.submit(vid)
        await _settled(queue)
        voice = registry.get(vid)
        assert voice is not None
        shown = queue.view(voice)
        assert (shown["state"], shown[key]["code"]) == (state, code)
        assert voice.timbre is not None  # the first refinement is still spoken
        np.testing.assert_array_equal(voice.timbre, refinement(1).timbre)
    assert len(backend.tasks) == 4 and settled[0][1] is RefineState.REFINED
    await queue.aclose()


async def test_a_new_clip_replaces_the_old_only_when_refined(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder, other_speech: Speech
) -> None:
    new = ClipIntake()(to_bytes(*other_speech))
    new_emb = encoder.embed_clip(new)
    backend = Scripted(RefineFailure("worker_died", "died"), refinement(2))
    queue, _ = _queue(registry, backend, encoder)
    vid = _voice(registry, clip, encoder)
    before = registry.get(vid)
    assert before is not None
    await queue.submit(vid, clip=new, embedding=new_emb, encoder="ge2e", replace_clip=True)
    await _settled(queue)
    failed = registry.get(vid)
    assert failed is not None and failed.refine.state is RefineState.FAILED
    assert failed.clip_sha256 == clip.sha256  # the old clip and embedding stay
    np.testing.assert_array_equal(failed.embedding, before.embedding)
    await queue.submit(vid, clip=new, embedding=new_emb, encoder="ge2e", replace_clip=True)
    await _settled(queue)
    done = registry.get(vid)
    assert done is not None and done.refine.state is RefineState.REFINED
    assert done.clip_sha256 == new.sha256 and done.source_rate == new.source_sample_rate
    np.testing.assert_array_equal(done.embedding, new_emb)
    np.testing.assert_array_equal(backend.tasks[1].embedding, new_emb)  # fitted to the new one
    stored = registry.get(vid)
    assert stored is not None and queue.view(stored)["refinement"]["clip_sha256"] == new.sha256
    await queue.aclose()


async def test_two_speakers_are_skipped_and_nothing_runs(
    registry: VoiceRegistry, encoder: SpeakerEncoder, speech: Speech, other_speech: Speech
) -> None:
    a, ra = speech
    b, rb = other_speech
    a16 = np.asarray(soxr.resample(a, ra, 16000), np.float32) if ra != 16000 else a
    b16 = np.asarray(soxr.resample(b, rb, 16000), np.float32)
    both = ClipIntake()(to_bytes(np.concatenate([a16[:64000], b16[:64000]]), 16000))
    backend = Scripted()
    queue, settled = _queue(registry, backend, encoder)
    vid = _voice(registry, both, encoder)
    await queue.submit(vid, clip=both)
    await _settled(queue)
    voice = registry.get(vid)
    assert voice is not None and voice.refine.state is RefineState.SKIPPED
    assert queue.view(voice)["warning"]["code"] == "multiple_speakers"
    assert backend.tasks == [] and settled == [(vid, RefineState.SKIPPED)]
    await queue.aclose()


async def test_a_deleted_voice_stays_deleted(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder
) -> None:
    backend = Scripted(refinement())
    backend.go.clear()
    queue, settled = _queue(registry, backend, encoder)
    vid = _voice(registry, clip, encoder)
    await queue.submit(vid, clip=clip)
    while not backend.tasks:
        await asyncio.sleep(0.01)
    registry.delete(vid)
    backend.go.set()
    await _settled(queue)
    assert registry.get(vid) is None and len(registry) == 0 and settled == []
    assert await queue.submit(vid) is None  # unknown voice
    await queue.aclose()


async def test_closing_settles_what_it_holds(
    registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder
) -> None:
    backend = Scripted(refinement())
    backend.go.clear()
    queue, _ = _queue(registry, backend, encoder)
    ids = [_voice(registry, clip, encoder) for _ in range(2)]
    for vid in ids:
        await queue.submit(vid, clip=clip)
    while not backend.tasks:
        await asyncio.sleep(0.01)
    await queue.aclose()  # one running, one queued
    for vid in ids:
        voice = registry.get(vid)
        assert voice is not None and voice.refine.state is RefineState.FAILED
        assert queue.view(voice)["error"]["code"] == "interrupted"
    with pytest.raises(RefineUnavailable):
        await queue.submit(ids[0])


async def test_unavailable(registry: VoiceRegistry, clip: Clip, encoder: SpeakerEncoder) -> None:
    queue, _ = _queue(registry, None, encoder, unavailable="no acoustic model here")
    vid = _voice(registry, clip, encoder)
    assert not queue.available
    with pytest.raises(RefineUnavailable, match="no acoustic model"):
        await queue.submit(vid)
    shown = queue.view(registry.get(vid))  # type: ignore[arg-type]
    assert shown["state"] == "refine_unavailable"
    assert shown["warning"] == {"code": "refine_unavailable", "message": "no acoustic model here"}
