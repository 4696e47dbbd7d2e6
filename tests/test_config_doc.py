"""docs/configuration.md is generated from ``Settings`` and committed: it must be current."""

import dataclasses
import importlib.util
from pathlib import Path

from emostream.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_config_doc", ROOT / "scripts/gen_config_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_md_is_current() -> None:
    committed = (ROOT / "docs/configuration.md").read_text(encoding="utf-8")
    assert committed == _generator().render(), (
        "docs/configuration.md is out of date with emostream.config.Settings: run "
        "PYTHONPATH=server .venv/bin/python scripts/gen_config_doc.py and commit the file"
    )


def test_every_field_is_documented() -> None:
    rows = _generator().describe(Settings)
    assert len(rows) == len(dataclasses.fields(Settings))
    for f, (var, _type, default, description) in zip(dataclasses.fields(Settings), rows):
        assert var.startswith(f"`EMOSTREAM_{f.name.upper()}`")
        assert default and description


def test_shared_comments_and_escaping() -> None:
    rows = {r[0].split("`")[1]: r for r in _generator().describe(Settings)}
    # A field with no comment of its own under its neighbour's block points at it.
    assert "EMOSTREAM_RAY_MIN_REPLICAS" in rows["EMOSTREAM_RAY_MAX_REPLICAS"][3]
    # A trailing comment is the field's own.
    assert "GPUs per model replica" in rows["EMOSTREAM_RAY_MODEL_GPUS"][3]
    # The block of the field above is not borrowed by an unrelated field.
    assert "context" not in rows["EMOSTREAM_LOG_LEVEL"][3].lower()
    assert "<" not in rows["EMOSTREAM_API_KEYS"][3].split("`")[0]
