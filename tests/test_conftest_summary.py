"""The closing summary names every skipped test's reason, one line per reason."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("skips", [0, 1, 3])
def test_the_summary_lists_skip_reasons_grouped(tmp_path, skips):
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    body = ["import pytest", "def test_runs():", "    pass"]
    for i in range(skips):  # two reasons: the first two share one
        reason = "no widget here" if i < 2 else "no gadget: not installed"
        body += [f"def test_skips_{i}():", f"    pytest.skip({reason!r})"]
    (tmp_path / "test_some.py").write_text("\n".join(body) + "\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    out = done.stdout
    if skips == 0:
        assert "did not run" not in out
        return
    assert "tests that did not run, and why" in out
    assert f"{min(skips, 2)} skipped (test_some.py): no widget here" in out
    assert ("1 skipped (test_some.py): no gadget: not installed" in out) == (skips == 3)
