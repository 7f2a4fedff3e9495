"""Throughput of the back-end operations against a plain memory copy.

Usage::

    python lab/studies/kernels.py [--device cpu|gpu|emulated] [--sizes 1M,16M,64M]
                                 [--repeats N] [--csv FILE] [--peak-gbps X]

For each buffer size (bytes of one float32 vector) and operation it prints the
median time over ``--repeats`` runs and the effective bandwidth: the bytes the
operation must move at least, divided by that time. Moved bytes per element:

======================  =====  =================================================
copy (baseline)         8      read 4, write 4 (``np.copyto`` / ``cupy.copyto``)
accumulate              12     read dst and src, write dst
apply_update            12     read grad and param, write param
pack                    8      read grad, write the buffer (device gradient on GPU)
pack_from_host (GPU)    4      a host gradient: copied into pinned staging on the
                               host, then uploaded (what a training step does)
upload_pinned (GPU)     4      the upload alone, from pinned memory
download_pinned (GPU)   4      device to pinned memory (the staged policy's copy)
======================  =====  =================================================

``pack_from_host`` against ``upload_pinned`` shows what the host-side copy into
the staging buffer costs: the GPU timer counts host work between its events.
``--device emulated`` runs the device code path on the emulated device (a dry
run: its figures are host copies, not a device's).

NumPy's ``apply_update`` makes three in-place passes (divide, scale,
subtract), so its effective figure is well under the copy baseline; the CuPy
kernel is one pass. ``vs_copy`` is the ratio to the copy baseline at the same
size; on a GPU ``vs_peak`` is the ratio to the device's memory bandwidth
(``--peak-gbps``, else a nominal figure for known devices, else one computed
from the memory clock and bus width).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

import numpy as np

NOMINAL_PEAK_GBPS = {"H200": 4800.0, "H100 80GB HBM3": 3350.0, "A100-SXM4-80GB": 2039.0}
MOVED_BYTES_PER_ELEMENT = {"copy": 8, "accumulate": 12, "apply_update": 12, "pack": 8,
                           "pack_from_host": 4, "upload_pinned": 4, "download_pinned": 4}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "gpu", "emulated"], default="cpu")
    parser.add_argument("--sizes", default=None, help="vector sizes in bytes (default: cpu 1M,4M,16M,64M; "
                                                      "gpu 1M,16M,64M,256M,1G)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (median taken)")
    parser.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    parser.add_argument("--peak-gbps", type=float, default=None, help="device memory bandwidth, GB/s")
    return parser.parse_args(argv)


class HostTimer:
    """Wall time of ``op`` on the CPU, queued device work included."""

    def __init__(self, backend):
        self.backend = backend

    def time_s(self, op) -> float:
        start = time.perf_counter()
        op()
        self.backend.synchronize()
        return time.perf_counter() - start


class DeviceTimer:
    """GPU time of ``op`` between two CUDA events (launch overhead included, host noise not)."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.start, self.stop = cupy.cuda.Event(), cupy.cuda.Event()

    def time_s(self, op) -> float:
        self.start.record()
        op()
        self.stop.record()
        self.stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.stop) / 1e3


def cases(backend, n: int, host_grad: np.ndarray):
    """The operations at one size, each a closure over buffers allocated here, once."""
    src = backend.from_host(host_grad)
    dst = backend.zeros(n)
    params = backend.zeros(n)
    grad = backend.from_host(host_grad.copy())
    buf = backend.zeros(n + 1)

    def copy():
        dst[...] = src  # a device-to-device copy (NumPy: a host copy)

    out = {
        "copy": copy,
        "accumulate": lambda: backend.accumulate(dst, src),
        # count 1 and lr 1: the in-place NumPy passes leave grad unchanged, so no denormals creep in.
        "apply_update": lambda: backend.apply_update(params, grad, 1, 1.0),
        "pack": lambda: backend.pack(buf, src, 3),
    }
    runtime = getattr(backend, "rt", None)
    if runtime is not None:
        pinned = runtime.pinned_empty(n, np.float32)
        pinned[...] = host_grad
        out["pack_from_host"] = lambda: backend.pack(buf, host_grad, 3)
        out["upload_pinned"] = lambda: runtime.upload(dst, pinned)
        out["download_pinned"] = lambda: runtime.download(src, pinned, blocking=False)
    return out


