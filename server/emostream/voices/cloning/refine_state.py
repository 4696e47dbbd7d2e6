"""A cloned voice's refinement state: what is stored, the moves between states, what is shown.

A clone is usable at once (zero-shot: the model conditioned on its clip's GE2E vector) and is
then refined in the background against its own clip
(:mod:`emostream.voices.cloning.refine`)::

    ready ──begin──> refining ──succeed──> refined
                        │  └────fail────> refine_failed   (error: code, message)
                        └──────skip─────> refine_skipped  (warning: the clip cannot be refined
                                                           against: two speakers, music, ...)

Any settled state (and ``ready``) may ``begin`` again (``POST /v1/voices/{id}/refine``), and a
``refining`` one that has not settled within ``stale_after_s`` (its server stopped mid-way) may
too; until then a second ``begin`` raises :class:`RefineBusy`. A failed or skipped attempt
keeps the refinement already in use (``refined``): the voice keeps speaking with it.
``refine_unavailable`` is never stored: it is how a ``ready`` voice is shown by a server that
cannot refine (no acoustic model, or ``clone_refine`` off).

Sans-I/O: frozen values and pure functions. The registries store a :class:`RefineRecord` with
the voice (:func:`record_fields` / :func:`record_from_fields`: the same flat fields in SQLite
columns and Redis hash fields) and apply a move inside one transaction, so the timbre, its
figures and the state land together or not at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
TIMBRE_BANDS = 80
TIMBRE_SHAPE = (2, TIMBRE_BANDS)  # per band: log-mel scale, offset (voices.cloning.refine)


class RefineState(StrEnum):
    READY = "ready"
    REFINING = "refining"
    REFINED = "refined"
    FAILED = "refine_failed"
    SKIPPED = "refine_skipped"
    UNAVAILABLE = "refine_unavailable"  # shown, never stored


class RefineBusy(Exception):
    """A refinement of this voice is already queued or running."""


class RefineUnavailable(Exception):
    """This server cannot refine (the message says why)."""


class QueueFull(Exception):
    """The server's refinement queue is full (``clone_refine_queue``)."""


class StaleJob(Exception):
    """A job settling a voice that another job has begun since (or that was never begun)."""


