#!/usr/bin/env bash
# Time from a rank's SIGKILL to the first successful op on the survivors' shrunk communicator,
# over KILLS jobs: each job is `vigil run -n RANKS` of tests/shrink/shrink_driver (mode kill);
# the victim writes the wall-clock time of its kill, each survivor the time its first op on the
# shrunk communicator (an AllGather) completed; a job's time is its slowest survivor's. Prints
# every job's time, then min / median / max. Usage:
#   bench/shrink/recovery_time.sh BUILD_DIR [KILLS=20] [RANKS=4]
set -euo pipefail
build=${1:?usage: recovery_time.sh BUILD_DIR [KILLS] [RANKS]}
kills=${2:-20}
ranks=${3:-4}
vigil=$build/src/cli/vigil
driver=$build/tests/shrink/shrink_driver
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HCCL_BUFFSIZE=4 HCCL_IF_BASE_PORT=0 ASCEND_GLOBAL_LOG_LEVEL=3
times=()
for ((i = 0; i < kills; i++)); do
  victim=$(( i % ranks ))  # every rank in turn, rank 0 (the coordinator-to-be) too
  dir=$work/job$i
  mkdir -p "$dir"
  "$vigil" run -n "$ranks" --keep-going -q --timeout 120 --log-dir "$dir/logs" -- \
    "$driver" --out "$dir" --mode kill --victim "$victim" --iters 8 --kill-at 3 \
    >/dev/null 2>&1 || { echo "job $i failed (logs kept in $dir)"; trap - EXIT; exit 1; }
  killed=$(cat "$dir/victim-time")
  last=0
  for f in "$dir"/result-*; do
    t=$(sed -n 's/.*first_ok_us=\([0-9]*\).*/\1/p' "$f")
    [[ -n $t && $t -gt $last ]] && last=$t
  done
  ms=$(awk -v a="$killed" -v b="$last" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
  echo "job $i: victim rank $victim, first op on the shrunk communicator ${ms} ms after the kill"
  times+=("$ms")
done
printf '%s\n' "${times[@]}" | sort -n | awk -v n="$ranks" '
  { v[NR] = $1 }
  END {
    med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d kills, %d ranks: min %.1f ms, median %.1f ms, max %.1f ms\n", NR, n, v[1], med, v[NR]
  }'
