"""lab/studies/vs_anchor.py's like-for-like pair: the C loop against the anchor, paired per launch."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab" / "studies"))
import vs_anchor  # noqa: E402


def launches(anchor_us: list[float], floor_us: list[float], blocking_us: list[float], size: int = 4096):
    """bench --launches' per-launch rows: each row's vs_blocking is blocking / row."""
    rows = []
    for n, (a, f, b) in enumerate(zip(anchor_us, floor_us, blocking_us), start=1):
        for name, t in (("anchor", a), ("c_floor", f), ("blocking", b)):
            rows.append({"launch": n, "strategy": name, "bytes": size, "tag": "measured", "vs_blocking": b / t})
    return pd.DataFrame(rows)


def test_the_floor_over_the_anchor_is_paired_inside_each_launch():
    # Launch states 4x apart move every row of a launch together: paired, the ratio stays 1.
    anchor = [1.7, 6.8, 1.7, 6.8, 1.7, 6.8]
    got = vs_anchor.floor_over_anchor(launches(anchor, anchor, [a * 1.6 for a in anchor]), 4096)
    assert got.ratio.median == pytest.approx(1.0)
    assert got.verdict == "indistinguishable"


def test_a_slower_floor_shows_whatever_blocking_does():
    # The verdict reads as the anchor's against the C loop (as blocking_over_anchor's does against
    # blocking): the anchor is faster here, and blocking's own ratio does not hide it.
    anchor = [1.7, 1.8, 1.75, 1.7, 1.72, 1.78]
    floor = [a * 1.5 for a in anchor]
    got = vs_anchor.floor_over_anchor(launches(anchor, floor, [a * 1.6 for a in anchor]), 4096)
    assert got.ratio.median == pytest.approx(1.5)
    assert got.verdict == "faster"


def test_other_sizes_and_modelled_rows_are_left_out():
    frame = launches([1.0] * 6, [2.0] * 6, [3.0] * 6, size=4096)
    other = launches([1.0] * 6, [1.0] * 6, [1.0] * 6, size=65536)
    modelled = launches([1.0] * 6, [9.0] * 6, [1.0] * 6).assign(tag="modelled")
    got = vs_anchor.floor_over_anchor(pd.concat([frame, other, modelled]), 4096)
    assert got.ratio.median == pytest.approx(2.0) and got.ratio.n == 6


def test_a_row_names_its_anchor_binary_and_keeps_other_binaries_and_levels(tmp_path):
    """Two builds of one tool measured differently here: each keeps its rows, and so does each
    thread level; a new set replaces only the rows of its own binary and level."""
    one, two = tmp_path / "a" / "IMB-MPI1", tmp_path / "b" / "IMB-MPI1"
    for path, body in ((one, b"build one"), (two, b"build two")):
        path.parent.mkdir()
        path.write_bytes(body)
    first, second = vs_anchor.binary_label(str(one)), vs_anchor.binary_label(str(two))
    assert first.startswith("IMB-MPI1 sha256:") and first != second
    csv = tmp_path / "anchor_frame.csv"
    pd.DataFrame({"bytes": [4096, 4096], "anchor": ["IMB-MPI1", first], "ratio": [1.0, 2.0]}).to_csv(csv, index=False)
    new = pd.DataFrame({"bytes": [4096], "anchor": [first], "ratio": [3.0], "thread_level": ["multiple"]})
    kept = vs_anchor.kept_rows(csv, new)
    assert sorted(zip(kept.anchor, kept.ratio)) == [("IMB-MPI1", 1.0), (first, 3.0)]
    single = new.assign(thread_level="single", ratio=4.0)
    kept.to_csv(csv, index=False)
    both = vs_anchor.kept_rows(csv, single)
    assert sorted(zip(both.anchor, both.thread_level, both.ratio)) == [
        ("IMB-MPI1", "multiple", 1.0), (first, "multiple", 3.0), (first, "single", 4.0)]


PROBE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long sizes[] = {1, 4096, 65536, 4194304};
    for (int i = 0; i < 4; i++) {
        void *s, *r;
        MPI_Alloc_mem(sizes[i], MPI_INFO_NULL, &s);
        MPI_Alloc_mem(sizes[i], MPI_INFO_NULL, &r);
        for (long k = 0; k < sizes[i]; k++) ((char *)s)[k] = ((char *)r)[k] = 1;  /* all of it is ours */
        printf("%ld %ld %ld\n", sizes[i], (long)((uintptr_t)s % 4096), (long)((uintptr_t)r % 4096));
        MPI_Free_mem(r);
        MPI_Free_mem(s);
    }
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.mpi
def test_the_one_page_offset_anchor_starts_every_alloc_mem_buffer_16_bytes_into_a_page(tmp_path):
    """The wrapper runs the tool as built, with the shim preloaded: every MPI_Alloc_mem buffer of
    every size (heap-sized ones included, which glibc places anywhere) starts 16 bytes into a page,
    and freeing them works."""
    import subprocess

    from mpibench.job.bench import cfloor
    from mpirun import mpi_env, mpirun_command, run_command

    mpicc = cfloor.find_mpicc()
    assert mpicc, "the project's venv holds Open MPI's mpicc"
    source, tool = tmp_path / "probe.c", tmp_path / "IMB-probe"
    source.write_text(PROBE)
    subprocess.run([mpicc, "-O1", "-o", str(tool), str(source)], check=True, timeout=120)
    wrapper = vs_anchor.with_one_page_offset(str(tool), str(tmp_path))
    assert Path(wrapper).name == "IMB-probe-one-page-offset"

    def offsets(program):
        job = run_command(mpirun_command() + ["-n", "1", program], timeout=120, env=mpi_env())
        assert job.returncode == 0, job.text
        return {int(b): (int(s), int(r)) for b, s, r in (line.split() for line in job.stdout.splitlines()
                                                         if line[:1].isdigit())}

    shimmed = offsets(wrapper)
    assert shimmed == {b: (16, 16) for b in (1, 4096, 65536, 4194304)}
    assert offsets(str(tool)) != shimmed  # unshimmed, glibc places the heap-sized ones elsewhere
