"""PCM → output packets (sans-I/O): resampling, 20 ms framing, Opus or PCM s16le.

One :class:`Packetizer` per utterance. ``push(audio)`` takes float32 mono audio at
the voice's rate and returns the packets now complete; ``finish()`` flushes the
resampler and pads the last frame with silence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import soxr

Codec = Literal["opus", "pcm_s16le"]
OpusApplication = Literal["audio", "lowdelay"]
# libopus's OPUS_APPLICATION_* values (opus_defines.h), so the core imports without libopus:
# "audio" lets the encoder pick SILK, CELT or both (hybrid) per frame; "lowdelay"
# (RESTRICTED_LOWDELAY) is CELT only: 2.5 ms of look-ahead instead of 6.5, and on speech
# cheaper to encode than "audio" at the same complexity (docs/measurements.md, "Figures
# behind the code").
OPUS_APPLICATIONS: dict[str, int] = {"audio": 2049, "lowdelay": 2051}
OPUS_RATES = (48000, 24000, 16000)
DEFAULT_BITRATE = 32000  # Opus bits per second where neither client nor server says
SAMPLE_RATES = OPUS_RATES  # the protocol offers the same rates for PCM
FRAME_MS = 20


class FormatError(ValueError):
    """An output format the server cannot produce."""


@dataclass(frozen=True)
class OutputFormat:
    codec: Codec = "opus"
    sample_rate: int = 48000
    bitrate: int | None = None  # Opus bits per second; None: the server's (DEFAULT_BITRATE)
    complexity: int = 5  # Opus 0..10 (its CPU cost: docs/measurements.md)
    application: OpusApplication = "audio"  # OPUS_APPLICATIONS

    def __post_init__(self) -> None:
        if self.codec not in ("opus", "pcm_s16le"):
            raise FormatError(f"unsupported codec {self.codec!r}; use 'opus' or 'pcm_s16le'")
        if self.sample_rate not in SAMPLE_RATES:
            raise FormatError(
                f"unsupported sample_rate {self.sample_rate}; use one of {list(SAMPLE_RATES)}"
            )
        if self.bitrate is not None and not 6000 <= self.bitrate <= 256000:
            raise FormatError(f"bitrate {self.bitrate} outside 6000..256000")
        if not 0 <= self.complexity <= 10:
            raise FormatError(f"Opus complexity {self.complexity} outside 0..10")
        if self.application not in OPUS_APPLICATIONS:
            raise FormatError(
                f"Opus application {self.application!r}; use one of {list(OPUS_APPLICATIONS)}"
            )

    @property
    def frame_samples(self) -> int:
        return self.sample_rate * FRAME_MS // 1000


def opus_lookahead(fmt: OutputFormat) -> int:
    """The Opus encoder's look-ahead for ``fmt`` in samples at its rate (Ogg pre-skip)."""
    import opuslib_next as opus  # needs libopus0 (Debian) at import time

    return int(opus.Encoder(fmt.sample_rate, 1, OPUS_APPLICATIONS[fmt.application]).lookahead)


def to_int16(audio: npt.NDArray[np.float32]) -> npt.NDArray[np.int16]:
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.int16)


class Packetizer:
    """Turns a stream of float32 audio at ``in_rate`` into 20 ms packets."""

    def __init__(self, fmt: OutputFormat, *, in_rate: int) -> None:
        self.fmt = fmt
        self.in_rate = in_rate
        self._resampler = (
            # LQ holds back ~1 ms of audio (HQ: 28 ms), which the first packet would wait for;
            # its passband is ample for 22.05 kHz speech going into a 32 kb/s Opus stream.
            soxr.ResampleStream(in_rate, fmt.sample_rate, 1, dtype="float32", quality="LQ")
            if in_rate != fmt.sample_rate
            else None
        )
        self._pending = np.zeros(0, dtype=np.float32)
        self._encoder = None
        if fmt.codec == "opus":
            import opuslib_next as opus  # needs libopus0 (Debian) at import time

            enc = opus.Encoder(fmt.sample_rate, 1, OPUS_APPLICATIONS[fmt.application])
            enc.bitrate = DEFAULT_BITRATE if fmt.bitrate is None else fmt.bitrate
            enc.complexity = fmt.complexity
            enc.signal = opus.SIGNAL_VOICE
            self._encoder = enc
        self.samples_out = 0  # real samples at the output rate (padding excluded)
        self._finished = False

    @property
    def lookahead(self) -> int:
        """Encoder delay in output samples (Ogg pre-skip); 0 for PCM."""
        return int(self._encoder.lookahead) if self._encoder is not None else 0

    def push(self, audio: npt.NDArray[np.float32]) -> list[bytes]:
        if self._finished:
            raise RuntimeError("packetizer already finished")
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if self._resampler is not None:
            audio = self._resampler.resample_chunk(audio, last=False)
        return self._frames(audio, final=False)

    def push_each(self, audio: npt.NDArray[np.float32]) -> Iterator[bytes]:
        """The packets of ``push(audio)``, the same bytes, each yielded as soon as it is
        encoded: the input is resampled and framed one packet's worth at a time, so the
        first packet of a chunk waits for one frame's resampling and encoding, not the
        whole chunk's. A little dearer in all (more, smaller calls), so for a chunk a
        listener is waiting for (docs/measurements.md, "Figures behind the code"). Consume it
        fully before the next call."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        step = max(1, -(-self.fmt.frame_samples * self.in_rate // self.fmt.sample_rate))
        for i in range(0, len(audio), step):
            yield from self.push(audio[i : i + step])

    def push_first(self, audio: npt.NDArray[np.float32], *, each_s: float = 0.1) -> Iterator[bytes]:
        """A listener's first chunk: the packets of its first ``each_s`` one at a time
        (:meth:`push_each`: the first leaves after one frame's work), the rest in one
        :meth:`push`. The same bytes as ``push(audio)``. A light-vocoder first chunk on
        the GPU engine is 99 frames (1.15 s): all of it one at a time cost more than one
        push, this almost nothing (docs/measurements.md, "Figures behind the code")."""
        n = int(each_s * self.in_rate)
        yield from self.push_each(audio[:n])
        yield from self.push(audio[n:])

    def finish(self) -> list[bytes]:
        if self._finished:
            return []
        tail = np.zeros(0, dtype=np.float32)
        if self._resampler is not None:
            tail = self._resampler.resample_chunk(tail, last=True)
        self._finished = True
        return self._frames(tail, final=True)

    def _frames(self, audio: npt.NDArray[np.float32], *, final: bool) -> list[bytes]:
        self.samples_out += len(audio)
        buf = np.concatenate([self._pending, audio]) if self._pending.size else audio
        n = self.fmt.frame_samples
        if final and len(buf) % n:
            buf = np.concatenate([buf, np.zeros(n - len(buf) % n, dtype=np.float32)])
        whole = len(buf) // n
        packets = [self._encode(buf[i * n : (i + 1) * n]) for i in range(whole)]
        self._pending = buf[whole * n :].copy()
        return packets

    def _encode(self, frame: npt.NDArray[np.float32]) -> bytes:
        pcm = to_int16(frame).tobytes()
        if self._encoder is None:
            return pcm
        return bytes(self._encoder.encode(pcm, len(frame)))
