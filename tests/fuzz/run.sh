#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 600), one after the other
# on one core, from its seed corpus, and prints per target the executions, the corpus growth and
# whether it found a crash, leak, UB report or timeout (the input is kept as crash-*/leak-*/
# timeout-* in the work folder; add it to corpus/<target>/ with the fix).
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
# Knobs: BUILD (default build-fuzz; configured and built here with clang++-16 when missing),
#        WORK (default /tmp/vigil-fuzz: grown corpora, crash inputs, logs), NICE (default 10).
# Exit 1 when any target found something.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
SECONDS_EACH=${1:-600}
shift || true
BUILD=${BUILD:-$repo/build-fuzz}
WORK=${WORK:-/tmp/vigil-fuzz}
NICE=${NICE:-10}
CXX_FUZZ=${CXX_FUZZ:-clang++-16}
CC_FUZZ=${CC_FUZZ:-clang-16}
targets=("$@")
# Every target has a seed folder corpus/<target>/.
[ "${#targets[@]}" -eq 0 ] && targets=($(ls "$here/corpus"))
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=$CC_FUZZ CXX=$CXX_FUZZ cmake -S "$repo" -B "$BUILD" -DVIGIL_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" -j2 --target vigil_fuzzers >/dev/null
mkdir -p "$WORK"
found=0
printf '%-16s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  bin=$BUILD/tests/fuzz/fuzz_$t
  seeds=$here/corpus/$t
  grown=$WORK/corpus-$t
  art=$WORK/artifacts-$t/
  mkdir -p "$grown" "$art"
  log=$WORK/$t.log
  # -rss_limit_mb: the parsers hold one input at a time; -timeout: no input may take 10 s.
  # Exit status: libFuzzer's own (non-zero on a finding); the log says which.
  set +e
  nice -n "$NICE" "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$art" "$grown" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  units=$(find "$grown" -type f | wc -l)
  result=ok
  if [ "$rc" -ne 0 ]; then
    found=1
    result="FOUND ($(grep -m1 -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)[^(]*|runtime error:.*|fuzz check failed.*' "$log" || echo "exit $rc")); inputs: $(ls "$art" | tr '\n' ' ')"
  fi
  printf '%-16s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result"
done
exit "$found"
