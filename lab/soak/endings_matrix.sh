#!/bin/sh
# Verdict -> exit over the larger worlds: 6 and 8 ranks, a kill in the middle of a reduction
# (ring) and of a sharded strategy's all-gather (zero-ring), under respawn and shrink, each
# clean (exit 0) and with a planted weighting defect (the self-test's unweighted: exit 1).
# RUNS launches per cell, each under `timeout 150`, one CSV row per launch (default
# lab/data/endings_matrix.csv, appended); late or wrong launches keep their output in
# /tmp/endings-late. 16 cells x 10 launches take about 25 minutes on 2 cores:
#   sh lab/soak/endings_matrix.sh [RUNS] [CSV]
cd "$(dirname "$0")/../.."
RUNS=${1:-10}
CSV=${2:-lab/data/endings_matrix.csv}
for ranks in 6 8; do
  for cell in kill-mid-reduction:ring kill-mid-gather:zero-ring; do
    for recovery in respawn shrink; do
      for mutant in "" unweighted; do
        .venv/bin/python lab/soak/verdict_to_exit.py --runs "$RUNS" --ranks "$ranks" --timeout 150 \
          --scenario "${cell%%:*}" --strategy "${cell##*:}" --recovery "$recovery" ${mutant:+--mutant $mutant} \
          --csv "$CSV" --append --keep /tmp/endings-late | tail -1 | sed "s/^/$ranks ranks ${cell} $recovery ${mutant:-clean}: /"
      done
    done
  done
done
