import io

import numpy as np
import soundfile as sf

from emostream.codec.containers import OggOpusWriter, wav_header
from emostream.codec.packetizer import OutputFormat, Packetizer


def test_ogg_opus_decodes_with_libsndfile() -> None:
    rate = 48000
    p = Packetizer(OutputFormat("opus", rate), in_rate=rate)
    sig = (0.3 * np.sin(2 * np.pi * 330 * np.arange(rate) / rate)).astype(np.float32)
    packets = p.push(sig) + p.finish()
    w = OggOpusWriter(sample_rate=rate, pre_skip=p.lookahead)
    data = w.header() + w.pages(packets[:20], 960) + w.pages(packets[20:], 960, last=True)
    audio, sr = sf.read(io.BytesIO(data))
    assert sr == 48000
    assert abs(len(audio) - rate) <= 960  # pre-skip removed; padding at most one frame
    assert abs(np.sqrt(np.mean(audio[4800:-4800] ** 2)) - 0.212) < 0.03


def test_wav_header_known_length() -> None:
    pcm = (np.arange(100, dtype=np.int16)).tobytes()
    data = wav_header(sample_rate=16000, data_bytes=len(pcm)) + pcm
    audio, sr = sf.read(io.BytesIO(data), dtype="int16")
    assert sr == 16000 and np.array_equal(audio, np.arange(100, dtype=np.int16))


def test_wav_header_streaming_is_44_bytes() -> None:
    assert len(wav_header(sample_rate=24000)) == 44
