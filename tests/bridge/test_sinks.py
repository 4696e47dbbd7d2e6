"""The bridge's audio output: raw PCM, WAV and Ogg Opus from the server's frames."""

from __future__ import annotations

import io
import struct

import pytest
import soundfile as sf

from emostream.bridge.sinks import AudioSink, codec_for, format_for_path

STARTED = {"type": "started", "id": "m1", "sample_rate": 24000, "frame_ms": 20}


def test_formats_and_codecs() -> None:
    assert [format_for_path(p) for p in ("a.WAV", "b.ogg", "c.opus", "-", None, "x.raw")] == [
        "wav", "ogg", "ogg", "pcm", "pcm", "pcm",
    ]  # fmt: skip
    assert codec_for("ogg") == "opus" and codec_for("pcm") == codec_for("wav") == "pcm_s16le"


def test_pcm_is_the_frames_as_they_come() -> None:
    sink = AudioSink("pcm")
    assert sink.frame(b"\x01\x00") == b""  # before any line started: not a line's audio
    assert sink.started(STARTED) == b""
    assert sink.frame(b"\x01\x00" * 480) == b"\x01\x00" * 480
    assert sink.close() == b"" and sink.final_header() is None


def test_wav_streams_then_gets_its_real_sizes() -> None:
    sink = AudioSink("wav")
    out = sink.started(STARTED)
    assert struct.unpack("<I", out[4:8])[0] == 0xFFFFFFFF  # unknown length while streaming
    frames = [struct.pack("<480h", *range(k, k + 480)) for k in range(3)]
    for f in frames:
        out += sink.frame(f)
    assert sink.started({**STARTED, "id": "m2"}) == b""  # the next line goes on the same stream
    header = sink.final_header()
    assert header is not None
    pcm, rate = sf.read(io.BytesIO(header + out[len(header) :]), dtype="int16")
    assert rate == 24000 and len(pcm) == 3 * 480
    with pytest.raises(ValueError, match="16000 Hz after 24000 Hz"):
        sink.started({**STARTED, "sample_rate": 16000})


def test_ogg_wraps_the_opus_packets_of_every_line_into_one_stream() -> None:
    import numpy as np

    from emostream.codec.packetizer import OutputFormat, Packetizer

    fmt = OutputFormat(codec="opus", sample_rate=48000)
    tone = (0.3 * np.sin(np.arange(48000) * 2 * np.pi * 440 / 48000)).astype(np.float32)
    packets = [*Packetizer(fmt, in_rate=48000).push(tone)]
    sink = AudioSink("ogg")
    data = sink.started({**STARTED, "sample_rate": 48000})
    for p in packets:
        data += sink.frame(p)
    data += sink.close()
    assert data.startswith(b"OggS")
    pcm, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert rate == 48000 and abs(len(pcm) - 20 * 48 * len(packets)) <= 48 * 20
