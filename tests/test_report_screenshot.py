"""scripts/report_screenshot.py renders a run's report.html into a small PNG of its first screen."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from test_report_browser import chromium_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.browser
@pytest.mark.slow  # a simulated run, its page and Chromium: about 15 s on a loaded machine
def test_the_picture_is_the_first_screen_of_a_real_report(tmp_path):
    chromium_path()  # skips with the reason (fails under CI=true) when Chromium is missing
    run = tmp_path / "run"
    for args in (["run", "--engine", "sim", "--ranks", "3", "--scenario", "cascade", "--out", str(run)],
                 ["report", str(run)]):
        subprocess.run([sys.executable, "-m", "mpibench", *args], check=True, capture_output=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    png = tmp_path / "first-screen.png"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "report_screenshot.py"), "--run-dir", str(run),
                           "--png", str(png)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    image = Image.open(png)
    assert image.size == (1280, 860)
    assert png.stat().st_size < 200_000
    # not blank: the verdict banner and the text give the screen many colours
    assert len(image.convert("RGB").getcolors(maxcolors=4096) or []) > 8


def test_the_committed_picture_is_small():
    png = ROOT / "docs" / "img" / "report-first-screen.png"
    assert png.stat().st_size < 200_000 and Image.open(png).size == (1280, 860)
