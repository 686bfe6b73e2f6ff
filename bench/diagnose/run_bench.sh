#!/bin/sh
# Times `vigil diagnose` on a generated 1,024-rank log set against `grep -rc HCCL` on the same
# files, in the same run, with the page cache warm for both.
#   bench/diagnose/run_bench.sh BUILD_DIR [DATA_DIR] [MIB_PER_RANK]
# Generated data goes to DATA_DIR (default /tmp/vigil_diag_bench), never into the source tree.
set -eu
BUILD=${1:?build dir}
DATA=${2:-/tmp/vigil_diag_bench}
MIB=${3:-2}
GEN=$BUILD/bench/diagnose/gen_diagnose_logs
TOOL=$BUILD/tests/diagnose/vigil_diagnose_dev
[ -x "$BUILD/src/cli/vigil" ] && "$BUILD/src/cli/vigil" diagnose --help >/dev/null 2>&1 && TOOL="$BUILD/src/cli/vigil diagnose"
if [ ! -d "$DATA" ]; then
  "$GEN" "$DATA" --ranks 1024 --mib-per-rank "$MIB"
fi
BYTES=$(du -sb "$DATA" | cut -f1)
cat $(find "$DATA" -type f) > /dev/null   # warm the page cache for both tools
now() { date +%s.%N; }
t0=$(now); grep -rc HCCL "$DATA" > /dev/null; t1=$(now)
/usr/bin/time -f "%M" -o /tmp/vigil_diag_bench_rss $TOOL --no-progress "$DATA" > /tmp/vigil_diag_bench_out.txt; t2=$(now)
RSS_KB=$(tail -1 /tmp/vigil_diag_bench_rss)
awk -v b="$BYTES" -v g0="$t0" -v g1="$t1" -v d1="$t2" -v rss="$RSS_KB" 'BEGIN {
  g = g1 - g0; d = d1 - g1;
  printf "data: %.2f GiB\n", b / 1073741824;
  printf "grep -rc HCCL: %.2f s (%.2f GB/s)\n", g, b / g / 1e9;
  printf "vigil diagnose: %.2f s (%.2f GB/s), peak RSS %.0f MB\n", d, b / d / 1e9, rss / 1024;
  printf "diagnose / grep time ratio: %.2f\n", d / g;
}'
head -3 /tmp/vigil_diag_bench_out.txt
