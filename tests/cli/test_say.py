"""``emostream say`` through a running server (the session's joe server), and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from emostream.cli import main, parser
from emostream.cli.say import start_message
from tests.conftest import ServerThread, free_port


def test_say_url_writes_a_wav(server: ServerThread, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "hello.wav"
    args = ["say", "--url", server.ws_url, "--voice", "joe", "Hello from the server.", "-o"]
    assert main([*args, str(out), "--speed", "1.1"]) == 0
    audio, rate = sf.read(out)
    assert rate == 24000 and 0.8 < len(audio) / rate < 4.0
    assert "with joe" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "x.pcm"), "--sample-rate", "16000"]) == 0
    assert 0.8 < (tmp_path / "x.pcm").stat().st_size / 2 / 16000 < 4.0


def test_say_to_stdout_when_piped(server: ServerThread) -> None:
    """A subprocess: the real stdout is a pipe, so the audio goes there (a streamed WAV)."""
    cmd = [sys.executable, "-m", "emostream", "say", "--url", server.url, "--voice", "joe", "Hi!"]
    done = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout[:4] == b"RIFF" and len(done.stdout) > 44 + 2 * 24000 // 4


def test_say_needs_somewhere_to_put_the_audio(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["say", "Hello"]) == 2
    assert "where should the audio go?" in capsys.readouterr().err


def test_say_refusals_are_one_line(server: ServerThread, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "never.wav"
    assert main(["say", "--url", server.ws_url, "--voice", "jo", "Hi.", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown_voice" in err and "did you mean joe" in err and len(err) < 300
    assert not out.exists()  # nothing written for a refused start
    assert main(["say", "--url", server.ws_url, "--voice", "joe", "--emotion", "happy", "Hi.",
                 "-o", str(out)]) == 2  # fmt: skip
    assert "unsupported_control" in capsys.readouterr().err
    gone = f"ws://127.0.0.1:{free_port()}/v1/stream"
    assert main(["say", "--url", gone, "Hi.", "-o", str(out)]) == 1
    assert "cannot reach" in capsys.readouterr().err and not out.exists()


def test_the_clients_import_no_model_code() -> None:
    """``say``, ``voices`` and ``clone`` start fast: no numpy, no server package."""
    code = ("import sys, emostream.cli, emostream.cli.say, emostream.cli.catalog; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'onnxruntime', 'starlette', 'torch') or m.startswith(('emostream.transport', "
            "'emostream.stream', 'emostream.engine')))))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    assert json.loads(done.stdout) == []


def test_the_start_say_sends() -> None:
    def start(*argv: str) -> dict[str, object]:
        args = parser().parse_args(["say", *argv])
        return start_message(args, args.text)

    assert start("Hello", "-o", "x.wav") == {
        "type": "start",
        "format": {"codec": "pcm_s16le", "sample_rate": 24000},
        "cache": False,
    }
    zh = start("你好，欢迎", "-o", "x.wav", "--speed", "1.2", "--emotion", "happy")
    assert zh["voice"] == "zf_xiaoxiao" and zh["speed"] == 1.2 and zh["emotion"] == "happy"
    assert start("你好", "--voice", "My Voice", "-o", "x")["voice"] == "My Voice"
    assert "cache" not in start("Hi", "--play") and "cache" not in start("Hi", "--cache", "-o", "x")


def test_say_sends_overrides_verbatim(server: ServerThread, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Braces reach the server as typed: joe reads respellings, and names an IPA override it
    reads as written (the rest is spoken)."""
    out = str(tmp_path / "o.wav")
    say = ["say", "--url", server.ws_url, "--voice", "joe"]
    assert main([*say, "Ask {Nguyen|win}.", "-o", out]) == 0
    assert "unsupported_control" not in capsys.readouterr().err
    assert main([*say, "Ask {Nguyen|/wɪn/}.", "-o", out]) == 0
    err = capsys.readouterr().err
    assert "unsupported_control" in err and "'{Nguyen|/wɪn/}' is read as written" in err
    assert sf.read(out)[0].size > 0


def test_say_help_shows_the_override_syntax() -> None:
    help_text = subprocess.run([sys.executable, "-m", "emostream", "say", "--help"],
                               capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "{行|hang2} pinyin, {Nguyen|/wɪn/} IPA, {Nguyen|win} respelling" in " ".join(
        help_text.split()
    )
