"""The refinement state machine, sans I/O: moves, what is kept, what is shown, what is stored."""

from __future__ import annotations

import numpy as np
import pytest

from emostream.voices.cloning.refine_state import (
    TIMBRE_SHAPE,
    Notice,
    RefineBusy,
    Refined,
    RefineRecord,
    RefineState,
    StaleJob,
    begin,
    fail,
    record_fields,
    record_from_fields,
    skip,
    succeed,
    view,
)

STALE = 600.0


def _refined(seed: int = 0, at: float = 100.0) -> Refined:
    timbre = np.random.default_rng(seed).normal(0, 0.3, TIMBRE_SHAPE).astype(np.float32)
    timbre[0] += 1.0  # scales near 1
    summary = {"ge2e_similarity_before": 0.8, "ge2e_similarity_after": 0.84, "seconds": 4.2}
    return Refined(timbre, summary, at, "ab" * 32)


def test_ready_refining_refined() -> None:
    r0 = RefineRecord()
    assert r0.state is RefineState.READY and r0.timbre is None
    r1 = begin(r0, job="j1", now=10.0, stale_after_s=STALE)
    assert r1.state is RefineState.REFINING and r1.job == "j1" and r1.since == 10.0
    done = _refined()
    r2 = succeed(r1, job="j1", refined=done, now=20.0)
    assert r2.state is RefineState.REFINED and r2.refined is done and r2.notice is None
    assert np.array_equal(r2.timbre, done.timbre)  # type: ignore[arg-type]


def test_a_second_begin_is_refused_until_the_first_is_stale() -> None:
    r1 = begin(RefineRecord(), job="j1", now=10.0, stale_after_s=STALE)
    with pytest.raises(RefineBusy):
        begin(r1, job="j2", now=10.0 + STALE - 1, stale_after_s=STALE)
    r2 = begin(r1, job="j2", now=10.0 + STALE + 1, stale_after_s=STALE)  # its server died
    assert r2.job == "j2"
    with pytest.raises(StaleJob):  # the first job, should it come back, settles nothing
        succeed(r2, job="j1", refined=_refined(), now=700.0)


def test_settling_needs_the_job_that_began() -> None:
    for settled in (RefineRecord(), RefineRecord(RefineState.REFINED, refined=_refined())):
        with pytest.raises(StaleJob):
            fail(settled, job="j1", notice=Notice("x", "y"), now=1.0)
    r1 = begin(RefineRecord(), job="j1", now=1.0, stale_after_s=STALE)
    with pytest.raises(StaleJob):
        skip(r1, job="other", notice=Notice("x", "y"), now=2.0)


@pytest.mark.parametrize("move,state", [(fail, RefineState.FAILED), (skip, RefineState.SKIPPED)])
def test_a_failed_or_skipped_attempt_keeps_the_refinement_in_use(move, state) -> None:  # type: ignore[no-untyped-def]
    first = _refined(1)
    r = succeed(begin(RefineRecord(), job="a", now=1, stale_after_s=STALE), job="a",
                refined=first, now=2)  # fmt: skip
    again = begin(r, job="b", now=3, stale_after_s=STALE)
    assert again.refined is first  # still spoken while refining again
    notice = Notice("multiple_speakers", "two people")
    out = move(again, job="b", notice=notice, now=4)
    assert out.state is state and out.notice == notice and out.refined is first
    fresh = succeed(begin(out, job="c", now=5, stale_after_s=STALE), job="c",
                    refined=_refined(2), now=6)  # fmt: skip
    assert fresh.notice is None and fresh.refined is not first


def test_view() -> None:
    ready = RefineRecord()
    assert view(ready, now=0, stale_after_s=STALE) == {"state": "ready", "refinement": None}
    shown = view(ready, now=0, stale_after_s=STALE, unavailable="no acoustic model")
    assert shown["state"] == "refine_unavailable"
    assert shown["warning"] == {"code": "refine_unavailable", "message": "no acoustic model"}
    refining = begin(ready, job="j", now=1000.0, stale_after_s=STALE)
    shown = view(refining, now=1001.0, stale_after_s=STALE, unavailable="off")
    assert shown["state"] == "refining" and shown["refining_since"].startswith("1970-01-01T00:16")
    stale = view(refining, now=1000.0 + STALE + 1, stale_after_s=STALE)
    assert stale["state"] == "refine_failed" and stale["error"]["code"] == "interrupted"
    done = succeed(refining, job="j", refined=_refined(at=86400.0), now=1002.0)
    shown = view(done, now=1003.0, stale_after_s=STALE, unavailable="off")  # still shown refined
    assert shown["state"] == "refined" and "warning" not in shown and "error" not in shown
    assert shown["refinement"]["ge2e_similarity_after"] == 0.84
    assert shown["refinement"]["refined_at"] == "1970-01-02T00:00:00+00:00"
    assert shown["refinement"]["clip_sha256"] == "ab" * 32
    failed = fail(begin(done, job="k", now=1, stale_after_s=STALE), job="k",
                  notice=Notice("timeout", "too slow"), now=2)  # fmt: skip
    shown = view(failed, now=3, stale_after_s=STALE)
    assert shown["state"] == "refine_failed" and shown["error"]["code"] == "timeout"
    assert shown["refinement"] is not None  # the earlier one, still in use
    skipped = skip(begin(ready, job="m", now=1, stale_after_s=STALE), job="m",
                   notice=Notice("multiple_speakers", "two"), now=2)  # fmt: skip
    assert view(skipped, now=3, stale_after_s=STALE)["warning"]["code"] == "multiple_speakers"


def test_fields_round_trip() -> None:
    r = succeed(begin(RefineRecord(), job="j", now=1.5, stale_after_s=STALE), job="j",
                refined=_refined(3), now=2.5)  # fmt: skip
    fields = record_fields(r)
    assert set(fields) == {"refine_state", "refine_since", "refine_job", "refine_notice",
                           "refinement", "timbre"}  # fmt: skip
    as_stored = {k: v.encode() if isinstance(v, str) else v for k, v in fields.items()}
    back = record_from_fields(as_stored)  # Redis gives bytes back
    assert back.state is RefineState.REFINED and back.since == 2.5 and back.job == "j"
    assert back.refined is not None and r.refined is not None
    assert np.array_equal(back.refined.timbre, r.refined.timbre)
    assert back.refined.summary == r.refined.summary and back.refined.at == r.refined.at
    assert record_from_fields({}) == RefineRecord()  # stored before refinement existed
    failed = fail(begin(r, job="k", now=3, stale_after_s=STALE), job="k",
                  notice=Notice("timeout", "t"), now=4)  # fmt: skip
    again = record_from_fields(record_fields(failed))
    assert again.notice == Notice("timeout", "t") and again.refined is not None


def test_a_broken_timbre_is_never_half_used() -> None:
    fields = record_fields(RefineRecord(RefineState.REFINED, since=1, job="j", refined=_refined()))
    broken_ones = (b"\x00" * 12, np.full(TIMBRE_SHAPE, np.nan, "<f4").tobytes(),
                   np.zeros(80, "<f4").tobytes(), None)  # fmt: skip
    for broken in broken_ones:
        back = record_from_fields({**fields, "timbre": broken})
        assert back.refined is None and back.state is RefineState.READY
