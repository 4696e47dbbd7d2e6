"""No import cycle among the modules of ``server/emostream``, counting every import statement
wherever it stands: inside functions and under ``if TYPE_CHECKING`` too. A cycle closed by
an import inside a function works only while nothing imports the two modules in the other
order at load time; it also ties the two modules into one unit for every later move."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "emostream"


def _module_names(package: Path) -> dict[str, Path]:
    """Dotted name -> file for every module under ``package`` (a package: its __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(package: Path) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}, for the imports of
    ``package``'s own modules anywhere in a file (``from a import b``: ``a.b`` when that is a
    module, else ``a``; relative imports resolved)."""
    modules = _module_names(package)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here[: len(here) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]  # fmt: skip
            else:
                continue
            for target in targets:
                while target not in modules and "." in target:  # a name inside a module
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    inside = set(component)
    return "; ".join(f"{a} line {line} -> {b}" for a in component
                     for b, line in sorted(graph[a].items()) if b in inside)  # fmt: skip


def test_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 100 and graph["emostream.engine.core"]  # it read the package
    found = cycles(graph)
    assert not found, "import cycles: " + " | ".join(_describe(graph, c) for c in found)


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The cycle that devices.py and engine_process.py (now process.py) had (2026-12-07): each
    imported the other inside a function; and one closed by a relative import at the top of a
    file."""
    pkg = tmp_path / "emostream"
    (pkg / "engine").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "engine" / "__init__.py"):
        init.write_text("")
    (pkg / "engine" / "devices.py").write_text(
        "def client():\n    from emostream.engine.process import EngineHandle\n"
    )
    (pkg / "engine" / "process.py").write_text(
        "def stages():\n    from emostream.engine import devices\n"
    )
    (pkg / "engine" / "a.py").write_text("from . import b\n")
    (pkg / "engine" / "b.py").write_text("import emostream.engine.a\n")
    graph = import_graph(pkg)
    assert graph["emostream.engine.devices"] == {"emostream.engine.process": 2}
    assert sorted(cycles(graph)) == [
        ["emostream.engine.a", "emostream.engine.b"],
        ["emostream.engine.devices", "emostream.engine.process"],
    ]
