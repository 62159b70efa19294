"""The drivers' import graph: no module of stormsuite imports itself
through others (an import inside a function counts: it is a tie all the
same), and the layers hold: parsers and statistics never reach guest or
build code."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "scripts" / \
    "stormsuite"
# Each layer (a subpackage) and the layers it may import. The package's
# own modules (REPO, the storm registry) are below every layer; cli and
# seeds are above them all.
LAYERS = {
    "runfiles": set(),
    "analysis": {"runfiles"},
    "report": {"analysis", "runfiles"},
    "kernel": set(),
    "machines": {"kernel", "runfiles"},
    "lkp": set(),
    "designs": {"machines", "kernel", "report", "analysis", "runfiles"},
    "seeds": {"designs", "machines", "kernel", "report", "analysis",
              "runfiles"},
}
BELOW_ALL = {"", "storms"}

def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports() -> dict[str, set[str]]:
    """module -> the stormsuite modules it imports (from . import x,
    from .x import y, from .. import x, import stormsuite.x)."""
    names = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name.split(".") if path.name == "__init__.py" \
            else name.split(".")[:-1]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                elif (node.module or "").startswith("stormsuite"):
                    base, node.module = [], node.module[len("stormsuite"):]
                    node.module = node.module.lstrip(".") or None
                else:
                    continue
                mod = base + (node.module.split(".") if node.module else [])
                for alias in node.names:
                    target = ".".join(mod + [alias.name])
                    out.add(target if target in names else ".".join(mod))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("stormsuite."):
                        out.add(alias.name[len("stormsuite."):])
        graph[name] = {m for m in out if m in names and m != name} - {""}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    # the reader itself: known edges, so that an empty graph cannot pass
    graph = imports()
    assert "analysis.verdict" in graph["report.compare"]
    assert "kernel.git" in graph["kernel.linux_source"]
    assert "machines.guest" in graph["machines"]
    assert "seeds.common" in graph["seeds.s001"]
    assert "seeds.answers" in graph["seeds.job"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_cycle():
    assert cycles(imports()) == []


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for m in graph[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def layer(module: str) -> str:
    return module.split(".")[0] if "." in module or module in LAYERS \
        else module


def test_every_module_is_in_a_layer():
    top = {m for m in imports() if "." not in m} - set(LAYERS)
    assert top <= BELOW_ALL | {"cli", "__main__"}, top


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a layer not below its own."""
    found = []
    for module, targets in sorted(graph.items()):
        own = layer(module)
        if own not in LAYERS:
            continue
        for target in sorted(targets):
            other = layer(target)
            if not (other in BELOW_ALL or other == own
                    or other in LAYERS[own]):
                found.append(f"{module} imports {target}")
    return found


def test_each_layer_imports_only_the_layers_below_it():
    assert upward({"runfiles.runs": {"storms", "runfiles.result"},
                   "report.show": {"analysis.stats"},
                   "analysis.stats": {"report.plot"}}) == \
        ["analysis.stats imports report.plot"]
    assert upward(imports()) == []


def test_the_layers_do_not_reach_round():
    """Below means below: no layer may reach itself through another."""
    assert cycles({k: set(v) for k, v in LAYERS.items()}) == []
