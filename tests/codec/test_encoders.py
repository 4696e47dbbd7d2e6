"""Response-format encoders (sans-I/O): each makes a file its format's readers decode, at the
packets' rate and length, and leaves its bytes when it says it does (streamed or whole)."""

from __future__ import annotations

import io
import struct

import av
import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf

from emostream.codec import encoders
from emostream.codec.encoders import RESPONSE_FORMATS, make_encoder, missing_extra

SECONDS = 1.5


def packets(rate: int, seconds: float = SECONDS) -> list[bytes]:
    """A 220 Hz tone with a rising envelope as 20 ms PCM s16le packets."""
    n = int(rate * seconds)
    t = np.arange(n) / rate
    tone = 0.4 * np.sin(2 * np.pi * 220 * t) * np.linspace(0.2, 1.0, n)
    pcm = (tone * 32767).astype(np.int16)
    step = rate // 50
    return [pcm[i : i + step].tobytes() for i in range(0, n, step)]


def encode(name: str, rate: int, parts: list[bytes]) -> tuple[bytes, list[bytes]]:
    """The whole body, and what each call returned (header, pushes, finish)."""
    enc = make_encoder(name, sample_rate=rate)
    out = [enc.header(), *(enc.push(p) for p in parts), enc.finish()]
    return b"".join(out), out


def decode(data: bytes) -> tuple[str, int, npt.NDArray[np.float32]]:
    """The container FFmpeg finds, the rate and the mono samples it decodes."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        frames = [f.to_ndarray().reshape(-1) for f in container.decode(stream)]
        found = container.format.name
        return found, stream.rate, np.concatenate(frames).astype(np.float32)


@pytest.mark.parametrize("rate", [24000, 16000, 48000])
def test_mp3_streams_and_decodes(rate: int) -> None:
    data, calls = encode("mp3", rate, packets(rate))
    assert calls[0] == b"" and sum(1 for c in calls[1:-1] if c) > 10  # bytes as packets come
    assert next(i for i, c in enumerate(calls) if c) <= 3  # LAME's look-ahead: a few packets
    codec, sr, audio = decode(data)
    assert codec == "mp3" and sr == rate
    # LAME's encoder delay and padding add < 0.1 s
    assert SECONDS <= len(audio) / sr < SECONDS + 0.1


def test_aac_is_adts_and_decodes() -> None:
    data, calls = encode("aac", 24000, packets(24000))
    assert data[:2] == b"\xff\xf1"  # ADTS sync word, MPEG-4, no CRC
    assert sum(1 for c in calls[1:-1] if c) > 10
    codec, sr, audio = decode(data)
    assert codec == "aac" and sr == 24000
    assert SECONDS <= len(audio) / sr < SECONDS + 0.15  # 1024-sample priming and padding


def test_flac_is_whole_at_the_end_with_its_length() -> None:
    data, calls = encode("flac", 24000, packets(24000))
    assert all(c == b"" for c in calls[:-1]) and calls[-1] == data and data[:4] == b"fLaC"
    audio, sr = sf.read(io.BytesIO(data), dtype="int16")
    assert sr == 24000 and len(audio) == int(24000 * SECONDS)
    assert audio.tobytes() == b"".join(packets(24000))  # lossless


def test_wav_header_then_samples() -> None:
    data, calls = encode("wav", 16000, packets(16000))
    assert calls[0][:4] == b"RIFF" and len(calls[0]) == 44
    assert struct.unpack("<I", calls[0][24:28]) == (16000,)
    audio, sr = sf.read(io.BytesIO(data), dtype="int16")
    assert sr == 16000 and audio.tobytes() == b"".join(packets(16000))


def test_pcm_is_the_packets() -> None:
    parts = packets(24000)
    data, calls = encode("pcm", 24000, parts)
    assert data == b"".join(parts) and calls[1:-1] == parts


def test_ogg_opus_pages_every_five_packets() -> None:
    import opuslib_next as opus

    enc_opus = opus.Encoder(48000, 1, opus.APPLICATION_AUDIO)
    pcm = packets(48000)
    opus_packets = [bytes(enc_opus.encode(p, len(p) // 2)) for p in pcm]
    enc = make_encoder("opus", sample_rate=48000, opus_pre_skip=312)
    head = enc.header()
    pushed = [enc.push(p) for p in opus_packets]
    assert [i for i, p in enumerate(pushed) if p][:3] == [4, 9, 14]
    data = head + b"".join(pushed) + enc.finish()
    found, sr, audio = decode(data)
    assert found == "ogg" and sr == 48000 and abs(len(audio) / sr - SECONDS) < 0.03


def test_every_format_has_an_encoder_and_a_media_type() -> None:
    assert list(RESPONSE_FORMATS) == ["mp3", "opus", "aac", "flac", "wav", "pcm"]
    for fmt in RESPONSE_FORMATS.values():
        assert fmt.media_type.startswith("audio/")
        assert fmt.streams == (fmt.name != "flac")
        make_encoder(fmt.name, sample_rate=fmt.default_rate)


def test_a_format_whose_library_is_missing_names_its_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert missing_extra(RESPONSE_FORMATS["aac"]) is None  # av is installed here
    monkeypatch.setattr(encoders, "_installed", lambda module: module != "av")
    assert missing_extra(RESPONSE_FORMATS["aac"]) == "media"
    # the core install has every other format's library
    assert all(missing_extra(f) is None for n, f in RESPONSE_FORMATS.items() if n != "aac")
