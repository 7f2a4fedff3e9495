"""The manual builds without a warning, its CLI reference is the click commands', and
the README stays a front page (at most 200 lines) that links into the manual, and the manual
stays within its size (measurement narrative lives in the lab)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from mpibench.cli import main

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).parent / "mkdocs"


def test_the_manual_builds_strict_and_documents_every_command(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    reference = (site / "cli" / "index.html").read_text()
    with click.Context(main) as ctx:
        visible = [name for name in main.list_commands(ctx) if not main.get_command(ctx, name).hidden]
    for name in visible:
        assert f'id="python-m-mpibench-{name}"' in reference, name
        for param in main.get_command(ctx, name).params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in reference, (name, param.opts[0])


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = set(re.findall(r"\]\((docs/[^)#]+)", readme))
    for link in links:
        assert (ROOT / link).is_file(), link
    for page in ("docs/checking.md", "docs/strategy-api.md", "docs/verdicts.md", "docs/clusters.md"):
        assert page in links, page


MANUAL_LINES_MAX = 2600  # a manual, not a notebook: what was measured lives in lab/findings.md


def test_the_manual_stays_a_manual():
    pages = sorted((ROOT / "docs").glob("*.md"))
    lines = sum(len(page.read_text().splitlines()) for page in pages)
    assert lines <= MANUAL_LINES_MAX, f"docs/*.md holds {lines} lines; move measurement narrative to lab/findings.md"


def test_measured_figures_come_from_result_files():
    """A page shows a measured table only through read_csv of a file that exists."""
    for page in (ROOT / "docs").rglob("*.md"):
        for name in re.findall(r"read_csv\('([^']+)'\)", page.read_text()):
            assert (ROOT / name).is_file(), (page.name, name)


PLACEHOLDER = re.compile(r"\.\.\.|\b(?:[A-Z]|DIR|HOST|FILE|LINE|CASE|DETAIL|COMMAND|nan|\d+(?:\.\d+)?)\b")
# click, make and Open MPI print these, or they are words of the page, not one message
EXTERNAL = ("make:", "mpirun", "No such option", "verdict: unknown", "NOT JUDGED YET", "CrossingError")


def source_text() -> str:
    """The package's source and the Makefile, with string literals continued on the next line joined up."""
    text = "\n".join(path.read_text() for path in (ROOT / "mpibench").rglob("*.py")) + (ROOT / "Makefile").read_text()
    return re.sub(r"\"\s*\n\s*f?\"", "", text)


def test_troubleshooting_quotes_the_messages_the_code_prints():
    """Each message the page explains (a definition term) is still printed by the code:
    every stretch of it between placeholders occurs in the source."""
    lines, source = (ROOT / "docs" / "troubleshooting.md").read_text().splitlines(), source_text()
    terms = [line for line, after in zip(lines, lines[1:]) if after.startswith(": ")]
    assert len(terms) >= 10
    for term in terms:
        for quoted in re.findall(r"`([^`]+)`", term):
            if quoted.startswith(EXTERNAL):
                continue
            for stretch in PLACEHOLDER.split(quoted.removeprefix("mpibench: error: ")):
                stretch = stretch.strip(" ()'.;,#")
                assert len(stretch) < 8 or stretch in source, (term, stretch)
