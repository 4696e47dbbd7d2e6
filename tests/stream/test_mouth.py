"""Mouth shapes from phoneme units and the audio envelope (stream.mouth), alone and in the
streamer's output (``mouth`` events before the audio they cover, one frame per packet)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.codec.packetizer import OutputFormat
from emostream.engine.runner import ThreadRunner
from emostream.stream.mouth import SHAPES, VISEMES, MouthTrack, loudness, mouth_event, viseme_of
from emostream.stream.streamer import Event, Packet, UtteranceRequest, stream_utterance
from emostream.voices.piper_voice import PiperVoice

RATE = 22050
HOP = 256


def tone(seconds: float, db: float) -> npt.NDArray[np.float32]:
    t = np.arange(round(seconds * RATE)) / RATE
    amp = 10 ** (db / 20) * np.sqrt(2)  # RMS at ``db``
    return (amp * np.sin(2 * np.pi * 180 * t)).astype(np.float32)


def test_visemes_of_english_ipa_and_mandarin_units() -> None:
    assert [viseme_of(u) for u in "mɑiuðsɹ"] == ["PP", "aa", "I", "U", "TH", "SS", "RR"]
    assert viseme_of("ˈ") is None and viseme_of("ː") is None  # marks take a neighbour's
    assert viseme_of(",") == viseme_of(" ") == viseme_of("^") == "sil"
    assert [viseme_of(f"zh:{u}") for u in ("b", "f", "ang", "uo", "i", "v", "_m", "er")] == [
        "PP", "FF", "aa", "O", "I", "U", "PP", "E"
    ]
    assert set(SHAPES) == set(VISEMES)


def test_loudness_spans_minus_48_to_minus_18_dbfs() -> None:
    assert loudness(np.zeros(441, np.float32)) == 0.0
    assert loudness(tone(0.02, -60)) == 0.0
    assert loudness(tone(0.02, -33)) == pytest.approx(0.5, abs=0.02)
    assert loudness(tone(0.02, -10)) == 1.0


def utterance() -> tuple[list[str], list[int], npt.NDArray[np.float32]]:
    """Silence, "m", a stressed "a", a comma's pause: units and audio that match."""
    units = ["^", "m", "ˈ", "a", ",", "$"]
    frames = [8, 6, 2, 20, 16, 4]  # 256-sample acoustic frames each
    n = [f * HOP for f in frames]
    pcm = np.concatenate([
        np.zeros(n[0], np.float32), tone(n[1] / RATE, -40), tone((n[2] + n[3]) / RATE, -20),
        np.zeros(n[4] + n[5], np.float32),
    ])  # fmt: skip
    return units, frames, pcm


def frames_of(track: MouthTrack, pcm: npt.NDArray[np.float32], sizes: list[int]) -> list[Any]:
    out = []
    pos = 0
    for size in sizes:
        out += track.push(pcm[pos : pos + size])
        pos += size
    out += track.push(pcm[pos:])
    return out + track.finish()


def test_the_mouth_is_shut_in_silence_and_on_m_and_opens_on_the_vowel() -> None:
    units, unit_frames, pcm = utterance()
    track = MouthTrack(RATE)
    track.add_units(units, unit_frames, hop=HOP, offset=0)
    frames = frames_of(track, pcm, [])
    assert len(frames) == -(-len(pcm) // 441)  # one per 20 ms frame, the last one partial
    ms = lambda f: round(f * HOP / RATE * 1000)
    vowel_from, vowel_to = ms(14) // 20 + 1, ms(36) // 20 - 1
    assert all(f.open == 0.0 and f.viseme == "sil" for f in frames[: ms(8) // 20])
    assert all(f.viseme == "PP" and f.open == 0.0 for f in frames[ms(8) // 20 + 1 : ms(14) // 20])
    vowel = frames[vowel_from : vowel_to + 1]
    assert {f.viseme for f in vowel} == {"aa"}  # the stress mark's frames speak the vowel too
    assert min(f.open for f in vowel[2:]) > 0.8 and max(f.form for f in vowel) > 0
    assert frames[-1].open < 0.05  # closed again in the pause


def test_frames_do_not_depend_on_how_the_audio_is_cut() -> None:
    units, unit_frames, pcm = utterance()
    whole = MouthTrack(RATE)
    whole.add_units(units, unit_frames, hop=HOP, offset=0)
    cut = MouthTrack(RATE)
    cut.add_units(units, unit_frames, hop=HOP, offset=0)
    assert frames_of(whole, pcm, []) == frames_of(cut, pcm, [1, 440, 441, 1000, 7, 3000])


def test_a_later_segment_is_placed_by_its_offset() -> None:
    units, unit_frames, pcm = utterance()
    track = MouthTrack(RATE)
    track.add_units(units, unit_frames, hop=HOP, offset=0)
    track.add_units(units, unit_frames, hop=HOP, offset=len(pcm))
    frames = frames_of(track, np.concatenate([pcm, pcm]), [len(pcm) - 5])
    first = [f.viseme for f in frames[: len(pcm) // 441]]
    second = [f.viseme for f in frames[len(pcm) // 441 + 1 :]]
    assert first.count("aa") >= 10 and second.count("aa") >= 10


def test_mouth_event_times_its_frames_on_the_stream() -> None:
    track = MouthTrack(RATE)
    frames = track.push(tone(0.1, -20))
    event = mouth_event(frames, 7)
    assert event["start_ms"] == 140 and event["frame_ms"] == 20
    assert len(event["open"]) == len(event["form"]) == len(event["viseme"]) == 5


# ------------------------------------------------------------------ in the streamer
async def _one(text: str) -> AsyncIterator[str]:
    yield text


@pytest.fixture(scope="module")
def spoken(joe: PiperVoice) -> list[Packet | Event]:
    async def run() -> list[Packet | Event]:
        runner = ThreadRunner(workers=1)
        request = UtteranceRequest(voice=joe, fmt=OutputFormat("pcm_s16le", 24000), mouth=True)
        items = [x async for x in stream_utterance(request, _one("Hello, my mouth moves."), runner)]
        runner.close()
        return items

    return asyncio.run(run())


def test_the_streamer_sends_one_mouth_frame_per_packet_before_its_audio(
    spoken: list[Packet | Event],
) -> None:
    frames = 0
    packets = 0
    for item in spoken:
        if isinstance(item, Packet):
            packets += 1
            assert packets <= frames, "a packet came before its mouth frame"
        elif item.body["type"] == "mouth":
            assert item.body["start_ms"] == frames * 20
            frames += len(item.body["open"])
    assert frames == packets > 50


def test_the_mouth_opens_where_the_audio_is_voiced(spoken: list[Packet | Event]) -> None:
    pcm = np.frombuffer(
        b"".join(i.data for i in spoken if isinstance(i, Packet)), dtype="<i2"
    ).astype(np.float32) / 32768
    opens = [o for i in spoken if isinstance(i, Event) and i.body["type"] == "mouth"
             for o in i.body["open"]]  # fmt: skip
    levels = [loudness(pcm[k * 480 : (k + 1) * 480]) for k in range(len(opens))]
    voiced = [k for k, lv in enumerate(levels) if lv > 0.5]
    silent = [k for k, lv in enumerate(levels) if lv == 0.0]
    assert voiced and silent
    assert sum(opens[k] > 0.1 for k in voiced) / len(voiced) > 0.8
    assert all(opens[k] < 0.1 for k in silent)
