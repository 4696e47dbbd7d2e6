"""What a Python file imports, read from its syntax tree (no import is run): the dependency,
layer, plugin and lab tests all ask this."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

DYNAMIC = {"find_spec", "import_module", "__import__"}


def top_level_imports(paths: Path | Iterable[Path], *, dynamic: bool = False) -> set[str]:
    """Top-level module names the files import anywhere (absolute imports only); with
    ``dynamic`` also the constant names handed to ``find_spec``/``import_module``/``__import__``."""
    found: set[str] = set()
    for path in [paths] if isinstance(paths, Path) else paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif dynamic and isinstance(node, ast.Call) and node.args:
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                arg = node.args[0]
                if called in DYNAMIC and isinstance(arg, ast.Constant):
                    found.add(str(arg.value).split(".")[0])
    return found
