"""Word timestamps (``"word_timestamps": true``): the protocol, the timeline and the real
server, for the embedded voice and the EmoStream voices in English and Mandarin."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import websockets

from emostream.codec.packetizer import OutputFormat
from emostream.engine.runner import ThreadRunner
from emostream.stream.streamer import Event, Packet, UtteranceRequest, stream_utterance
from emostream.transport.websocket.protocol import (
    BeginUtterance,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.voices.base import Controls, Latent, VoiceInfo
from emostream.voices.piper_voice import PiperVoice
from emostream.voices.words import align_words, written_words
from tests.conftest import ServerThread
from tests.transport.conftest import collect

WORDY = VoiceInfo("wordy", "test", "en", 22050, ("speed",), word_timestamps=True)
MUTE = VoiceInfo("mute", "test", "en", 22050, ("speed",))  # cannot time words


# ------------------------------------------------------------------ protocol (sans I/O)
def proto() -> SessionProtocol:
    return SessionProtocol(lookup_voice={"wordy": WORDY, "mute": MUTE}.get, default_voice="wordy")


def send(p: SessionProtocol, **msg: Any) -> list[object]:
    return list(p.receive_text(json.dumps(msg)))


def test_started_says_whether_the_voice_times_words_and_only_when_asked() -> None:
    (plain,) = send(proto(), type="start")
    assert isinstance(plain, BeginUtterance)
    assert "word_timestamps" not in plain.started_event and not plain.request.word_timestamps
    (asked,) = send(proto(), type="start", word_timestamps=True)
    assert isinstance(asked, BeginUtterance)
    assert asked.started_event["word_timestamps"] is True and asked.request.word_timestamps
    (mute,) = send(proto(), type="start", voice="mute", word_timestamps=True)
    assert isinstance(mute, BeginUtterance)
    assert mute.started_event["word_timestamps"] is False and not mute.request.word_timestamps
    (off,) = send(proto(), type="start", word_timestamps=False)
    assert isinstance(off, BeginUtterance) and "word_timestamps" not in off.started_event
    assert not off.request.word_timestamps
    (bad,) = send(proto(), type="start", word_timestamps="yes")
    assert isinstance(bad, SendError) and bad.code == "bad_value"
    assert "word_timestamps" in bad.message


def test_segment_sources_point_into_the_request_text_as_sent() -> None:
    p = proto()
    send(p, type="start", word_timestamps=True)
    pieces = ["Ｈｅｌｌｏ  Tom", " & Jerry...", " Next one", " is here! 你好，", "世界。"]
    request = "".join(pieces)
    queued: list[QueueSegments] = []
    for piece in pieces:
        queued += [a for a in send(p, type="text", text=piece) if isinstance(a, QueueSegments)]
    queued += [a for a in send(p, type="end") if isinstance(a, QueueSegments)]
    texts = [t for q in queued for t in q.texts]
    sources = [s for q in queued for s in q.sources]
    assert len(texts) == len(sources) >= 3
    placed = []
    for text, source in zip(texts, sources, strict=True):
        for w in written_words(text):
            start, end, written = source.span(w.start, w.end)
            assert request[start:end] == written
            placed.append(written)
    # Every word as the client wrote it (the normaliser's "and" is the "&" that was sent).
    assert placed == ["Ｈｅｌｌｏ", "Tom", "&", "Jerry", "Next", "one", "is", "here",
                      "你", "好", "世", "界"]  # fmt: skip
    # Without word timestamps, nothing is tracked.
    q = proto()
    send(q, type="start")
    (plain,) = send(q, type="text", text="Hello there. ")
    assert isinstance(plain, QueueSegments) and plain.sources == ()


# ------------------------------------------------------------------ the timeline (streamer)
class LetterVoice:
    """A voice with one unit per letter (a few frames each, varying) and constant audio."""

    hop_length = 256
    context_frames = 2

    def __init__(self, info: VoiceInfo) -> None:
        self.info = info

    def acoustic(self, text: str, controls: Controls) -> Latent:
        units = ["^", *[c.lower() if c.isalpha() else " " for c in text], "$"]
        frames = np.array([2 + (ord(u) % 5) for u in units], dtype=np.int64)
        return Latent(np.zeros((4, int(frames.sum())), np.float32), frames, units)

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return np.full(frames.shape[-1] * self.hop_length, 0.1, dtype=np.float32)


class WordyLetterVoice(LetterVoice):
    def word_units(self, text: str, latent: Latent) -> list[Any]:
        return align_words(text, latent.units, lambda word: tuple(word.lower()))


async def run_stream(voice: LetterVoice, texts: list[str], rate: int) -> list[Packet | Event]:
    async def segments() -> AsyncIterator[str]:
        for t in texts:
            yield t

    runner = ThreadRunner(workers=1)
    request = UtteranceRequest(
        voice=voice,  # type: ignore[arg-type]
        fmt=OutputFormat(codec="pcm_s16le", sample_rate=rate),
        word_timestamps=True,
    )
    try:
        return [item async for item in stream_utterance(request, segments(), runner)]
    finally:
        runner.close()


@pytest.mark.parametrize("rate", [48000, 24000, 16000])
async def test_word_times_are_exact_samples_on_the_stream_timeline(rate: int) -> None:
    voice = WordyLetterVoice(WORDY)
    texts = ["Hello there, tom.", "Second segment here.", "End"]
    items = await run_stream(voice, texts, rate)
    offset = 0  # input samples before the segment
    received = 0  # output samples before the event
    seen = 0
    for item in items:
        if isinstance(item, Packet):
            received += item.samples
            continue
        if item.body["type"] != "words":
            continue
        text = texts[item.body["index"]]
        latent = voice.acoustic(text, Controls())
        bounds = np.concatenate([[0], np.cumsum(latent.unit_frames)])
        for word, expected in zip(item.body["words"], written_words(text), strict=True):
            assert (word["word"], word["char_start"], word["char_end"]) == (
                expected.text, expected.start, expected.end,
            )  # fmt: skip
            # Unit 0 is "^", then one unit per character.
            start = round((offset + int(bounds[1 + expected.start]) * 256) * rate / 22050)
            end = round((offset + int(bounds[1 + expected.end]) * 256) * rate / 22050)
            assert (word["start_sample"], word["end_sample"]) == (start, end)
            assert word["start_ms"] == round(1000 * start / rate, 3)
            assert word["start_sample"] >= received  # sent before the audio it describes
        offset += latent.num_frames * 256
        seen += 1
    assert seen == len(texts)
    assert received == round(offset * rate / 22050)  # the final packet's padding is excluded


async def test_a_voice_that_cannot_time_words_sends_none() -> None:
    items = await run_stream(LetterVoice(MUTE), ["Hello there."], 24000)
    kinds = [i.body["type"] for i in items if isinstance(i, Event)]
    assert kinds == ["segment"]


# ------------------------------------------------------------------ over the real server
def connect(url: str) -> Any:
    return websockets.connect(url, compression=None, max_size=None)


async def speak(
    url: str, pieces: list[str], *, voice: str | None = None, words: bool = True, rate: int = 24000
) -> tuple[list[dict[str, Any]], npt.NDArray[np.float32], list[int]]:
    """Events, PCM audio, and for each event the samples received before it."""
    start: dict[str, Any] = {"type": "start", "format": {"codec": "pcm_s16le", "sample_rate": rate}}
    if voice:
        start["voice"] = voice
    if words:
        start["word_timestamps"] = True
    async with connect(url) as ws:
        await ws.send(json.dumps(start))
        for piece in pieces:
            await ws.send(json.dumps({"type": "text", "text": piece}))
        await ws.send(json.dumps({"type": "end"}))
        events: list[dict[str, Any]] = []
        before: list[int] = []
        chunks: list[bytes] = []
        received = 0
        async with asyncio.timeout(120):
            while not events or events[-1]["type"] not in ("done", "error"):
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    chunks.append(msg)
                    received += len(msg) // 2
                else:
                    events.append(json.loads(msg))
                    before.append(received)
    audio = np.frombuffer(b"".join(chunks), dtype=np.int16).astype(np.float32) / 32768
    return events, audio, before


def check_words(
    events: list[dict[str, Any]],
    audio: npt.NDArray[np.float32],
    before: list[int],
    request: str,
    expected: list[str],
    rate: int = 24000,
) -> list[dict[str, Any]]:
    """The words events: in order, inside the audio, sent before their audio, covering the
    request text word for word, and on speech (not on silence)."""
    assert events[0]["type"] == "started" and events[0]["word_timestamps"] is True
    assert events[-1]["type"] == "done" and not events[-1]["cancelled"]
    words: list[dict[str, Any]] = []
    for i, e in enumerate(events):
        if e["type"] == "words":
            assert events[i - 1] == {**events[i - 1], "type": "segment", "index": e["index"]}
            assert all(w["start_sample"] >= before[i] for w in e["words"])
            words += e["words"]
    assert [w["word"] for w in words] == expected
    for w in words:
        assert request[w["char_start"] : w["char_end"]] == w["word"]
        assert 0 <= w["start_sample"] <= w["end_sample"] <= len(audio)
        assert abs(w["start_ms"] - 1000 * w["start_sample"] / rate) < 1e-3
        assert abs(w["end_ms"] - 1000 * w["end_sample"] / rate) < 1e-3
    for a, b in pairwise(words):
        assert a["end_sample"] <= b["start_sample"] and a["char_end"] <= b["char_start"]
    # On the audio timeline: each word's stretch holds speech.
    for w in words:
        if w["end_sample"] - w["start_sample"] >= rate // 20:
            stretch = audio[w["start_sample"] : w["end_sample"]]
            assert np.sqrt(np.mean(stretch**2)) > 0.01, w
    done = events[-1]
    assert abs(done["sent_samples"] - done["audio_ms"] * rate / 1000) < 3
    assert done["words_sent"] == words
    return words


async def test_embedded_voice_words_over_the_socket(server: ServerThread) -> None:
    pieces = ["Hello there, ", "Ｔｏｍ & Jerry!", "  Out of the way,", " it's 9:05 in 2026."]
    request = "".join(pieces)
    events, audio, before = await speak(server.ws_url, pieces)
    check_words(events, audio, before, request,
                ["Hello", "there", "Ｔｏｍ", "&", "Jerry", "Out", "of", "the", "way", "it's",
                 "9:05", "in", "2026"])  # fmt: skip


async def test_without_asking_nothing_changes(server: ServerThread) -> None:
    events, _, _ = await speak(server.ws_url, ["Hello there, old friend."], words=False)
    assert "word_timestamps" not in events[0]
    assert all(e["type"] != "words" for e in events)
    assert set(events[-1]) == {"type", "audio_ms", "first_audio_ms", "rtf", "cancelled",
                               "segments"}  # fmt: skip


LONG = (
    "This sentence is long on purpose, so that there is plenty of audio still to come. "
    "We will interrupt it as soon as some audio has arrived, the way a user barges in on a "
    "voice bot. If the cancel did not work, you would hear all of this part, and then this "
    "one too, which goes on for quite a while longer than it needs to."
)


async def test_cancel_reports_the_audio_and_the_words_sent(server: ServerThread) -> None:
    rate = 16000
    async with connect(server.ws_url) as ws:
        await ws.send(json.dumps({"type": "start", "word_timestamps": True,
                                  "format": {"codec": "pcm_s16le", "sample_rate": rate}}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": LONG}))
        await ws.send(json.dumps({"type": "end"}))
        received = 0
        words: list[dict[str, Any]] = []
        async with asyncio.timeout(60):
            # Half a second of audio and the whole first word, then barge in (under load the
            # first word can end after 0.5 s of received audio: the suite failed that way once).
            while received < rate // 2 or not words or received < words[0]["end_sample"]:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    received += len(msg) // 2
                elif json.loads(msg)["type"] == "words":
                    words += json.loads(msg)["words"]
        await ws.send(json.dumps({"type": "cancel"}))
        events, chunks = await collect(ws)
    received += sum(len(c) for c in chunks) // 2
    words += [w for e in events if e["type"] == "words" for w in e["words"]]
    done = events[-1]
    assert done["cancelled"] is True, "the utterance ended before the cancel: make LONG longer"
    # Every frame sent was a whole 20 ms of audio, and the client got all of them before done.
    assert done["sent_samples"] == received
    assert done["sent_ms"] == round(1000 * received / rate, 3)
    sent = done["words_sent"]
    assert sent == [w for w in words if w["end_sample"] <= received]
    first = [(w["word"], w["start_sample"], w["end_sample"]) for w in words[:3]]
    assert 0 < len(sent) < len(written_words(LONG)), (received, first)
    assert [w["word"] for w in sent] == [w.text for w in written_words(LONG)][: len(sent)]


# ------------------------------------------------------------------ EmoStream voices (slow)
@pytest.fixture(scope="module")
def fs2_server(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog, load_acoustic_family

    settings = Settings(data_dir=str(tmp_path_factory.mktemp("words-fs2")), acoustic="on")
    family = load_acoustic_family(settings)
    assert family is not None
    stock = [v for v in family.stock_voices() if v.info.id in ("af_heart", "zf_xiaoxiao")]
    catalog = VoiceCatalog([joe, *stock])
    catalog.family = family
    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        yield srv


@pytest.mark.slow
async def test_emostream_english_words(fs2_server: ServerThread) -> None:
    pieces = ["Hello ", "there, ", "this is ", "EmoStream. ", "It costs $3.50 today."]
    events, audio, before = await speak(fs2_server.ws_url, pieces, voice="af_heart")
    check_words(events, audio, before, "".join(pieces),
                ["Hello", "there", "this", "is", "EmoStream", "It", "costs", "$3.50", "today"])  # fmt: skip


@pytest.mark.slow
async def test_emostream_mandarin_characters_in_order(fs2_server: ServerThread) -> None:
    text = "我们一起去玩儿吧！我用iPhone拍照，2026年8点见。"
    events, audio, before = await speak(fs2_server.ws_url, [text], voice="zf_xiaoxiao")
    words = check_words(events, audio, before, text,
                        [*"我们一起去玩儿吧我用", "iPhone", *"拍照", "2026", *"年8点见"])  # fmt: skip
    hanzi = [w for w in words if len(w["word"]) == 1 and not w["word"].isdigit()]
    assert all(w["char_end"] - w["char_start"] == 1 for w in hanzi)
    assert all(w["end_sample"] > w["start_sample"] for w in words)
