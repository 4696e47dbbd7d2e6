"""A refined clone on the Ray cluster path: the ingress's VoiceRef carries its timbre to the
model replica, which speaks it (and does not serve the zero-shot voice it built earlier under
the same id). No Ray needed: the reference and the replica's voice lookup, in process."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from emostream.cluster.model import ModelReplica, VoiceRef
from emostream.config import Settings
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from emostream.voices.cloning.cache import LRU

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def family() -> AcousticFamily:
    loaded = load_acoustic_family(Settings(acoustic="on"))
    assert loaded is not None
    return loaded


def _replica(family: AcousticFamily) -> ModelReplica:
    replica = ModelReplica.__new__(ModelReplica)  # no Serve context: only what _voice reads
    replica.catalog = VoiceCatalog(family.stock_voices()[:1])
    replica.catalog.family = family
    replica._voices = LRU(8)
    return replica


def test_a_refined_clone_reaches_the_replica_with_its_timbre(family: AcousticFamily) -> None:
    emb = family.speakers["am_michael"]
    timbre = np.stack([np.full(80, 0.9), np.linspace(-0.4, 0.4, 80)]).astype(np.float32)
    plain = family.clone("clone_0123456789abcdef", emb, description="x")
    refined = family.clone("clone_0123456789abcdef", emb, description="x", timbre=timbre)
    ref0, ref1 = VoiceRef.of(plain, stock=False), VoiceRef.of(refined, stock=False)
    assert ref0.timbre is None and ref1.timbre is not None
    ref1 = pickle.loads(pickle.dumps(ref1))  # as Serve sends it
    np.testing.assert_array_equal(ref1.timbre, timbre)  # type: ignore[arg-type]
    assert ref0.key() != ref1.key() and ref0.key().startswith(ref0.id)
    replica = _replica(family)
    v0 = replica._voice(ref0)
    assert getattr(v0, "timbre", 0) is None
    v1 = replica._voice(ref1)  # same id, refined since: built again, not the cached zero-shot
    assert v1 is not v0
    np.testing.assert_array_equal(getattr(v1, "timbre", None), timbre)
    np.testing.assert_array_equal(getattr(v1, "speaker", None), refined.speaker)
    assert replica._voice(ref1) is v1  # and cached under its new key
    stock = family.stock_voices()[0]
    assert VoiceRef.of(stock, stock=True) == VoiceRef(stock.info.id)
    assert replica._voice(VoiceRef(stock.info.id)) is replica.catalog.get(stock.info.id)
