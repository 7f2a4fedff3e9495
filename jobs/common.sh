# Shared set-up for the mpibench Slurm jobs (sourced, never submitted).
#
# After `source jobs/common.sh` a job has:
#   MPIBENCH_DIR     the project checkout (default: found from the submitted script)
#   PY               the Python that has mpibench installed
#   MPIBENCH_OUT     the root folder for results (default: $SLURM_SUBMIT_DIR/mpibench-results)
#   mpibench_launch [-N NODES] [-n TASKS] ARGS...
#                    python -m mpibench ARGS on the allocation (default: all its tasks)
#   MPIBENCH_MPIEXEC the launcher `mpibench sweep` uses for its cases (always set here
#                    from mpirun and MPIBENCH_MPIRUN_FLAGS: a login node's value may not fit)
#
# Variables a user may set (sbatch --export or the environment at submit time):
#   MPIBENCH_VENV    virtual environment with mpibench (default: $MPIBENCH_DIR/.venv;
#                    when it does not exist, python3 from PATH, e.g. a site module)
#   MPIBENCH_LAUNCH  mpirun (default: the venv's launcher, Open MPI's or MPICH's, or the one
#                    on PATH) or srun (direct launch of a site MPI through Slurm's PMI plugin)
#   MPIBENCH_SRUN_MPI  srun's --mpi plugin: pmix (default; Open MPI, PMIx builds of MPICH)
#                    or pmi2 (the MPICH family: MPICH, Intel MPI, MVAPICH, Cray MPICH)
#   MPIBENCH_MPIRUN_FLAGS  mpirun flags (default for Open MPI: --with-ft ulfm --prtemca
#                    state_base_recoverable 1 --oversubscribe; the oversubscription leaves
#                    room for the replacements that respawn starts; for other launchers none)
#
# Fault scenarios need ULFM, which Open MPI offers only under `mpirun --with-ft ulfm`
# (its documentation says direct launch with srun is not supported), so jobs that
# kill ranks must keep MPIBENCH_LAUNCH=mpirun; inside an allocation mpirun takes its
# slots from Slurm by itself. Under any launch the job probes what it supports and
# leaves out (and names) the cases it cannot run: exit 4 when everything else passed.

if [[ -z "${SLURM_JOB_ID:-}" ]]; then
    echo "mpibench: error: submit this script with sbatch (SLURM_JOB_ID is not set)" >&2
    exit 2
fi

mpibench_fail() {  # one line on stderr, exit status 2 (bad set-up, like bad usage)
    echo "mpibench: error: $*" >&2
    exit 2
}

: "${MPIBENCH_VENV:=$MPIBENCH_DIR/.venv}"
if [[ -x "$MPIBENCH_VENV/bin/python" ]]; then
    PY="$MPIBENCH_VENV/bin/python"
    PATH="$MPIBENCH_VENV/bin:$PATH"
else
    PY="$(command -v python3)" || mpibench_fail "no $MPIBENCH_VENV/bin/python and no python3 on PATH"
fi
"$PY" -c "import mpibench" 2>/dev/null ||
    mpibench_fail "$PY cannot import mpibench; set MPIBENCH_VENV or install the project"

: "${MPIBENCH_OUT:=${SLURM_SUBMIT_DIR:-$PWD}/mpibench-results}"
: "${MPIBENCH_LAUNCH:=mpirun}"
: "${MPIBENCH_SRUN_MPI:=pmix}"
[[ "$MPIBENCH_SRUN_MPI" =~ ^(pmix(_v[0-9]+)?|pmi2|cray_shasta)$ ]] ||
    mpibench_fail "MPIBENCH_SRUN_MPI must be pmix, pmix_vN, pmi2 or cray_shasta, not '$MPIBENCH_SRUN_MPI'"
MPIRUN="$(command -v mpirun || true)"
mpibench_launcher_env=()
if [[ -n "$MPIRUN" ]] && ! "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI\|prte"; then
    # MPICH's hydra inside an allocation: its ranks would also see the batch step's
    # PMIX_* variables and refuse to pick a PMI ("Found both env vars PMI_SIZE and
    # PMIX_NAMESPACE"); hydra speaks PMI-1, so say so.
    mpibench_launcher_env=(env "MPIR_CVAR_PMI_VERSION=${MPIR_CVAR_PMI_VERSION:-1}")
    : "${MPIBENCH_MPIRUN_FLAGS:=}"  # no fault-tolerance flags to give
