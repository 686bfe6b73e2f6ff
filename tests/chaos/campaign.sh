#!/usr/bin/env bash
# A chaos campaign: N randomized fault runs from SEED on (default 1), niced, then the confusion
# matrices. Per-run details (seed, parameters, expected, reported) are in RESULTS/run-SEED/
# result.json; the logs of failed runs stay beside them. Replay one run:
#   tests/chaos/chaos_run.py --vigil build/src/cli/vigil --job build/tests/chaos/chaos_job \
#     --out RESULTS --seeds SEED --keep
# usage: campaign.sh N [SEED]   (env: BUILD=build dir, RESULTS=results folder)
set -u
N=${1:?usage: campaign.sh N [SEED]}
SEED=${2:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$HERE/../../build}
RESULTS=${RESULTS:-chaos-results/campaign-$SEED-$N}
mkdir -p "$RESULTS"
nice -n 10 python3 "$HERE/chaos_run.py" --vigil "$BUILD/src/cli/vigil" \
  --job "$BUILD/tests/chaos/chaos_job" --out "$RESULTS" --first "$SEED" --count "$N" \
  | tee "$RESULTS/runs.txt"
python3 "$HERE/chaos_matrix.py" "$RESULTS" | tee "$RESULTS/matrix.txt"
