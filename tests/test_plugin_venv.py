"""Another virtual environment sees mpibench's venv the way docs/strategy-api.md says.

``--system-site-packages`` adds the base interpreter's site-packages, never those of the venv
whose Python made it, so such a venv cannot import mpibench; the page's one ``.pth`` line
makes mpibench's site-packages a site directory of the other venv, and its commands run.
The test runs the page's own lines (with ``--without-pip`` for speed) from another folder.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "strategy-api.md"


def documented_lines() -> list[str]:
    blocks = re.findall(r"```sh long\n(.*?)```", PAGE.read_text(), re.S)
    block = next(b for b in blocks if "addsitedir" in b)
    return [line for line in block.splitlines() if line.strip()]


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-euc", script], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_system_site_packages_venv_does_not_see_mpibench(tmp_path):
    made = bash(f"{sys.executable} -m venv --system-site-packages --without-pip other", tmp_path)
    assert made.returncode == 0, made.stderr
    found = bash("other/bin/python -c 'import mpibench'", tmp_path)
    assert found.returncode != 0 and "No module named 'mpibench'" in found.stderr


def test_the_documented_pth_line_lets_another_venv_run_mpibench(tmp_path):
    lines = documented_lines()
    assert lines[0] == "python -m venv myenv" and lines[-1] == "myenv/bin/python -m mpibench strategies"
    venv = str(tmp_path / "myenv")
    script = "\n".join([f"{sys.executable} -m venv --without-pip {venv}"]
                       + [line.replace(".venv/bin/python", sys.executable).replace("myenv", venv)
                          for line in lines[1:]])
    job = bash(script, tmp_path)
    assert job.returncode == 0, job.stdout + job.stderr
    names = [line.split()[0] for line in job.stdout.splitlines()]
    assert {"ring", "ps", "native"} <= set(names), job.stdout
