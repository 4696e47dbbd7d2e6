"""G.711 and resampling in the PCM converter (emostream.codec.pcm)."""

from __future__ import annotations

import warnings

import numpy as np

from emostream.codec.pcm import PcmConverter, alaw, mulaw


def test_g711_matches_the_reference_coder_on_every_sample() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop  # the CCITT reference coder (Python 3.11)
    x = np.arange(-32768, 32768, dtype=np.int16)
    assert mulaw(x) == audioop.lin2ulaw(x.tobytes(), 2)
    assert alaw(x) == audioop.lin2alaw(x.tobytes(), 2)


def test_streaming_resample_keeps_the_duration() -> None:
    conv = PcmConverter(24000, 22050, "pcm_f32le")
    packet = (np.sin(np.arange(480) / 5) * 8000).astype(np.int16).tobytes()
    out = b"".join(conv.push(packet) for _ in range(50)) + conv.finish()
    assert len(out) // 4 == 22050
