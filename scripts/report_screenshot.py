"""Write docs/img/report-first-screen.png: the first screen of report.html of a real run.

    python scripts/report_screenshot.py                 # runs `make run` into a scratch folder first
    python scripts/report_screenshot.py --run-dir DIR   # a main job's folder that is already there

The page is rendered by headless Chromium (`chromium --headless --screenshot`) at a
laptop's window size, then reduced to a 64-colour palette so the PNG stays small.
Nothing in the picture is drawn by hand: it is the page the run wrote.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PNG = ROOT / "docs" / "img" / "report-first-screen.png"
WINDOW = (1280, 860)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def main_job(out: Path, ranks: int) -> None:
    """`make run` as a user starts it; its exit status is the verdict's (0 on a pass)."""
    done = subprocess.run(["make", "run", f"NP={ranks}", f"OUT={out}"], cwd=ROOT, stdin=subprocess.DEVNULL)
    if not (out / "report.html").is_file():
        sys.exit(f"report_screenshot: make run ended with {done.returncode} and wrote no report.html")


def screenshot(page: Path, png: Path) -> None:
    browser = next((b for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        sys.exit("report_screenshot: no headless Chromium found (make system-deps installs it)")
    with tempfile.TemporaryDirectory() as profile:
        raw = Path(profile) / "raw.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                        f"--screenshot={raw}", page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)
        image = Image.open(raw).convert("RGB")
        image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="a main job's folder (default: run `make run` first)")
    parser.add_argument("--ranks", type=int, default=8, help="ranks for `make run` [default: 8]")
    parser.add_argument("--png", type=Path, default=DEFAULT_PNG, help=f"where to write [default: {DEFAULT_PNG.relative_to(ROOT)}]")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run_dir or Path(scratch) / "main-job"
        if args.run_dir is None:
            main_job(run_dir, args.ranks)
        screenshot(run_dir / "report.html", args.png)
    print(f"wrote {args.png} ({args.png.stat().st_size} bytes) from {run_dir}/report.html")


if __name__ == "__main__":
    main()
