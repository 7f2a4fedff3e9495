"""The checker shares no code with the system under test: it imports nothing from the
production path, directly or through a relative import."""
import ast
from pathlib import Path

import mpibench.check

PACKAGE = Path(mpibench.check.__file__).parent
FORBIDDEN = {"sync", "kernels", "model", "worker", "data", "seeds", "faults", "aggregate", "runner", "suite",
             "comm", "history", "mutants", "loop_mutants", "records", "config"}


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = ["mpibench"] + list(path.relative_to(PACKAGE.parent).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names |= {f"{module}.{a.name}" for a in node.names}  # `from . import data`
    return names


def test_checker_imports_nothing_from_the_production_path():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) >= 10
    for path in files:
        for name in imported_modules(path):
            parts = name.split(".")
            if parts[0] != "mpibench":
                assert parts[0] not in ("mpi4py", "cupy"), f"{path.name} imports {name}"
                continue
            assert len(parts) > 1 and parts[1] == "check", f"{path.relative_to(PACKAGE)} imports {name}"


def test_the_walker_sees_relative_imports():
    names = imported_modules(PACKAGE / "invariants" / "equivalence.py")
    assert "mpibench.check.reference" in names and "mpibench.check.history" in names
    assert FORBIDDEN.isdisjoint(n.split(".")[1] for n in names if n.startswith("mpibench.") and
                                n.split(".")[1] != "check")


def test_importing_the_checker_loads_no_production_module():
    import subprocess
    import sys

    code = ("import sys, mpibench.check; print(' '.join(m for m in sys.modules "
            "if m.startswith(('mpibench', 'mpi4py'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    assert "mpibench.check.verdict" in loaded
    assert all(m == "mpibench" or m.startswith("mpibench.check") for m in loaded), loaded
