"""PCM s16le mono into other raw sample formats and rates, as it streams (sans-I/O).

The streamer makes PCM s16le at 16, 24 or 48 kHz; APIs modelled on other services ask for
rates and encodings beside those (8 kHz G.711 for telephony, 22.05 and 44.1 kHz, 32-bit
float). :class:`PcmConverter` takes the streamer's packets one at a time and gives the bytes
now complete: resampled with soxr's streaming resampler (its ``HQ`` quality) when the rates
differ, then encoded as s16le, f32le, G.711 μ-law or A-law. :meth:`PcmConverter.finish` flushes
the resampler's tail.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
import soxr

PcmEncoding = Literal["pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw"]
ENCODINGS: tuple[PcmEncoding, ...] = ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
BYTES_PER_SAMPLE: dict[PcmEncoding, int] = {
    "pcm_s16le": 2, "pcm_f32le": 4, "pcm_mulaw": 1, "pcm_alaw": 1,
}  # fmt: skip

_MULAW_BIAS = 33  # on 14-bit magnitudes, as the CCITT reference coder (and audioop) code them
_MULAW_CLIP = 8159
_MULAW_SEG_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])


def mulaw(samples: npt.NDArray[np.int16]) -> bytes:
    """G.711 μ-law of s16 samples (the CCITT reference coder's 14-bit segment coding)."""
    x = samples.astype(np.int32) >> 2
    mask = np.where(x < 0, 0x7F, 0xFF)
    mag = np.minimum(np.abs(x), _MULAW_CLIP) + _MULAW_BIAS
    seg = np.searchsorted(_MULAW_SEG_END, mag)
    code = np.where(seg >= 8, 0x7F, (seg << 4) | ((mag >> (seg + 1)) & 0x0F))
    out: bytes = ((code ^ mask) & 0xFF).astype(np.uint8).tobytes()
    return out


def alaw(samples: npt.NDArray[np.int16]) -> bytes:
    """G.711 A-law of s16 samples (13-bit magnitude, even bits inverted)."""
    x = samples.astype(np.int32) >> 3
    sign = np.where(x >= 0, 0x80, 0)
    mag = np.minimum(np.where(x >= 0, x, -x - 1), 0xFFF)
    exponent = np.where(mag >= 32, np.floor(np.log2(np.maximum(mag, 1))).astype(np.int32) - 4, 0)
    exponent = np.clip(exponent, 0, 7)
    mantissa = np.where(exponent == 0, mag >> 1, mag >> exponent) & 0x0F
    out: bytes = ((sign | (exponent << 4) | mantissa) ^ 0x55).astype(np.uint8).tobytes()
    return out


def encode(samples: npt.NDArray[np.int16], encoding: PcmEncoding) -> bytes:
    if encoding == "pcm_s16le":
        return samples.astype("<i2").tobytes()
    if encoding == "pcm_f32le":
        return (samples.astype(np.float32) / 32768.0).astype("<f4").tobytes()
    if encoding == "pcm_mulaw":
        return mulaw(samples)
    return alaw(samples)


class PcmConverter:
    """s16le packets at ``in_rate`` into ``encoding`` at ``out_rate`` (module docs)."""

    def __init__(self, in_rate: int, out_rate: int, encoding: PcmEncoding = "pcm_s16le") -> None:
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown PCM encoding {encoding!r}")
        self.in_rate = in_rate
        self.out_rate = out_rate
        self.encoding = encoding
        self._resampler = (
            None if in_rate == out_rate
            else soxr.ResampleStream(in_rate, out_rate, 1, dtype="int16", quality="HQ")
        )  # fmt: skip

    def samples(self, packet: bytes) -> npt.NDArray[np.int16]:
        """``packet`` (s16le at ``in_rate``) at ``out_rate``, as s16 samples now complete."""
        pcm = np.frombuffer(packet, dtype="<i2")
        if self._resampler is None:
            return pcm.astype(np.int16)
        return np.asarray(self._resampler.resample_chunk(pcm), dtype=np.int16)

    def push(self, packet: bytes) -> bytes:
        return encode(self.samples(packet), self.encoding)

    def finish_samples(self) -> npt.NDArray[np.int16]:
        if self._resampler is None:
            return np.zeros(0, dtype=np.int16)
        empty = np.zeros(0, dtype=np.int16)
        return np.asarray(self._resampler.resample_chunk(empty, last=True), dtype=np.int16)

    def finish(self) -> bytes:
        return encode(self.finish_samples(), self.encoding)
