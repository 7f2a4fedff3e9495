#!/bin/sh
# Verdict -> exit of respawn jobs: CHUNKS x 25 launches with a planted violation (the
# unweighted mutant: exit 1) and as many clean ones (exit 0), kill-before-compute under
# respawn on 3 ranks, each launch under `timeout 60`; every launch one row of CSV (default
# lab/data/respawn_verdict_to_exit.csv, appended). A launch that leaves more than 10 s
# after its verdict, or with another status, keeps its output in /tmp/respawn-endings-late.
# One chunk (25 + 25 launches) takes about 5 minutes on 2 cores:
#   sh lab/soak/respawn_endings.sh [CHUNKS] [CSV]
cd "$(dirname "$0")/../.."
CHUNKS=${1:-1}
CSV=${2:-lab/data/respawn_verdict_to_exit.csv}
i=0
while [ $i -lt "$CHUNKS" ]; do
  for mutant in unweighted ""; do
    .venv/bin/python lab/soak/verdict_to_exit.py --runs 25 --timeout 60 ${mutant:+--mutant $mutant} \
      --csv "$CSV" --append --keep /tmp/respawn-endings-late | tail -1
  done
  i=$((i + 1))
done