fi
: "${MPIBENCH_MPIRUN_FLAGS=--with-ft ulfm --prtemca state_base_recoverable 1 --oversubscribe}"

if [[ "$(id -u)" == 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Slurm may advertise more CPUs than the node has cores (or a job may pack more
# tasks than cores). Then pinning ranks to cores stacks them, and busy-polling
# ranks starve each other: 2000 Allreduce calls on 8 ranks / 2 cores took 94 s
# spinning and 0.26 s yielding. So: no binding, and idle ranks yield the CPU.
mpibench_cores="$(nproc --all)"
mpibench_slots="${SLURM_CPUS_ON_NODE:-${SLURM_NTASKS:-1}}"
if (( mpibench_slots > mpibench_cores )); then
    export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
    MPIBENCH_MPIRUN_FLAGS="--bind-to none $MPIBENCH_MPIRUN_FLAGS"
fi

# Jobs that `mpibench sweep` starts use the same launcher and flags.
export MPIBENCH_MPIEXEC="$MPIRUN $MPIBENCH_MPIRUN_FLAGS"
export PYTHONUNBUFFERED=1

mpibench_launch() {  # [-N NODES] [-n TASKS] ARGS: python -m mpibench ARGS on the allocation
    local nodes="${SLURM_NNODES:-1}" ntasks="$SLURM_NTASKS"
    while [[ "${1:-}" == -N || "${1:-}" == -n ]]; do
        if [[ "$1" == -N ]]; then nodes="$2"; else ntasks="$2"; fi
        shift 2
    done
    local mapping=()
    if (( nodes > 1 || nodes < ${SLURM_NNODES:-1} )); then
        # PER_NODE ranks on each node in turn: the job spans exactly the first NODES nodes.
        # Always explicit across nodes: with --oversubscribe and no mapping, Open MPI 5.0.11
        # put all 8 ranks of a 4-node, 2-per-node allocation on the first node.
        mapping=(--map-by "ppr:$(( (ntasks + nodes - 1) / nodes )):node")
    fi
    case "$MPIBENCH_LAUNCH" in
        mpirun)
            [[ -n "$MPIRUN" ]] || mpibench_fail "no mpirun on PATH (MPIBENCH_LAUNCH=mpirun)"
            # shellcheck disable=SC2086  # the flags are a word list
            ${mpibench_launcher_env[@]+"${mpibench_launcher_env[@]}"} \
                "$MPIRUN" $MPIBENCH_MPIRUN_FLAGS ${mapping[@]+"${mapping[@]}"} -n "$ntasks" "$PY" -m mpibench "$@" ;;
        srun)
            srun --mpi="$MPIBENCH_SRUN_MPI" --nodes="$nodes" --ntasks="$ntasks" "$PY" -m mpibench "$@" ;;
        *)
            mpibench_fail "MPIBENCH_LAUNCH must be mpirun or srun, not '$MPIBENCH_LAUNCH'" ;;
    esac
}

mpibench_verdict() {  # OUT LAUNCH_STATUS ARGS...: the job's status from the checker's verdict
    # The launcher can exit 0 after a violation (ULFM): for the main job and `run`, the
    # status is `python -m mpibench check OUT` (0 pass, 1 violation, 3 cannot judge),
    # and a pass stays 4 when the job left out cases its launch could not run;
    # bad usage (2) and other commands keep the launcher's status.
    local out="$1" launched="$2"
    shift 2
    if [[ "$launched" == 2 ]] || [[ -n "${1:-}" && "$1" != -* && "$1" != run ]]; then
        return "$launched"
    fi
    "$PY" -m mpibench check --confirm "$out" || return $?  # the job printed its verdict: again only if it differs
    if [[ "$launched" == 4 ]]; then return 4; fi
}

mpibench_finish_part() {  # DIR STATUS: record a part's exit status for the merge step
    echo "$2" > "$1/exit_status"
}

mpibench_banner() {  # where and how this job runs, for the job log
    echo "mpibench job $SLURM_JOB_ID: ${SLURM_NTASKS:-?} tasks on ${SLURM_JOB_NODELIST:-?}" \
         "(${mpibench_slots} CPUs advertised, ${mpibench_cores} cores here)"
    echo "  launcher: $MPIBENCH_LAUNCH$([[ $MPIBENCH_LAUNCH == srun ]] && echo " --mpi=$MPIBENCH_SRUN_MPI")  python: $PY"
    echo "  output:   $1"
}
