"""The code's layout rules (CONTRIBUTING.md, "Architecture"), read from the sources: no import
cycle among the Python package's modules, lazy imports inside functions included."""
import ast
from pathlib import Path
from typing import Dict, List, Set

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "softdtw_torch"


def _modules() -> Dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not "__init__")."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that module ``name`` imports anywhere in its body: ``from X import y``
    counts as an import of ``X.y`` when that is a module, else of ``X``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
    return found - {name}


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_lazy_and_relative_imports():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    # a lazy import inside a function (barycenter's SoftDTWKMeans), relative imports of a module and
    # of a name, from a subpackage one level up
    assert "softdtw_torch.clustering" in graph["softdtw_torch.barycenter"]
    assert "softdtw_torch._fake" in graph["softdtw_torch._ops"]
    assert "softdtw_torch._extension" in graph["softdtw_torch._fake.hydra"]
    assert "softdtw_torch._fake.minirocket" in graph["softdtw_torch._fake.multirocket"]


def test_no_import_cycle_in_the_package():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []
