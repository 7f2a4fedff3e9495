"""Imports point down: every module of the package sits in one layer, and may import
only from its own layer or the layers below; no two modules import each other,
directly or round a circle.

The graph is read with ``ast`` from the source tree (module-level and
function-level imports alike), so it sees the imports a run would only make
late. ARCHITECTURE.md describes the same layers in the same order.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The one source folder and the name it is installed under (setup.cfg finds its packages).
SOURCES = {"mpibench": "mpibench"}

# Bottom first. A module belongs to the layer of the longest entry that names it or
# a package above it. faults/ spans three layers: the schedule as data, the
# communicator wrapper that injects it, and the recovery that drives the worker loop.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("mpibench.base",)),
    # real models' gradient tensors and the frameworks' bucketing, as data: no MPI, no arrays
    ("profiles", ("mpibench.profiles",)),
    # the simulated MPI library and its clock: stand-ins for mpi4py, importing nothing of production
    ("simulated MPI", ("mpibench.sim.scheduler", "mpibench.sim.network", "mpibench.sim.p2p", "mpibench.sim.world",
                       "mpibench.sim.collectives", "mpibench.sim.mpi", "mpibench.sim.handles",
                       "mpibench.sim.buffers", "mpibench.sim.ops", "mpibench.sim.requests",
                       "mpibench.sim.handles_p2p", "mpibench.sim.handles_cco", "mpibench.sim.handles_obj",
                       "mpibench.sim.handles_ulfm",
                       "mpibench.sim.threads", "mpibench.sim.process")),
    ("check", ("mpibench.check",)),
    ("kernels", ("mpibench.kernels",)),
    ("fault plans", ("mpibench.faults",)),
    ("sync", ("mpibench.sync",)),
    ("results", ("mpibench.results",)),  # offline: below the engine, so it cannot run training
    ("fault injection", ("mpibench.faults.wrapper", "mpibench.faults.ulfm")),
    ("engine", ("mpibench.engine",)),
    ("recovery", ("mpibench.faults.recovery", "mpibench.faults.respawn", "mpibench.faults.fault_log",
                  "mpibench.faults.quorum", "mpibench.faults.sides", "mpibench.faults.straggler")),
    ("job", ("mpibench.job", "mpibench.selftest.variants")),  # the self-test's known-bad variants
    ("drive", ("mpibench.drive", "mpibench.testbed", "mpibench.sim", "mpibench.selftest")),
    ("cli", ("mpibench", "mpibench.cli", "mpibench.__main__")),
]

# Imports allowed against the rules, each with the reason. (A replacement spawned
# after a kill enters the job through the entry callable the job layer hands to
# faults.respawn, with a typed continuation, so that path needs no exception.)
ALLOWED: dict[tuple[str, str], str] = {}  # (importer, imported): why an upward edge stays


def module_files() -> dict[str, Path]:
    modules = {}
    for folder, package in SOURCES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def imports_of(name: str, path: Path, modules) -> set[str]:
    """The package modules an import statement anywhere in the file names
    (``from package import module`` counts as the module, not the package)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names)
    return {target for target in found if target in modules and target != name}


def dangling_imports(modules: dict[str, Path]) -> list[str]:
    """Imports of ``mpibench...`` modules that do not exist (a module moved, an import left behind)."""
    dangling = []
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                targets = [base]
            dangling += [f"{name}:{node.lineno} imports {t}" for t in targets
                         if t.split(".")[0] == "mpibench" and t not in modules]
    return sorted(dangling)


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def layer_of(module: str, layers=LAYERS) -> int:
    best, level = -1, None
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), index
    if level is None:
        raise LookupError(f"{module} is in no layer: add it to LAYERS")
    return level


def upward_imports(graph, layers=LAYERS, allowed=ALLOWED) -> list[str]:
    names = [name for name, _ in layers]
    return sorted(f"{src} ({names[layer_of(src, layers)]}) imports {dst} ({names[layer_of(dst, layers)]})"
                  for src, targets in graph.items() for dst in targets
                  if (src, dst) not in allowed and layer_of(dst, layers) > layer_of(src, layers))


def import_cycles(graph, allowed=ALLOWED) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), allowed edges left out."""
    edges = {src: sorted(dst for dst in targets if (src, dst) not in allowed and dst in graph)
             for src, targets in graph.items()}
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


@pytest.fixture(scope="module")
def graph():
    return import_graph(module_files())


def test_every_module_has_a_layer(graph):
    for name in graph:
        layer_of(name)


def test_every_project_import_names_a_module_that_exists():
    assert dangling_imports(module_files()) == []


def test_a_dangling_import_is_named(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("def f():\n    from .gone import x\n")
    assert dangling_imports({"mpibench.a": path}) == ["mpibench.a:2 imports mpibench.gone"]


def test_no_import_points_up(graph):
    assert upward_imports(graph) == []


def test_no_import_cycles(graph):
    assert import_cycles(graph) == []


def test_allowed_exceptions_are_still_needed(graph):
    """An exception that no import uses any more must be deleted, not kept."""
    stale = [edge for edge in ALLOWED if edge[1] not in graph.get(edge[0], set())]
    assert stale == []


def test_checker_imports_nothing_of_production(graph):
    outside = {(src, dst) for src, targets in graph.items() if src.startswith("mpibench.check")
               for dst in targets if not dst.startswith("mpibench.check")}
    assert outside == set()


def test_drivers_never_load_mpi():
    """The drivers run outside MPI: importing all of them leaves MPI unloaded."""
    drivers = sorted(name for name in module_files()
                     if name.startswith("mpibench.drive.") or name == "mpibench.selftest.drive")
    code = f"import sys\nfor m in {drivers!r}: __import__(m)\nsys.exit('mpi4py.MPI' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


# The rules themselves, on small made-up graphs, so that a broken walker cannot pass.
TOY_LAYERS = [("low", ("p.low",)), ("mid", ("p.mid",)), ("top", ("p",))]


def test_a_planted_upward_import_is_found():
    toy = {"p.low.a": {"p.mid.b"}, "p.mid.b": set(), "p.cli": {"p.mid.b", "p.low.a"}}
    assert upward_imports(toy, TOY_LAYERS, {}) == ["p.low.a (low) imports p.mid.b (mid)"]
    assert upward_imports(toy, TOY_LAYERS, {("p.low.a", "p.mid.b"): "why"}) == []


def test_a_planted_cycle_is_found():
    toy = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(toy, {}) == [["a", "b", "c"]]
    assert import_cycles(toy, {("c", "a"): "why"}) == []


def test_a_module_outside_every_layer_is_named():
    with pytest.raises(LookupError, match="q.x is in no layer"):
        layer_of("q.x", TOY_LAYERS)


def test_function_level_and_relative_imports_are_read(tmp_path):
    (tmp_path / "p" / "low").mkdir(parents=True)
    for rel in ("p/__init__.py", "p/low/__init__.py", "p/mid.py"):
        (tmp_path / rel).write_text("")
    (tmp_path / "p/low/a.py").write_text("def f():\n    from ..mid import g\n    from . import b\n")
    (tmp_path / "p/low/b.py").write_text("")
    files = {"p": tmp_path / "p/__init__.py", "p.low": tmp_path / "p/low/__init__.py",
             "p.mid": tmp_path / "p/mid.py", "p.low.a": tmp_path / "p/low/a.py",
             "p.low.b": tmp_path / "p/low/b.py"}
    toy = import_graph(files)
    assert toy["p.low.a"] == {"p.mid", "p.low.b"}
    assert upward_imports(toy, TOY_LAYERS, {}) == ["p.low.a (low) imports p.mid (mid)"]


# Small modules, short functions: a reader takes each in at once. The limits are
# the house rules ("about 300 lines", "about 60 lines"), with a little slack.
MODULE_LINES_MAX = 310
FUNCTION_LINES_MAX = 60


def test_no_module_is_long():
    long = {name: n for name, path in module_files().items()
            if (n := len(path.read_text().splitlines())) > MODULE_LINES_MAX}
    assert long == {}


def test_no_function_is_long():
    long = []
    for name, path in module_files().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES_MAX:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == []
