"""Response formats of ``POST /v1/audio/speech`` (sans-I/O): a stream's 20 ms packets into the
bytes of an MP3, Ogg Opus, AAC, FLAC, WAV or raw PCM body.

The streamer makes Opus packets for ``opus`` and PCM s16le mono packets for every other format
(:attr:`ResponseFormat.codec`). One encoder per response: :meth:`AudioEncoder.header` first,
then :meth:`AudioEncoder.push` for each packet (the body bytes now complete, often none), then
:meth:`AudioEncoder.finish` (the rest). Nothing here does I/O.

Libraries: LAME (``lameenc``, a core dependency) for MP3; libopus (``opuslib_next``, core) with
this package's Ogg writer for Opus; FFmpeg's AAC encoder in an ADTS stream through PyAV (``av``,
the ``media`` extra); libsndfile's FLAC (``soundfile``, core). A format whose library is not
installed is refused before anything is made (:func:`missing_extra`).

Streaming: MP3, AAC (ADTS frames), Ogg Opus (a page per 100 ms), WAV (a header with the
'unknown length' sizes) and PCM leave as the audio is made. FLAC is sent whole when the audio
is complete, so that its STREAMINFO holds the length and MD5 every reader wants (a streamed
FLAC's 'unknown length' makes libsndfile refuse a plain read).
"""

from __future__ import annotations

import importlib.util
import io
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from emostream.codec.containers import OggOpusWriter, wav_header
from emostream.codec.packetizer import FRAME_MS, Codec

MP3_KBPS = 64  # CBR; 24 kHz mono speech (MPEG-2 Layer III allows 8-160 kb/s at 16/24 kHz)
# LAME's quality/speed trade (2 best .. 7 fastest); 5 is its own default, bench/encoder_cost.py
MP3_QUALITY = 5
AAC_BITRATE = 64000  # FFmpeg's native AAC encoder, AAC-LC in ADTS frames
OGG_PAGE_PACKETS = 5  # 100 ms of Opus per Ogg page


@dataclass(frozen=True)
class ResponseFormat:
    """One ``response_format``: its media type, what the streamer makes for it, and the
    optional extra its encoder needs (None: the core install has it)."""

    name: str
    media_type: str
    codec: Codec  # the streamer's packets
    default_rate: int
    streams: bool  # bytes leave while the audio is made (FLAC: at the end)
    extra: str | None = None
    module: str | None = None  # the import that extra brings


