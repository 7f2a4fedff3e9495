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


def test_the_hugepage_tunable_is_added_once_beside_other_tunables():
    env = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0", "X": "1"}
    got = pages.with_numpy_pages(env, numpy_hugepages=True)
    assert got["GLIBC_TUNABLES"].split(":") == ["glibc.malloc.arena_max=2", pages.GLIBC_HUGEPAGE_TUNABLE]
    assert got["X"] == "1" and env["GLIBC_TUNABLES"].endswith("hugetlb=0")  # the caller's dict is kept
    assert pages.with_numpy_pages({"X": "1"}, numpy_hugepages=False) == {"X": "1"}
    assert pages.with_numpy_pages({}, True)["GLIBC_TUNABLES"] == pages.GLIBC_HUGEPAGE_TUNABLE


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


@pytest.mark.parametrize("numpy_hugepages, mode, words", [
    (True, "madvise", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), (False, "madvise", "4 KiB pages"),
    (True, "never", "4 KiB pages"), (True, "always", "THP mode always")])
def test_the_note_says_which_pages(numpy_hugepages, mode, words):
    assert words in pages.describe(numpy_hugepages, mode)
