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
from tests.conftest import ServerThread
from tests.transport.conftest import collect

pytestmark = pytest.mark.slow


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
