"""Serve's request router, told to keep each stream on one model replica.

A stream's first request (the ``session`` call of :mod:`emostream.cluster.ray_runner`) is
routed as Serve routes any request: power of two choices on the replicas' ongoing requests,
which count the streams each holds (a session stays open for its stream's life). The
session's first answer names the replica; every later call of the stream carries it as the
``replica`` keyword, and this router sends such a call to that replica only. When that
replica is gone the call goes to any live one, which refuses it (its stream is not open
there), so the stream ends with an error instead of moving silently to a replica that never
saw it.

Plugged in through Serve's public request-router extension
(``RequestRouterConfig(request_router_class=StreamAffinityRouter)``); everything else --
queue-length probes, back-off, replica lists -- is Serve's own
``PowerOfTwoChoicesRequestRouter``.
"""

from __future__ import annotations

from typing import Any

from ray.serve._private.request_router.pow_2_router import PowerOfTwoChoicesRequestRouter
from ray.serve.request_router import PendingRequest, RunningReplica

REPLICA_KWARG = "replica"


def pinned_replica(request: PendingRequest | None) -> str | None:
    """The replica id a call is pinned to (its ``replica`` keyword), if any."""
    if request is None:
        return None
    value: Any = request.kwargs.get(REPLICA_KWARG)
    return value if isinstance(value, str) and value else None


class StreamAffinityRouter(PowerOfTwoChoicesRequestRouter):
    """See the module docs."""

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        pinned = pinned_replica(pending_request)
        if pinned is None:
            chosen: list[list[RunningReplica]] = await super().choose_replicas(
                candidate_replicas, pending_request
            )
            return chosen
        for replica in candidate_replicas:
            if replica.replica_id.unique_id == pinned:
                return [[replica]]
        # The stream's replica is gone: any live replica refuses the call (stream not open).
        return [candidate_replicas[:1]] if candidate_replicas else []
