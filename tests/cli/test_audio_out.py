"""Where ``emostream say`` writes: WAV or PCM files, stdout, a player."""

from __future__ import annotations

import io
import os
import shutil
import stat
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from emostream.cli.audio_out import UNKNOWN, FileOut, find_player, open_output

PCM = (np.sin(np.arange(4800) / 10) * 8000).astype("<i2").tobytes()


def test_a_wav_file_gets_its_true_sizes(tmp_path: Path) -> None:
    out = open_output(str(tmp_path / "a.wav"), fmt=None, rate=24000, play=False)
    out.write(PCM[:4000])
    out.write(PCM[4000:])
    out.close()
    audio, rate = sf.read(tmp_path / "a.wav", dtype="int16")
    assert rate == 24000 and audio.tobytes() == PCM
    assert struct.unpack("<I", (tmp_path / "a.wav").read_bytes()[40:44])[0] == len(PCM)


def test_pcm_by_name_or_format(tmp_path: Path) -> None:
    for name, fmt in (("b.pcm", None), ("c.raw", None), ("d.out", "pcm")):
        out = open_output(str(tmp_path / name), fmt=fmt, rate=16000, play=False)
        out.write(PCM)
        out.close()
        assert (tmp_path / name).read_bytes() == PCM


class Pipe(io.BytesIO):
    def seekable(self) -> bool:
        return False


def test_a_pipe_gets_a_streaming_wav() -> None:
    pipe = Pipe()
    out = FileOut(pipe, rate=48000, wav=True, own=False)
    out.write(PCM)
    out.close()
    data = pipe.getvalue()
    assert struct.unpack("<I", data[40:44])[0] == UNKNOWN and data[44:] == PCM
    assert struct.unpack("<I", data[24:28])[0] == 48000


def test_play_feeds_the_first_player_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:  # fmt: skip
    heard = tmp_path / "heard.raw"
    player = tmp_path / "aplay"
    cat = shutil.which("cat")
    player.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\n{cat} > {heard}\n')
    player.chmod(player.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_player(24000) is not None
    out = open_output(str(tmp_path / "e.wav"), fmt=None, rate=24000, play=True)
    out.write(PCM)
    out.close()
    assert heard.read_bytes() == PCM and "-r 24000" in (tmp_path / "args").read_text()
    assert sf.read(tmp_path / "e.wav", dtype="int16")[0].tobytes() == PCM  # and the file


def test_no_player_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match="no audio player found"):
        open_output(None, fmt=None, rate=24000, play=True)
    assert not os.listdir(tmp_path)
