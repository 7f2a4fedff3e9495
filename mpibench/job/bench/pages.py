"""Which memory pages the benchmark's buffers sit on, and whether an anchor's sit on the same.

NumPy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on
every array of 4 MiB or more unless ``NUMPY_MADVISE_HUGEPAGE=0``. Where the
kernel's THP mode is ``madvise`` (the common default), a C program's ``malloc``
buffers, and the scratch buffers the MPI library allocates inside
``MPI_Allreduce``, stay on 4 KiB pages unless glibc's ``glibc.malloc.hugetlb=1``
tunable (glibc ≥ 2.35) makes ``malloc`` madvise them too. The page size moves
large reductions a lot: measured here (p = 2, Open MPI 5, shared memory),
IMB-MPI1's 8 MiB Allreduce took 2.8–3.4 ms on 4 KiB pages and 1.3–1.8 ms with
the tunable. An anchor launched by ``bench`` inherits the ranks' environment,
so it gets the same malloc policy; this module says, beside the figures, when
the harness's NumPy buffers and a C anchor's still differ, and how to align them.

Left to NumPy and glibc, the candidates of one size do not even share a policy: a buffer
below 4 MiB that glibc places in memory a freed large array was madvised in is partly on
huge pages. Read from the page tables in one ``bench`` launch at 1 MiB: ``blocking``'s
result buffer 41 % on huge pages, ``c_floor``'s none, ``ring``'s 34 %, ``auto``'s all; at
4 MiB ``ring``'s all, ``rabenseifner``'s half. In a plain loop the same 1 MiB Allreduce
took 62-88 us on huge pages and 117-120 us on 4 KiB pages. So ``bench`` turns huge pages
off for its processes by default (:func:`hold_small_pages`, ``--pages 4k``): every buffer,
the MPI's scratch and an anchor's included, is then on 4 KiB pages in every launch.
"""
from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager
from pathlib import Path

THP_MODE_FILE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
GLIBC_HUGEPAGE_TUNABLE = "glibc.malloc.hugetlb=1"
NUMPY_SWITCH = "NUMPY_MADVISE_HUGEPAGE"
PR_SET_THP_DISABLE = 41  # linux/prctl.h; inherited by children and kept across exec
STATUS_FILE = Path("/proc/self/status")


def set_huge_pages_off(off: bool) -> str | None:
    """Ask Linux to back what this process (and every child it starts) touches from now on
    with 4 KiB pages only (``off``), or to allow huge pages again; None when done, else why not."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_THP_DISABLE, int(off), 0, 0, 0) != 0:
            return f"prctl(PR_SET_THP_DISABLE) failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as exc:  # not Linux, or no C library to call
        return f"huge pages cannot be turned off here ({exc})"
    return None


def huge_pages_off_here(path: Path = STATUS_FILE) -> bool:
    """Whether huge pages are off for this process (``THP_enabled: 0`` in its status)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith("THP_enabled:"):
                return line.split()[1] == "0"
    except (OSError, IndexError):
        pass
    return False


@contextmanager
def hold_small_pages(policy: str):
    """For ``policy`` ``4k``: huge pages off while the block runs, as they were after; yields
    why they could not be turned off (None when they are off, or for ``system``)."""
    if policy != "4k" or huge_pages_off_here():
        yield None
        return
    why = set_huge_pages_off(True)
    try:
        yield why
    finally:
        if why is None:
            set_huge_pages_off(False)


def numpy_madvises_hugepages() -> bool:
    """Whether NumPy madvises huge pages for its large arrays in this process."""
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy < 2
        from numpy.core import multiarray
    getter = getattr(multiarray, "_get_madvise_hugepage", None)
    return bool(getter()) if getter else False


def thp_mode(path: Path = THP_MODE_FILE) -> str:
    """The kernel's transparent huge page mode (``always``, ``madvise``, ``never``), or ``unknown``."""
    try:
        text = path.read_text()
    except OSError:
        return "unknown"
    chosen = [word.strip("[]") for word in text.split() if word.startswith("[")]
    return chosen[0] if chosen else "unknown"


def malloc_madvises_hugepages(env: dict[str, str] | None = None) -> bool:
    """Whether glibc's ``malloc`` is told to madvise huge pages in ``env`` (default: this process's)."""
    tunables = (os.environ if env is None else env).get("GLIBC_TUNABLES", "")
    return GLIBC_HUGEPAGE_TUNABLE in tunables.split(":")


def with_pages(env: dict[str, str], huge: bool) -> dict[str, str]:
    """``env`` in which NumPy's arrays and glibc's ``malloc`` both use huge pages (``huge``) or
    neither madvises them: one page policy for the harness, the MPI's scratch and a C anchor."""
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.malloc.hugetlb=")]
    out = {**env, NUMPY_SWITCH: "1" if huge else "0"}
    if huge:
        tunables.append(GLIBC_HUGEPAGE_TUNABLE)
    if tunables:
        out["GLIBC_TUNABLES"] = ":".join(tunables)
    else:
        out.pop("GLIBC_TUNABLES", None)
    return out


def describe(numpy_hugepages: bool, malloc_hugepages: bool, mode: str, off_here: bool = False) -> str:
    """One line for the benchmark's header: the page policy, and whether the candidates of one
    size can sit on different pages (and then how to put them on the same)."""
    fix = "candidates of one size may differ; --pages 4k puts every buffer on 4 KiB pages"
    if off_here:
        return ("every buffer on 4 KiB pages (NumPy's, the MPI's scratch, the C loop's, an anchor's): "
                "huge pages off for this job (--pages 4k)")
    if mode == "never":
        return "every buffer on 4 KiB pages (THP mode never)"
    if mode == "always":
        return f"every buffer partly on huge pages, as its place in memory falls (THP mode always): {fix}"
    if not numpy_hugepages and not malloc_hugepages:
        return f"NumPy's, the MPI's and an anchor's buffers on 4 KiB pages (THP mode {mode})"
    if numpy_hugepages and malloc_hugepages:
        return f"NumPy's and malloc's buffers partly on huge pages, as their place in memory falls (THP mode {mode}): {fix}"
    if numpy_hugepages:
        return (f"NumPy's buffers of 4 MiB or more, and smaller ones placed where they were, partly on huge "
                f"pages, malloc's (the MPI's scratch, a C anchor's) on 4 KiB pages (THP mode {mode}): {fix}")
    return f"malloc's buffers partly on huge pages, NumPy's on 4 KiB pages (THP mode {mode}): {fix}"
