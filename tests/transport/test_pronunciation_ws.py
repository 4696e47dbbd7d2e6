"""Pronunciation through the real server and the shipped acoustic model: a dictionary named by
two streams at once gives both its units, a stream that names none keeps the front end's; an
inline pinyin override flips what a polyphone is read as, token by token too; captions name
the word as written."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from emostream.config import Settings
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav
from tests.transport.conftest import collect

pytestmark = pytest.mark.slow
CLIP_TEXT = "This is my own voice, and I would like the stream to use it from now on."


@pytest.fixture(scope="module")
def fs2_server(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.transport.app import create_app

    settings = Settings(data_dir=str(tmp_path_factory.mktemp("pron-ws")), acoustic="on")
    family = load_acoustic_family(settings)
    assert isinstance(family, AcousticFamily)
    stock = [v for v in family.stock_voices() if v.info.id in ("af_heart", "zf_xiaoxiao")]
    catalog = VoiceCatalog([joe, *stock])
    catalog.family = family
    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        yield srv


async def stream(url: str, start: dict[str, Any], pieces: list[str]) -> list[dict[str, Any]]:
    async with websockets.connect(url, compression=None) as ws:
        await ws.send(json.dumps({"type": "start", "timestamps": True, "word_timestamps": True,
                                  "format": {"codec": "pcm_s16le", "sample_rate": 24000},
                                  **start}))  # fmt: skip
        for piece in pieces:
            await ws.send(json.dumps({"type": "text", "text": piece}))
        await ws.send(json.dumps({"type": "end"}))
        events, _ = await collect(ws, timeout=120)
    return events


def units(events: list[dict[str, Any]]) -> list[str]:
    return [u["unit"] for e in events if e["type"] == "timestamps" for u in e["units"]]


def words(events: list[dict[str, Any]]) -> list[str]:
    return [w["word"] for e in events if e["type"] == "words" for w in e["words"]]


def has_run(seq: list[str], run: list[str]) -> bool:
    return any(seq[i : i + len(run)] == run for i in range(len(seq) - len(run) + 1))


async def test_a_dictionary_for_every_stream_that_names_it(fs2_server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=fs2_server.url, timeout=30) as client:
        r = await client.post("/v1/pronunciation-dictionaries", json={"name": "names", "entries": [
            {"word": "Nguyen", "ipa": "/ˈzɔːɡ/"}, {"word": "行长", "pinyin": "xing2 chang2"}]})
        did = r.json()["id"]
    start = {"voice": "af_heart", "pronunciation_dictionaries": [did]}
    one, two, plain = await asyncio.gather(
        stream(fs2_server.ws_url, start, ["Please call Nguyen today."]),
        stream(fs2_server.ws_url, {**start, "voice": "zf_xiaoxiao"},
               ["NGU", "YEN", " 是", "行", "长。"]),  # token by token, the word split
        stream(fs2_server.ws_url, {"voice": "af_heart"}, ["Please call Nguyen today."]),
    )  # fmt: skip
    zog = ["z", "ˈ", "ɔ", "ː", "ɡ"]
    assert has_run(units(one), zog) and has_run(units(two), zog)
    assert not has_run(units(plain), zog)  # no dictionary named: espeak's reading
    assert has_run(units(two), ["zh:x", "zh:ing", "zh:ch", "zh:ang"])
    assert words(one) == ["Please", "call", "Nguyen", "today"]  # as written
    assert "NGUYEN" in words(two)
    for events in (one, two, plain):
        assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"]


async def test_inline_pinyin_flips_a_polyphone(fs2_server: ServerThread) -> None:
    start = {"voice": "zf_xiaoxiao"}
    default = await stream(fs2_server.ws_url, start, ["我在银行工作。"])
    flipped = await stream(fs2_server.ws_url, start, ["我在银{", "行|xi", "ng2}工作。"])
    assert has_run(units(default), ["zh:in", "zh:h", "zh:ang"])
    assert has_run(units(flipped), ["zh:in", "zh:x", "zh:ing"])
    assert words(flipped) == list("我在银行工作")
    segments = [e["text"] for e in flipped if e["type"] == "segment"]
    assert "".join(segments) == "我在银行工作。"  # the markup is not shown


async def test_overrides_with_a_voice_per_language(fs2_server: ServerThread) -> None:
    """The language cut goes round overrides: a pinned hanzi inside English is cut out whole
    and read as pinned by the Mandarin voice; an IPA override inside Mandarin stays there."""
    start = {"voices": {"en": "af_heart", "zh": "zf_xiaoxiao"}, "pronunciation": "inline"}
    events = await stream(fs2_server.ws_url, start,
                          ["I think {行|xing2} is the word. 我的朋友{Nguyen|/ˈzɔːɡ/}在银{行|xing2}工作。"])
    assert events[0]["type"] == "started"
    assert events[0]["pronunciation"] == ["pinyin", "ipa", "respelling"]
    said = [(e["text"], e["voice"], e["language"]) for e in events if e["type"] == "segment"]
    assert said == [("I think", "af_heart", "en"), ("行", "zf_xiaoxiao", "zh"),
                    ("is the word.", "af_heart", "en"),
                    ("我的朋友Nguyen在银行工作。", "zf_xiaoxiao", "zh")]  # fmt: skip
    seq = units(events)
    assert sum(seq[i : i + 2] == ["zh:x", "zh:ing"] for i in range(len(seq))) == 2
    assert has_run(seq, ["z", "ˈ", "ɔ", "ː", "ɡ"])  # read by the Mandarin voice, as given
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"]
    async with httpx.AsyncClient(base_url=fs2_server.url, timeout=120) as client:
        did = (await client.post("/v1/pronunciation-dictionaries", json={"name": "n", "entries": [
            {"word": "Nguyen", "ipa": "/wɪn/"}]})).json()["id"]  # fmt: skip
        r = await client.post("/v1/audio/speech", json={
            "input": "Hi Nguyen. 你好。", "voice": "joe", "voices": {"zh": "zf_xiaoxiao"},
            "pronunciation_dictionaries": [did], "response_format": "wav"})  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.headers["x-emostream-voices"] == "en=joe,zh=zf_xiaoxiao"
    assert r.headers["x-emostream-pronunciation-skipped"] == "ipa"  # joe speaks the English


async def test_a_clone_named_by_its_name_reads_overrides(fs2_server: ServerThread,
                                                        joe: PiperVoice) -> None:  # fmt: skip
    wav = await asyncio.to_thread(clip_wav, joe, CLIP_TEXT)
    async with httpx.AsyncClient(base_url=fs2_server.url, timeout=120) as client:
        r = await client.post("/v1/voices", files={"file": ("me.wav", wav, "audio/wav")},
                              data={"name": "Pron Voice"})  # fmt: skip
        assert r.status_code == 201, r.text
        clone_id = r.json()["id"]
        speech = await client.post("/v1/audio/speech", json={
            "input": "我在银{行|hang7}工作。", "voice": "pron voice", "response_format": "wav"})
        assert speech.status_code == 400  # the clone reads pinyin: a bad one is refused
        assert speech.json()["error"]["code"] == "bad_pronunciation"
    events = await stream(fs2_server.ws_url, {"voice": "Pron Voice", "pronunciation": "inline"},
                          ["我在银{行|xing2}工作。"])  # fmt: skip
    assert events[0]["voice"] == clone_id
    assert events[0]["pronunciation"] == ["pinyin", "ipa", "respelling"]
    assert has_run(units(events), ["zh:in", "zh:x", "zh:ing"])
    assert events[-1]["type"] == "done"
