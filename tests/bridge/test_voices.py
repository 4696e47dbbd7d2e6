"""``emostream danmaku --voices en=...,zh=...``: one bridge speaks a bilingual chat, each
part of a line in its language's voice (the EmoStream voices on a real server, loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile as sf

from emostream.bridge.danmaku import voices_option
from emostream.text.languages import segment_language
from emostream.voices.base import Voice
from tests.conftest import ServerThread

VOICES = "en=af_heart,zh=zf_xiaoxiao"


def test_the_flag_is_lang_voice_pairs() -> None:
    assert voices_option(VOICES) == {"en": "af_heart", "zh": "zf_xiaoxiao"}
    assert voices_option(" zh = zm_yunxi ") == {"zh": "zm_yunxi"}
    for bad in ("af_heart", "en=", "=af_heart", "en=a,en=b", "en=a,,zh=b"):
        with pytest.raises(ValueError, match="--voices"):
            voices_option(bad)


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog, load_acoustic_family

    settings = Settings(data_dir=str(tmp_path_factory.mktemp("bilingual")), acoustic="on")
    family = load_acoustic_family(settings)
    assert family is not None
    stock = [v for v in family.stock_voices() if v.info.id in ("af_heart", "zf_xiaoxiao")]
    catalog = VoiceCatalog(list[Voice](stock))
    catalog.family = family
    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        yield srv


def danmaku(url: str, lines: str, *flags: str, out: Path) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "emostream", "danmaku", "--url", url, "-o", str(out), *flags],
        input=lines.encode(), capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]


@pytest.mark.slow
def test_one_bridge_speaks_each_language_in_its_voice(
    bilingual: ServerThread, tmp_path: Path
) -> None:
    lines = ('{"text": "Hello everyone, 大家好！", "id": "m1"}\n'
             '{"text": "这个 bug 太离谱了", "id": "m2"}\n'
             '{"text": "GG well played", "id": "m3"}\n')  # fmt: skip
    events = danmaku(bilingual.ws_url, lines, "--voices", VOICES, out=tmp_path / "chat.wav")
    started = [e for e in events if e["type"] == "started"]
    assert len(started) == 3
    assert all(e["voices"] == {"en": "af_heart", "zh": "zf_xiaoxiao"} for e in started)
    segments = [(e["text"], e["language"], e["voice"]) for e in events if e["type"] == "segment"]
    assert segments == [
        ("Hello everyone,", "en", "af_heart"), ("大家好!", "zh", "zf_xiaoxiao"),
        ("这个 bug 太离谱了", "zh", "zf_xiaoxiao"), ("GG well played", "en", "af_heart")]  # fmt: skip
    assert all(segment_language(str(text)) == lang for text, lang, _ in segments)
    assert events[-1]["event"] == "exit" and events[-1]["spoken"] == 3
    pcm, rate = sf.read(tmp_path / "chat.wav", dtype="int16")
    assert rate == 24000 and len(pcm) > 3 * 24000


@pytest.mark.slow
def test_a_voice_that_cannot_speak_its_language_is_refused_per_line(
    bilingual: ServerThread, tmp_path: Path
) -> None:
    events = danmaku(bilingual.ws_url, "你好\n", "--voices", "zh=af_heart", out=tmp_path / "x.wav")
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["unsupported_language"]
    assert "'af_heart' does not speak 'zh'" in str(errors[0]["message"])
    assert events[-1]["event"] == "exit" and events[-1]["spoken"] == 0