@dataclass(frozen=True)
class Notice:
    """The error (``refine_failed``) or warning (``refine_skipped``) of the latest attempt."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Refined:
    """The refinement a voice speaks with: its ``timbre`` (``[2, 80]``: log-mel scale and
    offset per band) and the refiner's figures (``summary``: :meth:`Refinement.summary`), made at ``at`` (unix s)
    against the clip whose upload hashed to ``clip_sha256``."""

    timbre: FloatArray
    summary: dict[str, Any]
    at: float
    clip_sha256: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary, "refined_at": _iso(self.at), "clip_sha256": self.clip_sha256}


@dataclass(frozen=True)
class RefineRecord:
    """What is stored of a voice's refinement. ``since``: when ``state`` was entered;
    ``job``: the token of the attempt in progress or last settled (a settle must name it)."""

    state: RefineState = RefineState.READY
    since: float | None = None
    job: str | None = None
    notice: Notice | None = None
    refined: Refined | None = None

    @property
    def timbre(self) -> FloatArray | None:
        return None if self.refined is None else self.refined.timbre


def is_stale(record: RefineRecord, *, now: float, stale_after_s: float) -> bool:
    """A ``refining`` record its server has not settled in time (it stopped)."""
    return (
        record.state is RefineState.REFINING
        and record.since is not None
        and now - record.since > stale_after_s
    )


# -- moves --------------------------------------------------------------------------------


def begin(record: RefineRecord, *, job: str, now: float, stale_after_s: float) -> RefineRecord:
    """Queue an attempt named ``job``. Raises :class:`RefineBusy` while another is live."""
    if record.state is RefineState.REFINING and not is_stale(
        record, now=now, stale_after_s=stale_after_s
    ):
        raise RefineBusy("a refinement of this voice is already queued or running")
    return replace(record, state=RefineState.REFINING, since=now, job=job, notice=None)


def _settling(record: RefineRecord, job: str) -> None:
    if record.state is not RefineState.REFINING or record.job != job:
        raise StaleJob(f"job {job} no longer owns this voice's refinement")


def succeed(record: RefineRecord, *, job: str, refined: Refined, now: float) -> RefineRecord:
    """The attempt ``job`` made ``refined``: it replaces any earlier refinement."""
    _settling(record, job)
    return RefineRecord(RefineState.REFINED, since=now, job=job, notice=None, refined=refined)


def fail(record: RefineRecord, *, job: str, notice: Notice, now: float) -> RefineRecord:
    """The attempt ``job`` failed (an error on the server's side); an earlier refinement stays."""
    _settling(record, job)
    return replace(record, state=RefineState.FAILED, since=now, notice=notice)


def skip(record: RefineRecord, *, job: str, notice: Notice, now: float) -> RefineRecord:
    """The attempt ``job`` was not made (the clip cannot be refined against, or the server
    had no room); an earlier refinement stays."""
    _settling(record, job)
    return replace(record, state=RefineState.SKIPPED, since=now, notice=notice)


# -- what the API shows -------------------------------------------------------------------

INTERRUPTED = Notice(
    "interrupted",
    "the server refining this voice stopped before it finished; POST "
    "/v1/voices/{id}/refine to try again",
)


def view(
    record: RefineRecord, *, now: float, stale_after_s: float, unavailable: str | None = None
) -> dict[str, Any]:
    """``state`` and ``refinement`` (and ``error`` / ``warning`` / ``refining_since``) as
    ``GET /v1/voices/{id}`` shows them. ``unavailable``: why this server cannot refine (None:
    it can); a voice never refined is then shown ``refine_unavailable`` with it as a warning."""
    state, notice = record.state, record.notice
    if is_stale(record, now=now, stale_after_s=stale_after_s):
        state, notice = RefineState.FAILED, INTERRUPTED
    if state is RefineState.READY and unavailable is not None:
        state, notice = RefineState.UNAVAILABLE, Notice("refine_unavailable", unavailable)
    out: dict[str, Any] = {
        "state": state.value,
        "refinement": None if record.refined is None else record.refined.as_dict(),
    }
    if state is RefineState.REFINING and record.since is not None:
        out["refining_since"] = _iso(record.since)
    if notice is not None:
        out["error" if state is RefineState.FAILED else "warning"] = notice.as_dict()
    return out


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


# -- storage ------------------------------------------------------------------------------

FIELDS = ("refine_state", "refine_since", "refine_job", "refine_notice", "refinement", "timbre")
Field = str | float | bytes | None


def record_fields(record: RefineRecord) -> dict[str, Field]:
    """The record as flat fields (every one of :data:`FIELDS`; None: absent)."""
    refined = record.refined
    return {
        "refine_state": record.state.value,
        "refine_since": record.since,
        "refine_job": record.job,
        "refine_notice": None if record.notice is None else json.dumps(record.notice.as_dict()),
        "refinement": None if refined is None else json.dumps(
            {"summary": refined.summary, "at": refined.at, "clip_sha256": refined.clip_sha256}
        ),
        "timbre": None if refined is None else encode_timbre(refined.timbre),
    }  # fmt: skip


def record_from_fields(values: dict[str, Any]) -> RefineRecord:
    """The inverse of :func:`record_fields` (bytes or str values; missing fields: a voice
    stored before refinement existed, ``ready``). A refinement without its timbre, or one of
    the wrong size, is dropped (never half-used)."""

    def text(v: Any) -> str | None:
        return None if v is None else v.decode() if isinstance(v, bytes) else str(v)

    state_text = text(values.get("refine_state")) or RefineState.READY.value
    state = RefineState(state_text) if state_text in _STORED else RefineState.READY
    since_text = text(values.get("refine_since"))
    notice_text = text(values.get("refine_notice"))
    notice = None
    if notice_text:
        raw = json.loads(notice_text)
        notice = Notice(str(raw["code"]), str(raw["message"]))
    refined = None
    refinement_text = text(values.get("refinement"))
    timbre = values.get("timbre")
    if refinement_text and isinstance(timbre, bytes | bytearray | memoryview):
        vector = decode_timbre(bytes(timbre))
        if vector is not None:
            raw = json.loads(refinement_text)
            refined = Refined(vector, dict(raw["summary"]), float(raw["at"]),
                              str(raw["clip_sha256"]))  # fmt: skip
    if state is RefineState.REFINED and refined is None:
        state = RefineState.READY  # nothing usable was stored with it
    return RefineRecord(
        state=state,
        since=None if since_text is None else float(since_text),
        job=text(values.get("refine_job")),
        notice=notice,
        refined=refined,
    )


_STORED = {s.value for s in RefineState if s is not RefineState.UNAVAILABLE}


def encode_timbre(timbre: FloatArray) -> bytes:
    """``timbre [2, 80]`` as stored: little-endian float32, scales then offsets."""
    return np.ascontiguousarray(timbre, dtype="<f4").reshape(TIMBRE_SHAPE).tobytes()


def decode_timbre(raw: bytes) -> FloatArray | None:
    """The stored timbre as ``[2, 80]``; None for bytes of another size or not finite."""
    if len(raw) != 4 * TIMBRE_SHAPE[0] * TIMBRE_SHAPE[1]:
        return None
    timbre = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(TIMBRE_SHAPE)
    return timbre if np.all(np.isfinite(timbre)) else None
