"""Every command in README.md and docs/ runs: ```sh blocks are run, ```sh long blocks
have their arguments checked by the commands themselves (tests/doc_commands.py), and a
renamed option planted in a block fails both checks."""
from __future__ import annotations

import re

import pytest

import doc_commands as dc

DOCUMENTS = dc.documents()


def page_id(path) -> str:
    return str(path.relative_to(dc.ROOT))


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if any(not b.long for b in dc.shell_blocks(p))],
                         ids=page_id)
def test_sh_blocks_run(path, tmp_path):
    folder = dc.scratch_checkout(tmp_path / "checkout")
    for block in dc.shell_blocks(path):
        if not block.long:
            problem = dc.run_block(block, folder)
            assert problem is None, problem


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if any(b.long for b in dc.shell_blocks(p))],
                         ids=page_id)
def test_sh_long_blocks_parse(path, tmp_path):
    folder = dc.scratch_checkout(tmp_path / "checkout")
    problems = [p for block in dc.shell_blocks(path) if block.long
                for p in dc.check_long_block(block, folder)]
    assert not problems, "\n".join(problems)


def test_the_manual_has_both_kinds_of_block():
    blocks = [b for path in DOCUMENTS for b in dc.shell_blocks(path)]
    assert any(b.long for b in blocks) and any(not b.long for b in blocks)


OPTION = re.compile(r"(?<=\s)--(strategy|scenario|seeds|steps|ranks|sizes)(?=[\s=])")


def planted(kind_long: bool) -> dc.Block:
    """The first block of that kind with an mpibench option, that option renamed."""
    for path in DOCUMENTS:
        for block in dc.shell_blocks(path):
            if block.long == kind_long and "mpibench" in block.text and OPTION.search(block.text):
                text = OPTION.sub(lambda m: m.group(0) + "-renamed", block.text, count=1)
                return dc.Block(block.path, block.line, block.long, text)
    raise AssertionError("no block with an mpibench option to rename")


def test_a_renamed_option_fails_a_run_block(tmp_path):
    block = planted(kind_long=False)
    problem = dc.run_block(block, dc.scratch_checkout(tmp_path / "checkout"))
    assert problem is not None and "-renamed" in problem, problem


def test_a_renamed_option_fails_a_long_block(tmp_path):
    block = planted(kind_long=True)
    problems = dc.check_long_block(block, dc.scratch_checkout(tmp_path / "checkout"))
    assert any("-renamed" in p for p in problems), problems


@pytest.mark.parametrize("line, expected", [
    ("mpirun -n 8 --oversubscribe .venv/bin/python -m mpibench --out r", ["mpibench", "--out r"]),
    ("sudo .venv/bin/python jobs/testbed.py --hosts 3 -- run --strategy ring", ["testbed.py"]),
    ("array=$(sbatch --parsable --array=0-9 jobs/sweep-array.sbatch --steps 12)", ["sbatch"]),
])
def test_long_lines_are_split_into_their_commands(line, expected):
    words = [w for c in dc.simple_commands(line) for w in dc.unwrapped(c)]
    joined = " ".join(words)
    assert all(part in joined for part in expected), words


def test_a_script_option_missing_from_its_help_is_found(tmp_path):
    folder = dc.scratch_checkout(tmp_path / "checkout")
    problem = dc.check_script("lab/studies/vs_anchor.py", ["--no-such-option"], folder)
    assert problem and "--no-such-option" in problem


def test_a_bad_make_target_is_found(tmp_path):
    assert dc.check_make(["no-such-target"], dc.scratch_checkout(tmp_path / "checkout"))
