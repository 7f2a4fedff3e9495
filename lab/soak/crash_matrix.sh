#!/bin/sh
# Crash -> exit on every launch of the launch matrix: worker 1 raises in its second ring
# reduction (tests/plugins/crashing), RUNS launches per launch way, and the same with a
# kill scheduled too (Open MPI only: MPICH here has no process-fault tolerance).
# One CSV (default lab/data/crash_to_exit.csv): seconds from the crash record to the
# launcher's exit, the launcher's and the verdict's status, the 1-minute load around each.
#   sh lab/soak/crash_matrix.sh [RUNS] [CSV]
set -e
cd "$(dirname "$0")/../.."
RUNS=${1:-10}
CSV=${2:-lab/data/crash_to_exit.csv}
PY=.venv/bin/python
rm -f "$CSV"
for way in path full-path mpich sim; do
  $PY lab/soak/verdict_to_exit.py --launch $way --runs "$RUNS" --crash 1:2 --scenario none --recovery shrink \
    --timeout 120 --csv "$CSV" --append --keep /tmp/crash-matrix-late | tail -1
done
for way in path full-path; do
  $PY lab/soak/verdict_to_exit.py --launch $way --runs "$RUNS" --crash 1:2 --scenario kill-before-compute \
    --recovery respawn --timeout 120 --csv "$CSV" --append --keep /tmp/crash-matrix-late | tail -1
done
