"""Where refinements run: the niced worker process (its own models, killed on a timeout, gone
when idle) and a thread; and that a refinement changes what the clone sounds like."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from emostream.config import Settings
from emostream.networks.mel import mel_spectrogram
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.base import Controls
from emostream.voices.catalog import load_acoustic_family
from emostream.voices.cloning.clip import Clip, ClipIntake
from emostream.voices.cloning.encoder import SpeakerEncoder
from emostream.voices.cloning.refine import TimbreRefiner, band_mask
from emostream.voices.cloning.refine_worker import (
    ProcessBackend,
    RefineFailure,
    RefineTask,
    ThreadBackend,
    refiner_for,
    worker_settings,
)
from tests.voices.voice_fixtures import to_bytes

pytestmark = pytest.mark.slow

Speech = tuple[npt.NDArray[np.float32], int]


@pytest.fixture(scope="module")
def clip(speech: Speech) -> Clip:
    return ClipIntake()(to_bytes(*speech))


@pytest.fixture(scope="module")
def task(clip: Clip) -> RefineTask:
    emb = SpeakerEncoder().embed_clip(clip)
    return RefineTask(emb, clip.audio, clip.sample_rate, clip.source_sample_rate)


@pytest.fixture(scope="module")
def family() -> AcousticFamily:
    loaded = load_acoustic_family(Settings(acoustic="on"))
    assert loaded is not None
    return loaded


def _stat(pid: int, field: int) -> int:
    """Field ``field`` (1-based, proc(5)) of ``/proc/<pid>/stat``: 19 nice, 41 policy."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[field - 3])  # fields[0] is field 3, the state


def _nice(pid: int) -> int:
    return _stat(pid, 19)


async def test_the_worker_process_refines_in_sched_idle_and_goes_when_idle(
    task: RefineTask,
) -> None:
    backend = ProcessBackend(Settings(), nice=10, idle_s=1.0)
    try:
        result = await backend.refine(task)
        pid = backend.pid
        assert pid is not None and pid != os.getpid()
        assert _nice(pid) == min(19, _nice(os.getpid()) + 10)
        assert _stat(pid, 41) == os.SCHED_IDLE
        assert result.timbre.shape == (2, 80) and np.abs(result.timbre[1]).max() > 0.05
        summary = result.summary()
        assert result.spectral_gap_db_after < result.spectral_gap_db_before
        assert summary["ge2e_similarity_before"] is not None  # the worker's own GE2E
        again = await backend.refine(task)  # the same child, warm
        assert backend.pid == pid and backend.started == 1
        np.testing.assert_allclose(again.timbre, result.timbre, atol=1e-4)
        await asyncio.sleep(2.0)
        assert backend.pid is None and not Path(f"/proc/{pid}").exists()  # idle: gone
    finally:
        await backend.aclose()


def test_the_settings_reach_the_worker() -> None:
    config = worker_settings(Settings(clone_match_bandwidth=False, clone_gain=1.1, device="cuda"))
    assert config["clone_match_bandwidth"] is False and config["clone_gain"] == 1.1
    assert config["vocoder"] == "auto"  # a GPU server's worker refines with the CPU's vocoder
    refiner = refiner_for(Settings(**{k: v for k, v in config.items() if k != "vocoder"}),
                          SpeakerEncoder())  # fmt: skip
    assert refiner.match_bandwidth is False and refiner.embed is not None


async def test_a_job_past_its_time_is_killed(task: RefineTask) -> None:
    backend = ProcessBackend(Settings(), timeout_s=0.5)
    with pytest.raises(RefineFailure) as failure:
        await backend.refine(task)
    assert failure.value.code == "timeout" and backend.pid is None
    await backend.aclose()


async def test_a_worker_without_its_model_says_so(task: RefineTask, tmp_path: Path) -> None:
    backend = ProcessBackend(Settings(models_dir=str(tmp_path)))
    with pytest.raises(RefineFailure) as failure:
        await backend.refine(task)
    assert failure.value.code == "refine_unavailable" and "model" in failure.value.message
    await backend.aclose()


async def test_a_refinement_changes_the_voice(family: AcousticFamily, task: RefineTask) -> None:
    """The clone speaks with the fitted timbre: its spectrum moves by the correction (a voice
    that ignored the timbre would sound the same as the zero-shot clone)."""
    backend = ThreadBackend(family, refiner=TimbreRefiner(iterations=1))
    result = await backend.refine(task)
    await backend.aclose()
    text = "Thanks for watching, see you all tomorrow evening."
    plain = family.clone("clone_x", task.embedding, description="x")
    refined = family.clone("clone_x", task.embedding, description="x", timbre=result.timbre)
    a = plain.decode(plain.acoustic(text, Controls()).frames)
    b = refined.decode(refined.acoustic(text, Controls()).frames)
    assert len(a) == len(b)  # the same words and timing: only the timbre differs
    mask = band_mask(result.bandwidth_hz)
    moved = (mel_spectrogram(b) - mel_spectrogram(a)).mean(axis=1)[mask]
    wanted = result.timbre[1][mask]  # the offsets (the scales stay 1 by default)
    assert np.corrcoef(moved, wanted)[0, 1] > 0.8
    assert float(np.abs(moved).max()) > 0.2
