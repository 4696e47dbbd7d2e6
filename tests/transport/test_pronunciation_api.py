"""Pronunciation dictionaries through the real server: create, list, get, replace, delete per
API key (another key's are not found), every bad entry refused with the entry named and nothing
stored, the limits; named by a stream and by a speech body; the voice joe saying what it does
not read; inline overrides over the OpenAI endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from emostream.text.pron.lexicon import MAX_ENTRIES
from emostream.transport.edge.auth import new_key
from emostream.transport.pronunciation_api import MAX_BODY_BYTES, PREFIX
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect

ENTRIES = [{"word": "Nguyen", "ipa": "/wɪn/"}, {"word": "行长", "pinyin": "hang2 zhang3"},
           {"word": "Siobhan", "respelling": "shiv awn"}]  # fmt: skip


@pytest.fixture(scope="module")
def keyed(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[ServerThread, dict[str, dict[str, str]], Path]]:  # fmt: skip
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    tmp = tmp_path_factory.mktemp("pron")
    alice, alice_entry = new_key("alice")
    bob, bob_entry = new_key("bob")
    (tmp / "keys").write_text(f"{alice_entry.line()}\n{bob_entry.line()}\n", encoding="utf-8")
    settings = Settings(data_dir=str(tmp / "data"), api_keys_file=str(tmp / "keys"))
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv, {n: {"Authorization": f"Bearer {k}"} for n, k in
                    (("alice", alice), ("bob", bob))}, tmp / "data"  # fmt: skip


async def test_crud_per_key(keyed: tuple[ServerThread, dict[str, dict[str, str]], Path]) -> None:
    server, keys, _ = keyed
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post(PREFIX, json={"name": "names", "entries": ENTRIES},
                              headers=keys["alice"])  # fmt: skip
        assert r.status_code == 201, r.text
        made = r.json()
        did = made["id"]
        assert r.headers["location"] == f"{PREFIX}/{did}" and made["entry_count"] == 3
        assert made["entries"][0] == {"word": "Nguyen", "ipa": "/wˈɪn/", "language": "en"}
        assert made["entries"][1] == {"word": "行长", "pinyin": "hang2 zhang3", "language": "zh"}
        listed = (await client.get(PREFIX, headers=keys["alice"])).json()["dictionaries"]
        assert [d["id"] for d in listed] == [did] and "entries" not in listed[0]
        assert (await client.get(PREFIX, headers=keys["bob"])).json() == {"dictionaries": []}
        for method in ("GET", "PUT", "DELETE"):  # bob does not see alice's
            r = await client.request(method, f"{PREFIX}/{did}", headers=keys["bob"],
                                     json={"entries": []})  # fmt: skip
            assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_dictionary"
        r = await client.put(f"{PREFIX}/{did}", json={"entries": ENTRIES[:1]},
                             headers=keys["alice"])  # fmt: skip
        assert r.status_code == 200 and r.json()["name"] == "names"
        got = (await client.get(f"{PREFIX}/{did}", headers=keys["alice"])).json()
        assert got["entry_count"] == 1 and got["updated"] > got["created"]
        # a bad entry: refused, named, nothing stored
        bad = [*ENTRIES, {"word": "行", "pinyin": "hang7"}]
        r = await client.put(f"{PREFIX}/{did}", json={"entries": bad}, headers=keys["alice"])
        assert r.status_code == 400 and r.json()["error"]["param"] == "entries[3].pinyin"
        assert r.json()["error"]["code"] == "bad_entry" and "hang7" in r.json()["error"]["message"]
        got = (await client.get(f"{PREFIX}/{did}", headers=keys["alice"])).json()
        assert got["entry_count"] == 1
        r = await client.post(PREFIX, json={"name": "x", "entries": bad}, headers=keys["alice"])
        assert r.status_code == 400
        r = await client.delete(f"{PREFIX}/{did}", headers=keys["alice"])
        assert r.status_code == 204
        assert (await client.get(PREFIX, headers=keys["alice"])).json() == {"dictionaries": []}
        assert (await client.delete(f"{PREFIX}/{did}", headers=keys["alice"])).status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"entries": ENTRIES}, 400, "bad_entry", "name"),
        ({"name": "x"}, 400, "bad_entry", "entries"),
        ({"name": "x", "entries": [{"word": "a", "ipa": "/ʀ/"}]}, 400, "bad_entry",
         "entries[0].ipa"),
        ({"name": "x", "entries": [{"word": "a", "respelling": "b"}] * (MAX_ENTRIES + 1)}, 400,
         "bad_entry", "entries"),
        ({"name": "x", "entries": [{"word": "a" * 9000, "respelling": "b"}] * 200}, 413,
         "too_large", None),
    ],
)
async def test_refusals(keyed: tuple[ServerThread, dict[str, dict[str, str]], Path],
                        body: dict[str, Any], status: int, code: str, param: str | None) -> None:  # fmt: skip
    server, keys, _ = keyed
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        assert len(json.dumps(body)) > MAX_BODY_BYTES or status != 413
        r = await client.post(PREFIX, json=body, headers=keys["bob"])
        assert r.status_code == status, r.text
        assert r.json()["error"]["code"] == code and r.json()["error"]["param"] == param
        assert (await client.get(PREFIX, headers=keys["bob"])).json() == {"dictionaries": []}
        r = await client.post(PREFIX, content=b"{not json", headers=keys["bob"])
        assert r.status_code == 400 and r.json()["error"]["code"] == "bad_json"


async def test_kept_across_a_server_restart(
    keyed: tuple[ServerThread, dict[str, dict[str, str]], Path], joe: PiperVoice
) -> None:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    server, keys, data = keyed
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post(PREFIX, json={"name": "kept", "entries": ENTRIES[:1]},
                              headers=keys["alice"])  # fmt: skip
        did = r.json()["id"]
    # another server on the same data folder (auth off: every dictionary is the caller's)
    with ServerThread(create_app(Settings(data_dir=str(data)), catalog=VoiceCatalog([joe]))) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
            got = (await client.get(f"{PREFIX}/{did}")).json()
    assert got["name"] == "kept" and got["entries"][0]["word"] == "Nguyen"


async def test_joe_reads_respellings_and_says_what_it_does_not(server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        r = await client.post(PREFIX, json={"name": "names", "entries": ENTRIES})
        did = r.json()["id"]
    async with websockets.connect(server.ws_url, compression=None) as ws:
        await ws.send(json.dumps({"type": "start", "voice": "joe", "word_timestamps": True,
                                  "pronunciation_dictionaries": [did]}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": "Hi Siobhan, {行|hang2} ok."}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await collect(ws)
    started = events[0]
    assert started["type"] == "started" and started["pronunciation"] == ["respelling"]
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["unsupported_control", "unsupported_control"]
    assert "ipa or pinyin" in errors[0]["message"]  # the dictionary's entries it leaves out
    assert errors[1]["span"] == {"text": "{行|hang2}", "char_start": 12, "char_end": 21}
    words = [w["word"] for e in events if e["type"] == "words" for w in e["words"]]
    assert words[:2] == ["Hi", "Siobhan"]  # as written, not the respelling
    assert events[-1]["type"] == "done" and audio
    # the OpenAI endpoint: an inline respelling is read; a bad override refused, named
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        body = {"model": "tts-1", "input": "Hi {Siobhan|shiv awn}.", "response_format": "wav"}
        r = await client.post("/v1/audio/speech", json=body)
        assert r.status_code == 200 and len(r.content) > 10000
        r = await client.post("/v1/audio/speech", json={**body, "pronunciation_dictionaries": [did],
                                                        "input": "Hi Nguyen."})  # fmt: skip
        assert r.status_code == 200 and r.headers["x-emostream-pronunciation-skipped"] == "ipa, pinyin"
        r = await client.post("/v1/audio/speech", json={**body, "input": "Hi {Siobhan|/ʀ/}."})
        err = r.json()["error"]
        assert r.status_code == 400 and err["code"] == "bad_pronunciation" and err["param"] == "input"
        assert "{Siobhan|/ʀ/}" in err["message"]
        r = await client.post("/v1/audio/speech", json={**body, "pronunciation_dictionaries": ["pdict_no"]})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_dictionary"
        r = await client.post("/v1/audio/speech", json={"input": "x", "pronunciation_dictionaries": ["pdict_no"]})
        assert r.status_code == 404  # the native dialect
