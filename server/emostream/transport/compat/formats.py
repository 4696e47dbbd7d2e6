"""Audio formats other APIs name, and the transcoder that makes them from the stream (sans-I/O).

ElevenLabs names a format as one string, ``codec_rate[_kbps]`` (``mp3_44100_128``,
``pcm_16000``, ``ulaw_8000``); Cartesia as an object (``{"container": "raw", "encoding":
"pcm_f32le", "sample_rate": 44100}``). Both become a :class:`CompatFormat`. The streamer makes
PCM s16le at 16, 24 or 48 kHz: a format is made from the lowest of those at or above its rate
(:attr:`CompatFormat.source_rate`), resampled and encoded by a :class:`Transcoder`
(:class:`~emostream.codec.pcm.PcmConverter`, then LAME for MP3, with a streaming WAV header
for ``wav``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from emostream.codec.containers import wav_header
from emostream.codec.encoders import Mp3Encoder
from emostream.codec.packetizer import SAMPLE_RATES
from emostream.codec.pcm import BYTES_PER_SAMPLE, PcmConverter, PcmEncoding

Container = Literal["raw", "wav", "mp3"]
RATES = (8000, 16000, 22050, 24000, 44100, 48000)  # what both APIs offer
MP3_KBPS = (32, 48, 64, 96, 128, 160, 192)
MPEG2_MAX_KBPS = 160  # 16-24 kHz MP3 (MPEG-2 Layer III); 8 kHz (MPEG-2.5): 64
ELEVENLABS_DEFAULT = "mp3_44100_128"
_ELEVENLABS = re.compile(r"(mp3|pcm|ulaw|alaw|wav)_(\d{4,5})(?:_(\d{2,3}))?")
_ELEVENLABS_CODEC: dict[str, tuple[Container, PcmEncoding]] = {
    "mp3": ("mp3", "pcm_s16le"), "pcm": ("raw", "pcm_s16le"), "wav": ("wav", "pcm_s16le"),
    "ulaw": ("raw", "pcm_mulaw"), "alaw": ("raw", "pcm_alaw"),
}  # fmt: skip


class FormatRefused(ValueError):
    """A format this server cannot make; the message says what it can."""


@dataclass(frozen=True)
class CompatFormat:
    container: Container
    encoding: PcmEncoding  # the samples (raw, wav); s16le for mp3
    sample_rate: int
    kbps: int | None = None  # mp3

    @property
    def source_rate(self) -> int:
        """The streamer's rate it is made from: the lowest served rate at or above its own."""
        return min(r for r in SAMPLE_RATES if r >= min(self.sample_rate, max(SAMPLE_RATES)))

    @property
    def media_type(self) -> str:
        if self.container == "mp3":
            return "audio/mpeg"
        if self.container == "wav":
            return "audio/wav"
        return {"pcm_mulaw": "audio/basic", "pcm_alaw": "audio/x-alaw-basic"}.get(
            self.encoding, "application/octet-stream"
        )

    def seconds(self, data_bytes: int) -> float:
        """How long ``data_bytes`` of raw samples last (not for mp3)."""
        return data_bytes / BYTES_PER_SAMPLE[self.encoding] / self.sample_rate


def _check_rate(rate: int, what: str) -> None:
    if rate not in RATES:
        raise FormatRefused(f"{what}: sample rate {rate} is not offered; use one of {list(RATES)}")


def _check_mp3(rate: int, kbps: int, what: str) -> None:
    top = 64 if rate < 16000 else MPEG2_MAX_KBPS if rate < 32000 else max(MP3_KBPS)
    if kbps not in MP3_KBPS or kbps > top:
        raise FormatRefused(f"{what}: MP3 at {rate} Hz is made at {[k for k in MP3_KBPS if k <= top]} "
                            "kb/s")  # fmt: skip


