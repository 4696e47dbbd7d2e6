"""The bot-framework plugins stay optional: the server never imports Pipecat or LiveKit, and
each plugin imports only its framework, the standard library and ``websockets`` (so neither
needs the other, and neither loads the server's models). Runs without the frameworks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.imports import top_level_imports

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pipecat", "livekit")
ALLOWED = {  # plugin package -> third-party top-level modules it may import
    "pipecat_emostream": {"pipecat", "loguru", "websockets"},  # loguru: pipecat's own logger
    "livekit_emostream": {"livekit", "websockets"},
}


def test_the_server_package_imports_no_framework() -> None:
    for path in (ROOT / "server" / "emostream").rglob("*.py"):
        assert not top_level_imports(path) & set(FRAMEWORKS), path


def test_each_plugin_imports_only_its_framework() -> None:
    for package, allowed in ALLOWED.items():
        for path in (ROOT / "plugins" / package).rglob("*.py"):
            third_party = {m for m in top_level_imports(path) if m not in sys.stdlib_module_names
                           and m not in {"__future__", package}}  # fmt: skip
            assert third_party <= allowed, (path, third_party - allowed)


def test_importing_the_server_loads_no_framework() -> None:
    code = ("import sys, emostream.cli, emostream.transport.app; "
            f"print([m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)  # fmt: skip
    assert out.stdout.strip() == "[]"