RESPONSE_FORMATS: dict[str, ResponseFormat] = {
    f.name: f
    for f in (
        ResponseFormat("mp3", "audio/mpeg", "pcm_s16le", 24000, True),
        ResponseFormat("opus", "audio/ogg", "opus", 48000, True),
        ResponseFormat("aac", "audio/aac", "pcm_s16le", 24000, True, "media", "av"),
        ResponseFormat("flac", "audio/flac", "pcm_s16le", 24000, False),
        ResponseFormat("wav", "audio/wav", "pcm_s16le", 24000, True),
        ResponseFormat("pcm", "audio/pcm", "pcm_s16le", 24000, True),
    )
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a stub module without a spec (tests that hide a library)
        return False


def missing_extra(fmt: ResponseFormat) -> str | None:
    """The extra to install for ``fmt`` when its library is not importable here, else None."""
    if fmt.extra is None or fmt.module is None or _installed(fmt.module):
        return None
    return fmt.extra


def warm() -> None:
    """Import the encoders' libraries now (start-up), not in a first request on the event
    loop: PyAV loads FFmpeg (about 0.1 s and 17 MB), so only where it is installed."""
    import lameenc  # noqa: F401
    import soundfile  # noqa: F401

    if _installed("av"):
        import av  # noqa: F401


class AudioEncoder(Protocol):
    """A response body made from the stream's packets, one at a time."""

    def header(self) -> bytes: ...

    def push(self, packet: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class PcmEncoder:
    """Raw PCM s16le mono: the packets as they are."""

    def header(self) -> bytes:
        return b""

    def push(self, packet: bytes) -> bytes:
        return packet

    def finish(self) -> bytes:
        return b""


class WavEncoder(PcmEncoder):
    """WAV as it streams: a RIFF header whose sizes say 'unknown length', then the samples."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate

    def header(self) -> bytes:
        return wav_header(sample_rate=self.sample_rate)


class OggOpusEncoder:
    """Opus packets into Ogg pages (RFC 7845), :data:`OGG_PAGE_PACKETS` per page.
    ``pre_skip``: the Opus encoder's look-ahead in samples at ``sample_rate``."""

    def __init__(self, sample_rate: int, pre_skip: int) -> None:
        self._ogg = OggOpusWriter(sample_rate=sample_rate, pre_skip=pre_skip)
        self._per_packet = sample_rate * FRAME_MS // 1000
        self._batch: list[bytes] = []

    def header(self) -> bytes:
        return self._ogg.header()

    def push(self, packet: bytes) -> bytes:
        self._batch.append(packet)
        if len(self._batch) < OGG_PAGE_PACKETS:
            return b""
        batch, self._batch = self._batch, []
        return self._ogg.pages(batch, self._per_packet)

    def finish(self) -> bytes:
        batch, self._batch = self._batch, []
        return self._ogg.pages(batch, self._per_packet, last=True)


class Mp3Encoder:
    """MPEG Layer III through LAME, CBR :data:`MP3_KBPS`, at the input's rate (16, 24 or
    48 kHz: no resampling). The first bytes come after LAME's look-ahead (about two 20 ms
    packets at 24 kHz)."""

    def __init__(self, sample_rate: int, *, kbps: int = MP3_KBPS, quality: int = MP3_QUALITY):
        import lameenc  # a core dependency; imported here so the package loads without it

        enc = lameenc.Encoder()
        enc.set_bit_rate(kbps)
        enc.set_in_sample_rate(sample_rate)
        enc.set_out_sample_rate(sample_rate)
        enc.set_channels(1)
        enc.set_quality(quality)
        self._enc = enc

    def header(self) -> bytes:
        return b""

    def push(self, packet: bytes) -> bytes:
        return bytes(self._enc.encode(packet))

    def finish(self) -> bytes:
        return bytes(self._enc.flush())


class _Sink:
    """A write-only file for PyAV's muxer: what it wrote since the last :meth:`take`."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def write(self, data: bytes) -> int:
        self._buf += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self._buf)
        self._buf.clear()
        return out


class AacEncoder:
    """AAC-LC (FFmpeg's native encoder, :data:`AAC_BITRATE`) in ADTS frames, the streamable
    AAC file (``.aac``) every player reads. Needs PyAV (the ``media`` extra). FFmpeg codes
    1024-sample frames: the first bytes leave once two are in (about 85 ms at 24 kHz)."""

    def __init__(self, sample_rate: int, *, bitrate: int = AAC_BITRATE) -> None:
        import av  # the [media] extra (missing_extra checks before a request gets here)

        self._av: Any = av
        self._sink = _Sink()
        self._out: Any = av.open(self._sink, "w", format="adts")
        self._stream: Any = self._out.add_stream("aac", rate=sample_rate, layout="mono")
        self._stream.bit_rate = bitrate
        self.sample_rate = sample_rate
        self._pts = 0

    def header(self) -> bytes:
        return b""

    def push(self, packet: bytes) -> bytes:
        samples = np.frombuffer(packet, dtype=np.int16)
        frame = self._av.AudioFrame.from_ndarray(samples[None, :], format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        frame.pts = self._pts
        self._pts += len(samples)
        for pkt in self._stream.encode(frame):
            self._out.mux(pkt)
        return self._sink.take()

    def finish(self) -> bytes:
        for pkt in self._stream.encode(None):
            self._out.mux(pkt)
        self._out.close()
        return self._sink.take()


class FlacEncoder:
    """FLAC (libsndfile, 16-bit), encoded as the packets come and sent whole by
    :meth:`finish`, when the STREAMINFO block can hold the length and the MD5."""

    def __init__(self, sample_rate: int) -> None:
        import soundfile as sf

        self._buf = io.BytesIO()
        self._file = sf.SoundFile(self._buf, "w", samplerate=sample_rate, channels=1,
                                  format="FLAC", subtype="PCM_16")  # fmt: skip

    def header(self) -> bytes:
        return b""

    def push(self, packet: bytes) -> bytes:
        self._file.buffer_write(packet, dtype="int16")
        return b""

    def finish(self) -> bytes:
        self._file.close()
        return self._buf.getvalue()


def make_encoder(name: str, *, sample_rate: int, opus_pre_skip: int = 0) -> AudioEncoder:
    """The encoder of response format ``name`` at ``sample_rate`` (the packets' rate).
    ``opus_pre_skip``: the Opus look-ahead in samples at that rate (``opus`` only).
    Raises KeyError for a name not in :data:`RESPONSE_FORMATS`."""
    fmt = RESPONSE_FORMATS[name]
    if fmt.name == "mp3":
        return Mp3Encoder(sample_rate)
    if fmt.name == "opus":
        return OggOpusEncoder(sample_rate, opus_pre_skip)
    if fmt.name == "aac":
        return AacEncoder(sample_rate)
    if fmt.name == "flac":
        return FlacEncoder(sample_rate)
    if fmt.name == "wav":
        return WavEncoder(sample_rate)
    return PcmEncoder()
