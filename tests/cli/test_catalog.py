"""``emostream voices`` and ``emostream clone`` against a running server (the session's joe)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emostream.cli import main
from emostream.cli.catalog import table
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, clip_wav, free_port


def test_voices_is_a_table(server: ServerThread, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["voices", "--url", server.ws_url]) == 0
    out, err = capsys.readouterr()
    header, *rows = out.splitlines()
    assert header.split() == ["id", "language", "gender", "description"]
    assert rows[0].split()[:4] == ["joe", "*", "en-US", "male"]  # the server's default
    assert "voices (* the default of its language)" in err
    assert main(["voices", "--url", server.url, "--gender", "female"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == []
    assert main(["voices", "--url", server.url, "--lang", "en", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["defaults"] == {"en": "joe"} and body["voices"][0]["gender"] == "male"


def test_table_cuts_long_descriptions_to_the_width() -> None:
    voices = [{"id": "a", "language": "en-US", "gender": "female", "default": True,
               "description": "word " * 60},
              {"id": "clone_1", "name": "Mine", "type": "cloned", "language": "multi"}]  # fmt: skip
    lines = table(voices, width=80).splitlines()
    assert all(len(line) <= 80 for line in lines) and lines[1].endswith("…")
    assert lines[2].split() == ["Mine", "(clone_1)", "multi", "-"]


def test_clone_uploads_and_names_stay_unique(
    server: ServerThread, joe: PiperVoice, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clip = tmp_path / "me.wav"
    clip.write_bytes(clip_wav(joe, "This is my own voice, and I would like the stream to use it "
                                   "from now on, every single day."))  # fmt: skip
    assert main(["clone", str(clip), "--name", "CLI clone", "--url", server.url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("clone_") and "'CLI clone'" in out
    assert main(["clone", str(clip), "--name", "cli CLONE", "--url", server.url]) == 2
    assert "name_taken" in capsys.readouterr().err
    assert main(["clone", str(tmp_path / "none.wav"), "--name", "x", "--url", server.url]) == 2
    gone = f"http://127.0.0.1:{free_port()}"
    assert main(["clone", str(clip), "--name", "y", "--url", gone]) == 1
    assert "cannot reach" in capsys.readouterr().err
    assert main(["voices", "--url", server.url, "--tag", "cloned"]) == 0
    assert "CLI clone (clone_" in capsys.readouterr().out
