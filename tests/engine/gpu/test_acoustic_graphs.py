"""The bucketed two-stage acoustic inference (CUDA graphs on GPUs; here its eager twin)."""

from __future__ import annotations

import numpy as np

from emostream.engine.gpu.acoustic_graphs import GraphedAcoustic, bucket
from emostream.voices.acoustic import AcousticVoice, infer_batch
from emostream.voices.base import Controls


def test_bucket() -> None:
    assert bucket(1, (1, 2, 4)) == 1 and bucket(3, (1, 2, 4)) == 4 and bucket(5, (1, 2, 4)) is None


def test_shapes_respect_the_cell_bound(voice: AcousticVoice) -> None:
    g = GraphedAcoustic(voice.model, device="cpu", batches=(1, 8), frames=(128, 1024),
                        max_cells=4096)  # fmt: skip
    one, two = g.shapes()
    assert len(one) == 2 * len(g.units)
    assert two == [(1, 128), (1, 1024), (8, 128)]


def test_padded_buckets_equal_the_plain_batch(voice: AcousticVoice) -> None:
    g = GraphedAcoustic(voice.model, device="cpu", cuda_graphs=False)
    texts = ["Hi.", "A longer sentence, with a pause in it.", "Good morning, everyone."]
    requests = [voice.prepare(t, Controls(speed=s)) for t, s in zip(texts, (1.0, 1.2, 0.9))]
    padded = g(requests)  # batch 3 -> 4 rows, units -> 32/64, frames -> 128/256/512
    plain = infer_batch(voice.model, requests)
    assert g.eager_batches == 0
    for a, b in zip(padded, plain, strict=True):
        np.testing.assert_array_equal(a.unit_frames, b.unit_frames)
        assert a.frames.shape == b.frames.shape
        np.testing.assert_allclose(a.frames, b.frames, atol=1e-4)


def test_batches_past_the_buckets_run_eagerly(voice: AcousticVoice) -> None:
    g = GraphedAcoustic(voice.model, device="cpu", cuda_graphs=False, units=(8,))
    request = voice.prepare("This sentence has more than eight units.", Controls())
    (latent,) = g([request])
    assert g.eager_batches == 1
    np.testing.assert_allclose(latent.frames, infer_batch(voice.model, [request])[0].frames,
                               atol=1e-4)  # fmt: skip


def test_frames_past_the_buckets_decode_eagerly(voice: AcousticVoice) -> None:
    g = GraphedAcoustic(voice.model, device="cpu", cuda_graphs=False, frames=(8,))
    request = voice.prepare("Longer than eight frames.", Controls())
    (latent,) = g([request])
    assert g.eager_batches == 1 and latent.num_frames > 8
    np.testing.assert_allclose(latent.frames, infer_batch(voice.model, [request])[0].frames,
                               atol=1e-4)  # fmt: skip
