def test_the_widest_engine_window_fits_a_slot() -> None:
    """A window's audio that does not fit a slot travels pickled in the message: the light
    vocoder's 256-frame rows cost the engine ~1 ms a window that way (H100, 2026-12-06)."""
    from emostream.engine.client import SLOT_BYTES
    from emostream.engine.gpu.batcher import ENGINE_BUCKETS, LITE_ENGINE_BUCKETS

    hop, float32 = 256, 4
    for spec in (ENGINE_BUCKETS, LITE_ENGINE_BUCKETS):
        assert max(spec.frames) * hop * float32 <= SLOT_BYTES
