from __future__ import annotations

import shutil
from pathlib import Path

from emostream.config import Settings
from emostream.voices import versions


def test_front_end_digest_follows_the_text_sources(tmp_path: Path) -> None:
    src = Path(versions.__file__).resolve().parents[1] / "text"
    copy = tmp_path / "text"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert versions.front_end_digest(copy) == versions.front_end_digest()
    mandarin = copy / "zh" / "g2p.py"  # a module of a sub-package counts too
    mandarin.write_text(mandarin.read_text() + "\n# a polyphone fixed\n")
    assert versions.front_end_digest(copy) != versions.front_end_digest()


def test_acoustic_version_names_the_front_end() -> None:
    version = versions.acoustic_version(Settings())
    assert version.endswith(f"front end {versions.front_end_digest()}")


def test_acoustic_version_names_how_effort_is_applied() -> None:
    """Loudness is applied after the model (voices.effort): a change there changes the audio of
    every energy and emotion request, so the phrase cache's keys must change with it."""
    assert f"effort {versions.effort_digest()}" in versions.acoustic_version(Settings())
    assert len(versions.effort_digest()) == 16
