"""This host's compute rate, the figure a modelled or stood-in layer's time is drawn from."""
from __future__ import annotations


def host_flops_per_s(n: int = 512, repeats: int = 5) -> float:
    """This host's float32 matrix-multiply rate: the median of a few timed products."""
    import statistics
    import time

    import numpy as np

    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    out = np.empty_like(a)
    np.matmul(a, a, out=out)  # warm: the first product pays for loading the BLAS
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(a, a, out=out)
        times.append(time.perf_counter() - start)
    return 2.0 * n ** 3 / statistics.median(times)
