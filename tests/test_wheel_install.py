"""The package as Python tools install it: the sdist and the wheel built from this tree, the
wheel installed into a fresh virtual environment, and the user's commands run from a folder
that holds no source tree (PYTHONPATH unset): nothing the product needs may come from the
checkout."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(cmd, cwd, env=None, timeout=300):
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv holding only the wheel, a cold folder, the built files)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    built = run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)], cwd=base,
                timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    venv = base / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # The dependencies (mpi4py, numpy, ...) are taken from this interpreter's site-packages by a
    # plain path entry: .pth files inside that folder (the checkout's editable install) are not
    # processed from there, so mpibench itself can come only from the wheel.
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base)
    (Path(site.stdout.strip()) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(dist.glob("mpibench-*.whl"))
    pip = run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=base)
    assert pip.returncode == 0, pip.stderr[-3000:]
    cold = base / "cold"
    cold.mkdir()
    return python, cold, dist


def cold_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, "MPIBENCH_NO_BENCH": "1"}


def mpibench(installed, *args, timeout=300):
    python, cold, _ = installed
    return run([str(python), "-m", "mpibench", *args], cwd=cold, env=cold_env(), timeout=timeout)


def test_the_sdist_holds_the_sources_and_the_wheel_the_package_data(installed):
    _, _, dist = installed
    with tarfile.open(next(dist.glob("mpibench-*.tar.gz"))) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"setup.cfg", "pyproject.toml", "mpibench/__init__.py", "mpibench/cli/group.py"} <= names
    wheel = set(zipfile.ZipFile(next(dist.glob("mpibench-*.whl"))).namelist())
    shipped_c = {n for n in wheel if n.endswith(".c")}
    tree_c = {str(p.relative_to(ROOT)) for p in (ROOT / "mpibench").rglob("*.c")}
    assert tree_c and shipped_c == tree_c  # the C loops bench compiles
    assert "mpibench/results/data/smpi_crosscheck.csv" in wheel
    assert not any(n.startswith(("lab/", "tests/", "docs/")) for n in wheel)


def test_the_installed_package_is_the_wheels_and_says_its_version(installed):
    python, cold, _ = installed
    where = run([str(python), "-c", "import mpibench; print(mpibench.__file__)"], cwd=cold, env=cold_env())
    assert where.returncode == 0 and where.stdout.startswith(str(python.parents[1])), where.stdout + where.stderr
    version = mpibench(installed, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"mpibench {metadata.version('mpibench')}"


def test_a_simulated_run_is_judged_and_reported_from_a_cold_folder(installed):
    _, cold, _ = installed
    done = mpibench(installed, "run", "--engine", "sim", "--ranks", "4", "--strategy", "ring", "--scenario",
                    "cascade", "--out", "demo")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "verdict: pass" in done.stdout
    judged = mpibench(installed, "check", "demo")
    assert judged.returncode == 0 and "verdict: pass" in judged.stdout, judged.stderr
    page = mpibench(installed, "report", "demo")
    assert page.returncode == 0 and (cold / "demo" / "report.html").stat().st_size > 10_000, page.stderr


def test_the_simulated_selftest_and_predict_run_from_a_cold_folder(installed):
    selftest = mpibench(installed, "selftest", "--engine", "sim", "--out", "st", timeout=600)
    assert selftest.returncode == 0, selftest.stdout[-3000:] + selftest.stderr[-2000:]
    assert "known-bad reductions caught" in selftest.stdout
    table = mpibench(installed, "predict", "--ranks", "64", "--sizes", "1K,1M", "--strategies", "ring,rd")
    assert table.returncode == 0 and "[simulated]" in table.stdout, table.stderr
    profile = mpibench(installed, "predict", "--profile", "gpt2", "--ranks", "8,4096", "--strategies", "ring",
                       "--flops-per-s", "1e14")
    assert profile.returncode == 0 and "exposed_s" in profile.stdout, profile.stderr
