#!/bin/sh
# One huge plog against the same bytes as many files. `vigil diagnose` reads a large file in
# pieces split at line boundaries (src/diagnose/scanner.h), so one 1.5 GB file should go as fast
# as the same bytes in 24 files; -j1 (one thread, no pieces) shows what one thread per file gave.
#   bench/diagnose/run_bigfile_bench.sh BUILD_DIR [DATA_DIR] [MIB_PER_RANK] [RUNS]
# DATA_DIR/many: 8 ranks of MIB_PER_RANK MiB (gen_diagnose_logs); DATA_DIR/one: the same files
# concatenated into one plog. Generated data never goes into the source tree.
set -eu
BUILD=${1:?build dir}
DATA=${2:-/tmp/vigil_diag_bigfile}
MIB=${3:-190}
RUNS=${4:-3}
GEN=$BUILD/bench/diagnose/gen_diagnose_logs
TOOL=$BUILD/tests/diagnose/vigil_diagnose_dev
[ -x "$BUILD/src/cli/vigil" ] && "$BUILD/src/cli/vigil" diagnose --help >/dev/null 2>&1 && TOOL="$BUILD/src/cli/vigil diagnose"
[ -d "$DATA/many" ] || "$GEN" "$DATA/many" --ranks 8 --mib-per-rank "$MIB" --stuck 5
ONE=$DATA/one/node0/debug/plog/plog-100000_20251024111600000.log
if [ ! -f "$ONE" ]; then
  mkdir -p "$(dirname "$ONE")"
  find "$DATA/many" -type f | sort | xargs cat > "$ONE"
fi
BYTES=$(du -sb "$DATA/one" | cut -f1)
OUT=${TMPDIR:-/tmp}/vigil_diag_bigfile.$$
mkdir -p "$OUT"
cat "$ONE" $(find "$DATA/many" -type f) > /dev/null  # warm the page cache
echo "data: $BYTES bytes as one file ($(find "$DATA/many" -type f | wc -l) files in many/); load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
timed() {  # label, output file, command...
  label=$1 out=$2
  shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/t" "$@" > "$out"
  awk -v b="$BYTES" -v l="$label" '{ printf "  %-34s %6.2f s wall (%5.2f GB/s), %6.2f CPU-s, peak RSS %4.0f MB\n", l, $1, b / $1 / 1e9, $2 + $3, $4 / 1024 }' "$OUT/t"
}
i=0
while [ "$i" -lt "$RUNS" ]; do
  i=$((i + 1))
  echo "run $i:"
  timed "grep -rc HCCL one/" "$OUT/grep.out" grep -rc HCCL "$DATA/one"
  timed "diagnose many/ (24 files)" "$OUT/many.out" $TOOL --no-progress "$DATA/many"
  timed "diagnose one/ (1 file, pieces)" "$OUT/one.out" $TOOL --no-progress "$DATA/one"
  timed "diagnose one/ -j1 (1 file, 1 thread)" "$OUT/one1.out" $TOOL --no-progress -j1 "$DATA/one"
done
echo "verdicts:"
for f in many one one1; do echo "  $f: $(sed -n 3p "$OUT/$f.out")"; done
rm -rf "$OUT"
