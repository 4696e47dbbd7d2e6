import numpy as np
import pytest

from emostream.codec.packetizer import FormatError, OutputFormat, Packetizer


def tone(seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


@pytest.mark.parametrize("application", ["audio", "lowdelay"])
@pytest.mark.parametrize("rate", [48000, 24000, 16000])
def test_opus_packets_are_20ms_and_decode(rate: int, application: str) -> None:
    import opuslib_next as opus

    p = Packetizer(OutputFormat("opus", rate, application=application), in_rate=22050)  # type: ignore[arg-type]
    sig = tone(1.0, 22050)
    packets: list[bytes] = []
    for i in range(0, len(sig), 1000):  # odd-sized pushes
        packets += p.push(sig[i : i + 1000])
    packets += p.finish()
    assert len(packets) == 50
    assert p.samples_out == pytest.approx(rate, abs=2)
    dec = opus.Decoder(rate, 1)
    pcm = b"".join(dec.decode(pkt, rate // 50) for pkt in packets)
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    assert len(audio) == 50 * rate // 50
    assert 0.15 < np.sqrt(np.mean(audio[rate // 10 :] ** 2)) < 0.25  # the tone's RMS ≈ 0.21


def test_pcm_passthrough_is_exact_without_resampling() -> None:
    p = Packetizer(OutputFormat("pcm_s16le", 24000), in_rate=24000)
    sig = tone(0.05, 24000)  # 2.5 frames
    out = p.push(sig) + p.finish()
    assert [len(x) for x in out] == [960, 960, 960]
    got = np.frombuffer(b"".join(out), dtype=np.int16)
    assert np.array_equal(got[: len(sig)], (sig * 32767).astype(np.int16))
    assert not got[len(sig) :].any()  # padding is silence
    assert p.samples_out == len(sig)


def test_push_after_finish_fails() -> None:
    p = Packetizer(OutputFormat("pcm_s16le", 16000), in_rate=16000)
    p.finish()
    with pytest.raises(RuntimeError):
        p.push(np.zeros(10, dtype=np.float32))


def test_lowdelay_is_celt_only_with_less_lookahead() -> None:
    """CELT-only packets (TOC config 16-31) and 2.5 ms of encoder delay, not 6.5."""
    from emostream.codec.packetizer import opus_lookahead

    audio, celt = OutputFormat("opus", 48000), OutputFormat("opus", 48000, application="lowdelay")
    assert opus_lookahead(audio) == 312 and opus_lookahead(celt) == 120
    assert Packetizer(celt, in_rate=22050).lookahead == 120
    packets = Packetizer(celt, in_rate=22050).push(tone(0.5, 22050))
    assert packets and all(pkt[0] >> 3 >= 16 for pkt in packets)
    speechy = Packetizer(audio, in_rate=22050).push(tone(0.5, 22050))
    assert any(pkt[0] >> 3 < 16 for pkt in speechy)  # "audio" picks SILK or hybrid for it


@pytest.mark.parametrize("bitrate", [24000, 64000])
def test_bitrate_none_is_the_default_and_a_set_one_is_used(bitrate: int) -> None:
    from emostream.codec.packetizer import DEFAULT_BITRATE

    def size(fmt: OutputFormat) -> int:
        p = Packetizer(fmt, in_rate=22050)
        return sum(map(len, p.push(tone(1.0, 22050)) + p.finish()))

    default = size(OutputFormat("opus", 48000, application="lowdelay"))
    assert default == size(OutputFormat("opus", 48000, DEFAULT_BITRATE, application="lowdelay"))
    got = size(OutputFormat("opus", 48000, bitrate, application="lowdelay"))
    assert got * 8 == pytest.approx(bitrate, rel=0.1)  # CELT holds the rate (1 s of tone)


@pytest.mark.parametrize(
    "kw", [{"codec": "mp3"}, {"sample_rate": 22050}, {"bitrate": 10}, {"application": "voip"}]
)
def test_bad_formats(kw: dict[str, object]) -> None:
    with pytest.raises(FormatError):
        OutputFormat(**kw)  # type: ignore[arg-type]


def count_encodes(p: Packetizer) -> list[int]:
    """A list that grows by one each time ``p`` encodes a frame."""
    encoded: list[int] = []
    inner = p._encode

    def counted(frame: np.ndarray) -> bytes:
        encoded.append(1)
        return inner(frame)

    p._encode = counted  # type: ignore[method-assign]
    return encoded


@pytest.mark.parametrize("codec,rate", [("opus", 48000), ("opus", 16000), ("pcm_s16le", 24000)])
def test_push_each_gives_the_same_packets_one_at_a_time(codec: str, rate: int) -> None:
    fmt = OutputFormat(codec, rate)  # type: ignore[arg-type]
    sig = tone(0.6, 22050)
    whole, each = Packetizer(fmt, in_rate=22050), Packetizer(fmt, in_rate=22050)
    first = 18 * 256  # the engine path's first chunk
    encoded = count_encodes(each)
    packets = each.push_each(sig[:first])
    head = next(packets)
    assert len(encoded) == 1  # the first packet left before the chunk's other packets were made
    got = [head, *packets, *each.push(sig[first:]), *each.finish()]
    want = whole.push(sig[:first]) + whole.push(sig[first:]) + whole.finish()
    assert len(want) >= 30 and got == want
    assert each.samples_out == whole.samples_out


def test_push_first_sends_the_first_packets_early_and_the_same_bytes() -> None:
    fmt = OutputFormat("opus", 48000, application="lowdelay")
    sig = tone(1.2, 22050)
    whole, first = Packetizer(fmt, in_rate=22050), Packetizer(fmt, in_rate=22050)
    chunk = 99 * 256  # the light vocoder's first chunk on the GPU engine
    encoded = count_encodes(first)
    packets = first.push_first(sig[:chunk])
    head = next(packets)
    assert len(encoded) == 1  # the first packet left after one frame's encoding
    got = [head, *packets, *first.push(sig[chunk:]), *first.finish()]
    want = whole.push(sig[:chunk]) + whole.push(sig[chunk:]) + whole.finish()
    assert len(want) >= 55 and got == want