def peak_gbps(cupy, override: float | None) -> tuple[float | None, str]:
    if override:
        return override, "--peak-gbps"
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    for key, value in NOMINAL_PEAK_GBPS.items():
        if key in name:
            return value, f"nominal for {name}"
    try:  # 2 transfers per clock (DDR) x bus width
        clock_khz = cupy.cuda.runtime.deviceGetAttribute(36, cupy.cuda.Device().id)
        width_bits = cupy.cuda.runtime.deviceGetAttribute(37, cupy.cuda.Device().id)
        return 2 * clock_khz * 1e3 * width_bits / 8 / 1e9, f"memory clock x bus width of {name}"
    except Exception:  # noqa: BLE001 - the attribute is gone from newer CUDA
        return None, f"unknown for {name}"


def main(argv=None) -> int:
    from mpibench.base.parsing import parse_size

    args = parse_args(sys.argv[1:] if argv is None else argv)
    on_gpu = args.device == "gpu"
    sizes = [parse_size(s) for s in (args.sizes or ("1M,16M,64M,256M,1G" if on_gpu else "1M,4M,16M,64M")).split(",")]
    repeats = args.repeats or (30 if on_gpu else 15)
    from mpibench.kernels import select_backend

    backend = select_backend(args.device)
    if on_gpu:
        import cupy

        timer = DeviceTimer(cupy)
        peak, peak_source = peak_gbps(cupy, args.peak_gbps)
        device = backend.info.get("device_name", "gpu")
    else:
        timer = HostTimer(backend)
        peak, peak_source, device = args.peak_gbps, "--peak-gbps" if args.peak_gbps else "", args.device
    rows = []
    rng = np.random.default_rng(0)
    for size in sizes:
        n = max(1, size // 4)
        host_grad = rng.standard_normal(n, dtype=np.float32)
        ops = cases(backend, n, host_grad)
        for op in ops.values():  # warm-up: compile kernels, fault pages in
            op()
        backend.synchronize()
        medians = {name: statistics.median(timer.time_s(op) for _ in range(repeats)) for name, op in ops.items()}
        for name, seconds in medians.items():
            gbps = MOVED_BYTES_PER_ELEMENT[name] * n / seconds / 1e9
            copy_gbps = MOVED_BYTES_PER_ELEMENT["copy"] * n / medians["copy"] / 1e9
            rows.append({"backend": backend.name, "device": device, "op": name, "bytes": 4 * n,
                         "moved_bytes": MOVED_BYTES_PER_ELEMENT[name] * n, "time_median_s": seconds,
                         "gbps": gbps, "vs_copy": gbps / copy_gbps,
                         "vs_peak": gbps / peak if peak else None, "repeats": repeats})
    print_table(rows, peak, peak_source)
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


def print_table(rows, peak, peak_source) -> None:
    print(f"{'backend':<7} {'op':<15} {'bytes':>12} {'median_s':>11} {'GB/s':>9} {'vs copy':>8} {'vs peak':>8}")
    for r in rows:
        vs_peak = f"{r['vs_peak']:.2f}" if r["vs_peak"] is not None else "-"
        print(f"{r['backend']:<7} {r['op']:<15} {r['bytes']:>12} {r['time_median_s']:>11.3e} "
              f"{r['gbps']:>9.1f} {r['vs_copy']:>8.2f} {vs_peak:>8}")
    if peak:
        print(f"peak memory bandwidth {peak:.0f} GB/s ({peak_source})")


if __name__ == "__main__":
    sys.exit(main())
