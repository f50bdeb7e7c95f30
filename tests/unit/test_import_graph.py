"""The import graph of slfs/: no circle between modules (function-level and type-only imports
counted: a circle hidden behind one is still a circle), and no package importing one above it
(protocol -> session -> model -> fs/control -> daemon -> cli; world and local below model; client
and mcp beside, on the control socket)."""

from __future__ import annotations

import ast
from pathlib import Path

SLFS = Path(__file__).resolve().parents[2] / "slfs"

# Small modules at the top of slfs/ that any layer may use: they import only each other.
BASE = {"slfs", "paths", "jsontext", "backoff", "winpaths", "addresses", "stats", "status_text", "registry",
        "holders", "gcpause", "event_types", "debug_hooks"}
# What each package may import besides BASE.
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "sources": set(),
    "world": {"protocol"},
    "local": {"world", "protocol"},
    "session": {"protocol"},
    "sim": {"protocol"},
    "model": {"protocol", "session", "world", "local", "sources"},
    "fs": {"model", "world", "local", "protocol"},
    "control": {"model", "world", "local", "protocol"},
    "daemon": {"fs", "control", "model", "local"},
    "client": {"protocol", "world", "sources"},
    "mcp": {"client", "protocol"},
    "cli": {"client", "mcp", "daemon", "model", "protocol", "world", "sim"},
    "__main__": {"cli"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SLFS.rglob("*.py"):
        parts = list(path.relative_to(SLFS.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The slfs modules `name` imports, wherever in the file (a package's `from . import x` is x)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_no_module_imports_itself_back() -> None:
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_package_imports_a_layer_above_it() -> None:
    wrong = set()
    for module, targets in _graph().items():
        mine = _package(module)
        allowed = (ALLOWED.get(mine, set()) if mine not in BASE else set()) | BASE | {mine}
        for target in targets:
            if _package(target) not in allowed:
                wrong.add(f"{module} imports {target}")
    assert sorted(wrong) == []


def test_every_package_has_a_place() -> None:
    assert {_package(m) for m in _modules()} <= set(ALLOWED) | BASE
