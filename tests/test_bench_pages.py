"""Which pages the benchmark's buffers and its anchor's sit on (mpibench.job.bench.pages)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mpibench.job.bench import pages

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
    (True, False, "madvise", "NUMPY_MADVISE_HUGEPAGE=0 or GLIBC_TUNABLES=glibc.malloc.hugetlb=1"),
    (False, False, "madvise", "on 4 KiB pages"), (True, True, "madvise", "on transparent huge pages"),
    (False, True, "madvise", "like with like"), (True, False, "never", "on the same pages"),
    (True, False, "always", "on the same pages")])
def test_the_header_line_names_the_policy_and_any_mismatch(numpy_huge, malloc_huge, mode, words):
    assert words in pages.describe(numpy_huge, malloc_huge, mode)
