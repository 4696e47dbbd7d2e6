"""The README's table of voices is the catalogue's data (scripts/gen_voice_table.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from emostream.voices.stock_voices import STOCK_VOICES

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_voice_table", ROOT / "scripts/gen_voice_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_table_is_the_catalogue() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == _generator().render(readme), (
        "README.md's voice table is out of date with emostream.voices.stock_voices: run "
        "PYTHONPATH=server .venv/bin/python scripts/gen_voice_table.py and commit README.md"
    )
    for voice in STOCK_VOICES:  # every named voice, with its language, gender, description
        assert f"| `{voice.id}`" in readme and voice.description in readme


def test_the_check_can_fail() -> None:
    gen = _generator()
    stale = f"x\n{gen.START}\n| old |\n{gen.END}\ny"
    assert gen.render(stale) != stale and gen.render(gen.render(stale)) == gen.render(stale)
    with pytest.raises(ValueError, match="markers"):
        gen.render("no table here")
