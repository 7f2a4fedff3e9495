"""The closing summary names every skipped test's reason, one line per reason."""
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import skip_lines


def test_the_summary_lists_skip_reasons_grouped(tmp_path):
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    body = ["import pytest", "def test_runs():", "    pass"]
    for i, reason in enumerate(["no widget here", "no widget here", "no gadget: not installed"]):
        body += [f"def test_skips_{i}():", f"    pytest.skip({reason!r})"]
    (tmp_path / "test_some.py").write_text("\n".join(body) + "\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    out = done.stdout
    assert "tests that did not run, and why" in out
    assert "2 skipped (test_some.py): no widget here" in out
    assert "1 skipped (test_some.py): no gadget: not installed" in out


def test_nothing_skipped_says_nothing():
    assert skip_lines([]) == []
