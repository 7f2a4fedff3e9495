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
"""
from __future__ import annotations

import os
from pathlib import Path

THP_MODE_FILE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
GLIBC_HUGEPAGE_TUNABLE = "glibc.malloc.hugetlb=1"
NUMPY_SWITCH = "NUMPY_MADVISE_HUGEPAGE"


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


def describe(numpy_hugepages: bool, malloc_hugepages: bool, mode: str) -> str:
    """One line for the benchmark's header: the page policy, and a mismatch when there is one."""
    if mode in ("never", "always"):
        return f"THP mode {mode}: NumPy's, the MPI's and an anchor's buffers on the same pages"
    if numpy_hugepages == malloc_hugepages:
        kind = "transparent huge pages" if numpy_hugepages else "4 KiB pages"
        return f"NumPy's, the MPI's and an anchor's buffers on {kind} (THP mode {mode})"
    if numpy_hugepages:
        return (f"NumPy's buffers of 4 MiB or more on huge pages, malloc's (the MPI's scratch, a C anchor's) on "
                f"4 KiB pages (THP mode {mode}); to compare like with like set {NUMPY_SWITCH}=0 or "
                f"GLIBC_TUNABLES={GLIBC_HUGEPAGE_TUNABLE}")
    return (f"malloc's buffers on huge pages, NumPy's on 4 KiB pages (THP mode {mode}); "
            f"to compare like with like unset {NUMPY_SWITCH}=0 or GLIBC_TUNABLES")
