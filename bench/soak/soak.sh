#!/usr/bin/env bash
# Soak: 8 ranks (`vigil run -n 8 -- soak_ops`) issue a random mix of collectives and Send/Recv,
# 8 B to 16 MiB, checking every result, for DURATION seconds (default 1800). Every INTERVAL
# seconds (default 10) each rank's RSS, threads (/proc/PID/status), open fds (/proc/PID/fd) and
# the bytes of its log files (plog and friends named with its pid) go into a CSV; at the end
# summarize.py prints first / middle / last / max per rank and whether each series stayed flat
# after the warm-up. Not part of CI.
#   bench/soak/soak.sh [BUILD_DIR]     (default: build; builds vigil and soak_ops there)
# Knobs: DURATION, INTERVAL, RANKS (power of two, default 8), OUT (default /tmp/vigil-soak-<time>),
#        TRANSPORT (shm|tcp, default vigil run's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
DURATION=${DURATION:-1800}
INTERVAL=${INTERVAL:-10}
RANKS=${RANKS:-8}
OUT=${OUT:-/tmp/vigil-soak-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
cmake --build "$BUILD" -j2 --target vigil soak_ops >/dev/null
VIGIL=$BUILD/src/cli/vigil
PROG=$(find "$BUILD/bench/soak" -maxdepth 1 -name soak_ops -type f -perm -u+x | head -n 1)
[ -n "$PROG" ] || { echo "soak_ops was not built (configure with VIGIL_BUILD_BENCH=ON)" >&2; exit 1; }
CSV=$OUT/samples.csv
LOGS=$OUT/logs
extra=()
[ -n "${TRANSPORT:-}" ] && extra+=(--transport "$TRANSPORT")
# vigil run's own time limit: the soak's length plus a margin for start-up and the last op.
"$VIGIL" run -n "$RANKS" "${extra[@]}" --log-dir "$LOGS" --timeout $((DURATION + 300)) -- \
  "$PROG" --seconds "$DURATION" >"$OUT/run.out" 2>"$OUT/run.err" &
launcher=$!
echo "soak: $RANKS ranks for ${DURATION}s, sampling every ${INTERVAL}s into $CSV (launcher pid $launcher)"
echo "t_s,rank,pid,rss_kib,threads,fds,log_bytes" >"$CSV"

# The ranks are the launcher's children running soak_ops; RANK_ID is in their environment.
rank_pids() {
  local kids pid
  kids=$(cat /proc/"$launcher"/task/*/children 2>/dev/null || true)
  for pid in $kids; do
    [ "$(readlink /proc/"$pid"/exe 2>/dev/null)" = "$(readlink -f "$PROG")" ] || continue
    local r
    r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^RANK_ID=//p')
    if [ -n "$r" ]; then echo "$r $pid"; fi
  done
  return 0
}
# Bytes of the files under the log folder whose name carries the pid (plog-PID_..., flight
# recorder dumps, entry logs).
log_bytes() {
  (find "$LOGS" -type f -name "*$1*" -printf '%s\n' 2>/dev/null || true) | awk '{s += $1} END {print s + 0}'
}

start=$(date +%s)
limit=$((DURATION + 600))  # the sampler stops even if the launcher hangs
while kill -0 "$launcher" 2>/dev/null; do
  now=$(($(date +%s) - start))
  if [ "$now" -gt "$limit" ]; then echo "soak: launcher still running after ${limit}s" >&2; break; fi
  while read -r rank pid; do
    [ -n "$pid" ] || continue
    status=/proc/$pid/status
    rss=$(awk '/^VmRSS:/ {print $2}' "$status" 2>/dev/null || true)
    thr=$(awk '/^Threads:/ {print $2}' "$status" 2>/dev/null || true)
    fds=$( (find /proc/"$pid"/fd -mindepth 1 -maxdepth 1 2>/dev/null || true) | wc -l)
    [ -n "$rss" ] && [ -n "$thr" ] || continue
    echo "$now,$rank,$pid,$rss,$thr,$fds,$(log_bytes "$pid")" >>"$CSV"
  done < <(rank_pids)
  sleep "$INTERVAL"
done
rc=0
wait "$launcher" || rc=$?
echo "soak: vigil run exited $rc; per-rank summaries:"
grep -h "soak_ops rank" "$OUT/run.out" "$OUT/run.err" | sort -k3n || true
python3 "$here/summarize.py" "$CSV"
exit "$rc"
