"""Which pages the benchmark's buffers and its anchor's sit on (mpibench.job.bench.pages)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mpibench.job.bench import pages
from mpirun import mpi_env, mpirun_command, run_command

TOUCH_8_MIB = r"""
import ctypes, re
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
n = 8 << 20
p = libc.malloc(n)
ctypes.memset(p, 1, n)
start = None
for line in open("/proc/self/smaps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
    if m:
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        start = lo <= p < hi
    elif start and line.startswith("AnonHugePages:"):
        print(int(line.split()[1]))
        break
"""


@pytest.mark.parametrize("text, mode", [("always [madvise] never\n", "madvise"), ("[always] madvise never", "always"),
                                        ("always madvise [never]", "never"), ("", "unknown")])
def test_thp_mode_is_the_bracketed_word(tmp_path, text, mode):
    path = tmp_path / "enabled"
    path.write_text(text)
    assert pages.thp_mode(path) == mode
    assert pages.thp_mode(tmp_path / "absent") == "unknown"


def test_one_page_policy_for_numpy_and_malloc_keeping_other_tunables():
    env = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0", "X": "1"}
    huge = pages.with_pages(env, huge=True)
    assert huge["GLIBC_TUNABLES"].split(":") == ["glibc.malloc.arena_max=2", pages.GLIBC_HUGEPAGE_TUNABLE]
    assert huge[pages.NUMPY_SWITCH] == "1" and huge["X"] == "1" and pages.malloc_madvises_hugepages(huge)
    small = pages.with_pages(env, huge=False)
    assert small["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2" and small[pages.NUMPY_SWITCH] == "0"
    assert not pages.malloc_madvises_hugepages(small)
    assert "GLIBC_TUNABLES" not in pages.with_pages({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, huge=False)
    assert env["GLIBC_TUNABLES"].endswith("hugetlb=0")  # the caller's dict is kept


def test_numpy_setting_is_read_from_numpy_itself():
    code = "from mpibench.job.bench.pages import numpy_madvises_hugepages as f; print(f())"
    for value, expected in (("0", "False"), ("1", "True")):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": value}, timeout=60)
        assert done.stdout.strip() == expected, done.stderr


def test_the_tunable_puts_a_c_programs_malloc_on_huge_pages_where_numpy_would_be():
    """What the anchor's environment is for: with it, glibc's malloc madvises huge pages."""
    mode = pages.thp_mode()
    assert mode != "unknown", "this Linux has no transparent huge page setting to read"

    def huge_kib(env):
        done = subprocess.run([sys.executable, "-c", TOUCH_8_MIB], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", **env}, timeout=60)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip() or 0)

    with_tunable = huge_kib({"GLIBC_TUNABLES": pages.GLIBC_HUGEPAGE_TUNABLE})
    without = huge_kib({})
    if mode == "never":
        assert with_tunable == without == 0
    else:
        assert with_tunable > 0
        assert mode == "always" or without == 0


@pytest.mark.parametrize("numpy_huge, malloc_huge, mode, words", [
    (True, False, "madvise", "candidates of one size may differ; --pages 4k"),
    (False, False, "madvise", "on 4 KiB pages (THP mode madvise)"), (True, True, "madvise", "--pages 4k"),
    (False, True, "madvise", "--pages 4k"), (True, False, "never", "every buffer on 4 KiB pages"),
    (True, False, "always", "partly on huge pages")])
def test_the_header_line_names_the_policy_and_any_mismatch(numpy_huge, malloc_huge, mode, words):
    assert words in pages.describe(numpy_huge, malloc_huge, mode)
    assert "huge pages off for this job" in pages.describe(numpy_huge, malloc_huge, mode, off_here=True)


# An 8 MiB NumPy array (NumPy madvises huge pages for it) touched, then its VMA's huge pages;
# the same with huge pages turned off first; and what a child process says of itself.
OFF_THEN_TOUCH = r"""
import re, subprocess, sys
import numpy as np
from mpibench.job.bench import pages

def huge_kib(a):
    lo, hi, over, total = a.ctypes.data, a.ctypes.data + a.nbytes, False, 0
    for line in open("/proc/self/smaps"):
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if m:
            over = int(m.group(1), 16) < hi and int(m.group(2), 16) > lo
        elif over and line.startswith("AnonHugePages:"):
            total += int(line.split()[1])
    return total

before = np.ones(8 << 18, dtype=np.float32)
with pages.hold_small_pages("4k") as why_not:
    assert why_not is None, why_not
    after = np.ones(8 << 18, dtype=np.float32)
    child = subprocess.run(["grep", "THP_enabled", "/proc/self/status"], capture_output=True, text=True).stdout
    off_inside = pages.huge_pages_off_here()
print(huge_kib(before), huge_kib(after), child.split()[1], off_inside, pages.huge_pages_off_here())
"""


def test_huge_pages_off_reaches_numpy_and_child_processes_and_is_undone_after():
    mode = pages.thp_mode()
    assert mode != "unknown", "this Linux has no transparent huge page setting to read"
    done = subprocess.run([sys.executable, "-c", OFF_THEN_TOUCH], capture_output=True, text=True, timeout=60,
                          env={**os.environ, pages.NUMPY_SWITCH: "1"})
    assert done.returncode == 0, done.stderr
    before, after, child, off_inside, off_after = done.stdout.split()
    assert int(after) == 0 and child == "0" and off_inside == "True" and off_after == "False"
    assert mode == "never" or int(before) > 0  # without the switch the same array was on huge pages


def test_the_system_policy_leaves_pages_alone():
    with pages.hold_small_pages("system") as why_not:
        assert why_not is None and not pages.huge_pages_off_here()


# One bench launch; then every rank's anonymous memory on huge pages, in kB.
BENCH_THEN_HUGE = r"""
import re, sys
from mpibench.cli import main
try:
    main(prog_name="python -m mpibench", args=sys.argv[1:])
except SystemExit as end:
    assert not end.code, end.code
text = open("/proc/self/smaps_rollup").read()
print("ANON_HUGE_KB", int(re.search(r"AnonHugePages:\s+(\d+)", text).group(1)), flush=True)
# Mappings advised for huge pages (VmFlags "hg"): the advice is the software's, the grant the kernel's.
advised = [flags for flags in re.findall(r"^VmFlags:(.*)$", open("/proc/self/smaps").read(), re.M)
           if " hg" in flags]
print("ADVISED_MAPPINGS", len(advised), flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("policy", ["4k", "system"])
def test_bench_puts_every_buffer_on_the_pages_it_says(tmp_path, policy):
    """The default holds every buffer of every candidate (and the MPI's scratch) on 4 KiB pages;
    left to the system, NumPy's 16 MiB arrays get huge pages (the header says which)."""
    args = ["bench", "--sizes", "16M", "--strategies", "ring", "--rounds", "2", "--iterations", "2", "--warmup", "1",
            "--no-model", "--c-baseline", "off", "--pages", policy, "--out", str(tmp_path / "out")]
    env = {**mpi_env(), pages.NUMPY_SWITCH: "1"}
    job = run_command([*mpirun_command(), "-n", "2", sys.executable, "-c", BENCH_THEN_HUGE, *args], timeout=180,
                      env=env, cwd=tmp_path)
    assert job.returncode == 0, job.text[-3000:]
    huge_kb = [int(line.split()[1]) for line in job.stdout.splitlines() if line.startswith("ANON_HUGE_KB")]
    advised = [int(line.split()[1]) for line in job.stdout.splitlines() if line.startswith("ADVISED_MAPPINGS")]
    header = next(line for line in job.stdout.splitlines() if line.startswith("# pages:"))
    assert len(huge_kb) == 2, job.text[-3000:]
    if policy == "4k":
        assert huge_kb == [0, 0] and "huge pages off for this job" in header
    else:
        # Whether the kernel grants a huge page depends on its free memory; what the policy
        # decides is that NumPy's advice stands (or, with THP "always", that pages were given).
        assert pages.thp_mode() == "never" or min(huge_kb) > 0 or min(advised) > 0, (huge_kb, advised)
        assert "huge pages off" not in header
