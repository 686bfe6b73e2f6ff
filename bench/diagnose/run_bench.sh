#!/bin/sh
# Times `vigil diagnose` on a generated 1,024-rank log set against `grep -rc HCCL` on the same
# files, in the same run, with the page cache warm for both.
#   bench/diagnose/run_bench.sh BUILD_DIR [DATA_DIR] [MIB_PER_RANK] [RUNS]
# Generated data goes to DATA_DIR (default /tmp/vigil_diag_bench), never into the source tree.
# Prints wall time, CPU seconds (user + sys) and GB per CPU-second for both tools: on a shared
# machine the wall time depends on the load, the CPU time much less.
set -eu
BUILD=${1:?build dir}
DATA=${2:-/tmp/vigil_diag_bench}
MIB=${3:-2}
RUNS=${4:-3}
GEN=$BUILD/bench/diagnose/gen_diagnose_logs
TOOL=$BUILD/tests/diagnose/vigil_diagnose_dev
[ -x "$BUILD/src/cli/vigil" ] && "$BUILD/src/cli/vigil" diagnose --help >/dev/null 2>&1 && TOOL="$BUILD/src/cli/vigil diagnose"
if [ ! -d "$DATA" ]; then
  "$GEN" "$DATA" --ranks 1024 --mib-per-rank "$MIB"
fi
BYTES=$(du -sb "$DATA" | cut -f1)
OUT=${TMPDIR:-/tmp}/vigil_diag_bench.$$
mkdir -p "$OUT"
cat $(find "$DATA" -type f) > /dev/null   # warm the page cache for both tools
echo "data: $DATA, $BYTES bytes; load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
i=0
while [ "$i" -lt "$RUNS" ]; do
  i=$((i + 1))
  # grep's output goes to a file: with stdout on /dev/null GNU grep stops at the first match.
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/grep.time" grep -rc HCCL "$DATA" > "$OUT/grep.out"
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/diag.time" $TOOL --no-progress "$DATA" > "$OUT/diag.out"
  awk -v b="$BYTES" -v run="$i" '
    FNR == 1 { f++ }
    f == 1 { gw = $1; gc = $2 + $3 }
    f == 2 { dw = $1; dc = $2 + $3; rss = $4 }
    END {
      printf "run %d: grep -rc HCCL %.2f s wall, %.2f CPU-s (%.2f GB/CPU-s) | vigil diagnose %.2f s wall (%.2f GB/s), %.2f CPU-s (%.2f GB/CPU-s), peak RSS %.0f MB | wall ratio diagnose/grep %.2f\n",
             run, gw, gc, b / gc / 1e9, dw, b / dw / 1e9, dc, b / dc / 1e9, rss / 1024, dw / gw
    }' "$OUT/grep.time" "$OUT/diag.time"
done
head -3 "$OUT/diag.out"
rm -rf "$OUT"