def elevenlabs_format(name: str | None) -> CompatFormat:
    """ElevenLabs' ``output_format`` (``None``: its default, ``mp3_44100_128``)."""
    name = ELEVENLABS_DEFAULT if name is None else name
    match = _ELEVENLABS.fullmatch(name)
    if match is None:
        raise FormatRefused(
            f"output_format {name[:60]!r} is not offered here; use mp3_<rate>_<kbps> "
            "(mp3_44100_128, mp3_22050_32, ...), pcm_<rate> (8000, 16000, 22050, 24000, 44100, "
            "48000), ulaw_8000, alaw_8000 or wav_<rate> (Opus: use the native /v1/stream)"
        )
    codec, rate, kbps = match.group(1), int(match.group(2)), match.group(3)
    _check_rate(rate, f"output_format {name!r}")
    if codec in ("ulaw", "alaw") and rate != 8000:
        raise FormatRefused(f"output_format {name!r}: {codec} is offered at 8000 Hz only")
    container, encoding = _ELEVENLABS_CODEC[codec]
    if container == "mp3":
        if kbps is None:
            raise FormatRefused(f"output_format {name!r}: name the bit rate, e.g. mp3_44100_128")
        _check_mp3(rate, int(kbps), f"output_format {name!r}")
        return CompatFormat("mp3", encoding, rate, int(kbps))
    if kbps is not None:
        raise FormatRefused(f"output_format {name!r}: only mp3 takes a bit rate")
    return CompatFormat(container, encoding, rate)


def cartesia_format(raw: object, *, containers: tuple[Container, ...]) -> CompatFormat:
    """Cartesia's ``output_format`` object; ``containers``: those this route makes."""
    if not isinstance(raw, dict):
        raise FormatRefused("'output_format' must be an object with 'container', 'encoding' "
                            "and 'sample_rate'")  # fmt: skip
    container, rate = raw.get("container"), raw.get("sample_rate")
    if container not in containers:
        shown = ", ".join(repr(c) for c in containers)
        raise FormatRefused(f"'output_format.container' must be {shown} here")
    if isinstance(rate, bool) or not isinstance(rate, int):
        raise FormatRefused(f"'output_format.sample_rate' must be one of {list(RATES)}")
    _check_rate(rate, "'output_format.sample_rate'")
    if container == "mp3":
        bit_rate = raw.get("bit_rate", 128000)
        if isinstance(bit_rate, bool) or not isinstance(bit_rate, int) or bit_rate % 1000:
            raise FormatRefused("'output_format.bit_rate' must be a whole number of kb/s, in b/s")
        _check_mp3(rate, bit_rate // 1000, "'output_format'")
        return CompatFormat("mp3", "pcm_s16le", rate, bit_rate // 1000)
    encoding = raw.get("encoding")
    if encoding not in ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw"):
        raise FormatRefused("'output_format.encoding' must be 'pcm_s16le', 'pcm_f32le', "
                            "'pcm_mulaw' or 'pcm_alaw'")  # fmt: skip
    return CompatFormat(container, encoding, rate)


class Transcoder:
    """The stream's s16le packets (at ``fmt.source_rate``) as ``fmt``'s bytes, as they come."""

    def __init__(self, fmt: CompatFormat) -> None:
        self.fmt = fmt
        self._pcm = PcmConverter(fmt.source_rate, fmt.sample_rate,
                                 "pcm_s16le" if fmt.container == "mp3" else fmt.encoding)  # fmt: skip
        self._mp3 = (
            Mp3Encoder(fmt.sample_rate, kbps=fmt.kbps or 128) if fmt.container == "mp3" else None
        )
        self._head = wav_header(sample_rate=fmt.sample_rate) if fmt.container == "wav" else b""
        if fmt.container == "wav" and fmt.encoding != "pcm_s16le":
            raise FormatRefused("a WAV body is made with pcm_s16le samples here")

    def push(self, packet: bytes) -> bytes:
        data = self._pcm.push(packet)
        if self._mp3 is not None:
            data = self._mp3.push(data)
        return self._take_head() + data

    def finish(self) -> bytes:
        data = self._pcm.finish()
        if self._mp3 is not None:
            data = self._mp3.push(data) + self._mp3.finish()
        return self._take_head() + data

    def _take_head(self) -> bytes:
        head, self._head = self._head, b""
        return head
