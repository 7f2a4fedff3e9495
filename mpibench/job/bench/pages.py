"""The memory pages under the benchmark's buffers, and the same pages for an anchor.

NumPy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on
every array of 4 MiB or more, unless ``NUMPY_MADVISE_HUGEPAGE=0``. Where the
kernel's THP mode is ``madvise`` (the common default), a C benchmark's
``malloc``/``MPI_Alloc_mem`` buffers stay on 4 KiB pages. Measured here (p = 2,
Open MPI 5, shared memory): IMB-MPI1's 8 MiB Allreduce took 2.8–3.4 ms on
4 KiB pages and 1.3–1.8 ms on huge pages, the same as the harness's own
``MPI_Allreduce`` on NumPy buffers. So an anchor is launched with glibc's
``glibc.malloc.hugetlb=1`` tunable (glibc ≥ 2.35: ``malloc`` then madvises
huge pages as NumPy does) whenever NumPy's buffers are on them, and the page
policy of both is written beside the figures.
"""
from __future__ import annotations

from pathlib import Path

THP_MODE_FILE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
GLIBC_HUGEPAGE_TUNABLE = "glibc.malloc.hugetlb=1"


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


def with_numpy_pages(env: dict[str, str], numpy_hugepages: bool) -> dict[str, str]:
    """``env`` for a C program whose large buffers should sit on the pages NumPy's do."""
    if not numpy_hugepages:
        return env
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.malloc.hugetlb=")]
    return {**env, "GLIBC_TUNABLES": ":".join([*tunables, GLIBC_HUGEPAGE_TUNABLE])}


def describe(numpy_hugepages: bool, mode: str) -> str:
    """One line for the benchmark's notes: which pages the buffers and the anchor use."""
    if mode == "never" or (mode == "madvise" and not numpy_hugepages):
        return f"buffers on 4 KiB pages (THP mode {mode}); the anchor's too"
    if mode == "always":
        return "buffers and the anchor's on transparent huge pages (THP mode always)"
    if numpy_hugepages:
        return (f"buffers of 4 MiB or more on transparent huge pages (NumPy madvise, THP mode {mode}); "
                f"the anchor launched with GLIBC_TUNABLES={GLIBC_HUGEPAGE_TUNABLE} to match")
    return f"THP mode {mode}"
