"""The import layers of docs/architecture.md hold: no upward import, no cycle between modules."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "sglang_doctor"
# Low to high, as docs/architecture.md lists them; top-level modules (model.py) are layer 0.
LAYERS = ["model", "_speed", "read", "registry", "launch", "fix", "facts", "engine", "policy", "report",
          "pipeline", "ruledev", "cli"]
ENTRY = {"sglang_doctor.__main__"}  # `python -m sglang_doctor` starts the CLI: above every layer


def _module(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else 0


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for n in ast.walk(node))
    return out


def import_edges() -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every run-time import of a package module."""
    modules = {_module(p) for p in PKG.rglob("*.py") if "rules" not in p.relative_to(PKG).parts[:1]}
    edges = []
    for path in PKG.rglob("*.py"):
        if "rules" in path.relative_to(PKG).parts[:1]:
            continue
        me = _module(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("sglang_doctor"):
                for alias in node.names:  # `from pkg import module` names a module
                    full = f"{node.module}.{alias.name}"
                    targets.append(full if full in modules else str(node.module))
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("sglang_doctor")]
            edges += [(me, t, node.lineno) for t in targets if t in modules and t != me]
    return edges


def test_no_relative_imports():
    # Absolute imports name the stage they reach into, which is what the layering reads.
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        assert not rel, f"{path}: relative imports on lines {rel}"


def test_every_package_is_a_declared_layer():
    packages = {p.parent.name for p in PKG.glob("*/__init__.py")}
    assert packages <= set(LAYERS), packages - set(LAYERS)


def test_no_upward_import():
    upward = [f"{a}:{line} imports {b}" for a, b, line in import_edges()
              if a not in ENTRY and _layer(b) > _layer(a)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b, _ in import_edges():
        graph[a].add(b)
    # Tarjan's strongly connected components: any with two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checks_see_a_violation(tmp_path, monkeypatch):
    # The layer test must be able to fail: an upward edge is reported as one.
    assert _layer("sglang_doctor.read.reader") < _layer("sglang_doctor.engine.analyze")
    assert _layer("sglang_doctor.model") == 0 and _layer("sglang_doctor.cli.main") == len(LAYERS) - 1
    edges = import_edges()
    assert any(a == "sglang_doctor.pipeline.run" and b == "sglang_doctor.engine.analyze" for a, b, _ in edges)
