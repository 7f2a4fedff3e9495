"""The lab (lab/: studies, soak scripts, their data, the findings ledger) stays outside the product.

Nothing under mpibench/ imports lab/ or builds a path into it, the package build does not
ship it, and the ledger it keeps still reads (the tests may read lab/ by path; the product may not).
"""
from __future__ import annotations

import ast
import configparser
import re
import sys
from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mpibench"
# "lab/...", "lab.ledger", "lab" alone (a Path part), not "collab/" or "label."
LAB_NAME = re.compile(r"(?:^|[^\w.-])lab(?:[/\\.]|$)")


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings: prose about the software, allowed to cite the lab."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def lab_uses(path: Path) -> list[str]:
    """What in one production Python file reaches lab/: an import of it, or a string naming it."""
    tree = ast.parse(path.read_text(), str(path))
    prose, found = docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in ("lab", "ledger")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "lab":
            found.append(f"from {node.module} import ...")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
              and LAB_NAME.search(node.value)):
            found.append(f"line {node.lineno}: {node.value[:80]!r}")
    return found


def test_no_production_file_imports_or_names_the_lab():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix == ".py":
            uses = lab_uses(path)
        elif path.is_file() and path.suffix in (".c", ".h", ".js", ".css", ".html", ".toml", ".json", ".txt"):
            uses = [line for line in path.read_text().splitlines() if LAB_NAME.search(line)]
        else:
            continue
        if uses:
            offenders[str(path.relative_to(ROOT))] = uses
    assert not offenders, offenders


def test_the_check_sees_a_lab_import_and_a_lab_path(tmp_path):
    # The check above would pass on any tree if it saw nothing: here it must see both kinds.
    planted = tmp_path / "planted.py"
    planted.write_text('"""Cites lab/studies/x.py in prose, which is allowed."""\nimport lab.ledger\n'
                       'from pathlib import Path\nDATA = Path("lab/data/x.csv")\nPART = Path(".") / "lab" / "data"\n'
                       'LABEL = "label.collab/"\n')
    uses = lab_uses(planted)
    assert uses == ["import lab.ledger", "line 4: 'lab/data/x.csv'", "line 5: 'lab'"], uses


def test_the_package_build_does_not_ship_the_lab():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    include = [p.strip() for p in config["options.packages.find"]["include"].replace("\n", ",").split(",") if p.strip()]
    assert include and all(p.split(".")[0] == "mpibench" for p in include), include
    packages = find_packages(str(ROOT), include=include)
    assert "mpibench" in packages and not [p for p in packages if not p.startswith("mpibench")], packages
    data = config["options.package_data"] if config.has_section("options.package_data") else {}
    assert not [v for v in data.values() if "lab/" in v or "../" in v], dict(data)


@pytest.fixture(scope="module")
def ledger():
    sys.path.insert(0, str(ROOT / "lab"))
    import ledger as module

    return module


def test_ledger_holds_the_known_defects_with_how_they_were_found(ledger):
    entries = {f.id: f for f in ledger.read()}
    for needed in ("stale-rollback-after-heal", "watchdog-abort-exit-0", "exit-0-after-violation",
                   "ps-place-before-wait", "ps-gpu-host-slice", "mpi-abort-ulfm-exit-0", "bench-p1-algbw",
                   "finalize-hang-after-failure", "exit-142-after-correct-verdict"):
        assert needed in entries, needed
        assert entries[needed].found_by and entries[needed].where
    assert len(entries) == len(ledger.read())  # ids are unique


def test_ledger_rejects_a_malformed_entry(ledger, tmp_path):
    bad = tmp_path / "F.toml"
    bad.write_text('[[finding]]\nid = "x"\ntitle = "t"\narea = "code"\nfound_by = "f"\nreplay = ""\n'
                   'status = "done"\nwhere = "w"\n')
    with pytest.raises(ValueError, match="status 'done'"):
        ledger.read(bad)


# Source files a ledger entry cites: a path with a folder and a file suffix.
CITED = re.compile(r"(?<![\w/.-])((?:[\w-]+/)+[\w.-]+\.(?:py|sh|c|h|toml|md|csv|yml|cfg))\b")


def test_every_path_the_ledger_cites_exists(ledger):
    missing = {}
    for f in ledger.read():
        for text in (f.where, f.replay, f.found_by):
            for cited in CITED.findall(text):
                if not (ROOT / cited.split("::")[0]).exists():
                    missing.setdefault(f.id, []).append(cited)
    assert not missing, missing
