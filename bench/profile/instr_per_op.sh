#!/usr/bin/env bash
# Instructions per op per rank, by thread, under callgrind: a load-independent measure of the
# per-op software cost (the latency of small collectives on a shared host is bound by it).
#
#   bench/profile/instr_per_op.sh [OP] [BYTES] [ITERS]      (defaults: allreduce 64 2000)
#
# Runs 2 ranks over shm (`vigil run -n 2 -- valgrind --tool=callgrind vigil bench ...`) twice,
# with ITERS and 2*ITERS iterations, and prints the difference divided by ITERS for rank 0's
# caller thread (enqueue: API checks, op record, observers) and stream thread (execute), so
# start-up and tear-down cancel out. VIGIL=path/to/vigil (default build/src/cli/vigil).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VIGIL="${VIGIL:-$REPO/build/src/cli/vigil}"
OP="${1:-allreduce}"
BYTES="${2:-64}"
ITERS="${3:-2000}"
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/instr-per-op.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# run N -> prints "caller stream" instruction totals of rank 0
run() {
  local n="$1" dir="$work/n$1"
  mkdir -p "$dir"
  "$VIGIL" run -n 2 --log-dir "$dir/logs" -- valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$dir/cg.%q{RANK_ID}.%p" \
      "$VIGIL" bench "$OP" --transport shm --outofplace -b "$BYTES" -e "$BYTES" -n "$n" -w 10 \
      >"$dir/out" 2>&1 || { cat "$dir/out" >&2; exit 1; }
  local caller=0 stream=0 stream_file="" f total
  for f in "$dir"/cg.0.*-*; do
    total="$(awk '/^totals:/{print $2}' "$f")"
    # The caller thread is part 1; the stream thread is the busiest of the others.
    if [[ "$f" == *-01 ]]; then
      caller="$total"
    elif (( total > stream )); then
      stream="$total"
      stream_file="$f"
    fi
  done
  # The stream thread's instructions inside transport::Progress: mostly polling while the peer
  # (slowed down by valgrind, sharing the machine) catches up, so they move with the load.
  local progress
  progress="$(callgrind_annotate --inclusive=yes "$stream_file" 2>/dev/null |
    awk '!n && /vigil::transport::Progress\(/ {gsub(",", "", $1); print $1; n = 1}')"
  echo "$caller $stream ${progress:-0}"
}

read -r c1 s1 p1 < <(run "$ITERS")
read -r c2 s2 p2 < <(run "$((2 * ITERS))")
echo "op=$OP bytes=$BYTES ranks=2 transport=shm iters=$ITERS (difference of $ITERS and $((2 * ITERS)))"
echo "caller (enqueue) instructions/op: $(( (c2 - c1) / ITERS ))"
echo "stream (execute) instructions/op: $(( (s2 - s1) / ITERS ))"
# Without transport::Progress (its polling depends on the machine's load: the line above moves
# by ~1,000 between runs); compare changes outside the transport with this one.
echo "stream minus transport::Progress instructions/op: $(( (s2 - p2 - s1 + p1) / ITERS ))"
