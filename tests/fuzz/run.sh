#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 600) from its seed corpus,
# and prints per target the executions, exec/s, the corpus growth and whether it found a crash,
# leak, UB report, failed property check or timeout. For a finding it also prints the input's
# path (crash-*/leak-*/timeout-* in the work folder; add it to corpus/<target>/ with the fix),
# the command that replays it, and the sanitizer report.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#   tests/fuzz/run.sh --build-only
# Knobs: BUILD (default build-fuzz; configured here with clang++-16 when it has no CMakeCache.txt),
#        OPT (default "-O1 -gline-tables-only": VIGIL_FUZZ_OPT of a build configured here; when
#        given, also set in an existing BUILD),
#        WORK (default /tmp/vigil-fuzz: grown corpora, crash inputs, logs), NICE (default 10),
#        JOBS (default 1: targets fuzzed at once, one core each).
# Exit 1 when any target found something.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
SECONDS_EACH=${1:-600}
shift || true
BUILD=${BUILD:-$repo/build-fuzz}
opt_given=${OPT+yes}
OPT=${OPT:--O1 -gline-tables-only}
WORK=${WORK:-/tmp/vigil-fuzz}
NICE=${NICE:-10}
JOBS=${JOBS:-1}
CXX_FUZZ=${CXX_FUZZ:-clang++-16}
CC_FUZZ=${CC_FUZZ:-clang-16}
targets=("$@")
# Every target has a seed folder corpus/<target>/.
[ "${#targets[@]}" -eq 0 ] && targets=($(ls "$here/corpus"))
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  # Debug: no -DNDEBUG, so the library's assertions hold too; OPT comes after the build type's -g.
  CC=$CC_FUZZ CXX=$CXX_FUZZ cmake -S "$repo" -B "$BUILD" -DVIGIL_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=Debug -DVIGIL_FUZZ_OPT="$OPT" >/dev/null
elif [ -n "$opt_given" ]; then
  cmake -S "$repo" -B "$BUILD" -DVIGIL_FUZZ_OPT="$OPT" >/dev/null
fi
cmake --build "$BUILD" -j2 --target vigil_fuzzers >/dev/null
[ "$build_only" -eq 1 ] && exit 0
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# Reports name functions and lines only through llvm-symbolizer (any version reads clang-16's
# line tables), and clang-16's runtime does not find it on PATH by itself.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  sym=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
  [ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH=$sym
fi

# Fuzzes target $1; writes its table row to $WORK/$1.row and, for a finding, the report to
# $WORK/$1.found.
fuzz_one() {
  local t=$1 rc
  local bin=$BUILD/tests/fuzz/fuzz_$t seeds=$here/corpus/$t grown=$WORK/corpus-$t
  local art=$WORK/artifacts-$t/ log=$WORK/$t.log
  mkdir -p "$grown" "$art"
  rm -f "$WORK/$t.found"
  # -rss_limit_mb: the parsers hold one input at a time; -timeout: no input may take 10 s.
  # Exit status: libFuzzer's own (non-zero on a finding); the log says which.
  set +e
  nice -n "$NICE" "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$art" "$grown" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  local execs rate units result=ok inputs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  units=$(find "$grown" -type f | wc -l)
  if [ "$rc" -ne 0 ]; then
    inputs=$(sed -n 's/.*Test unit written to //p' "$log")
    result="FOUND ($(grep -m1 -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)[^(]*|runtime error:.*|fuzz check failed.*' "$log" || echo "exit $rc"))"
    {
      echo "==== $t: exit $rc"
      for f in $inputs; do echo "input: $f"; echo "replay: $bin $f"; done
      [ -n "$inputs" ] || echo "input: none kept (see $log)"
      # The report: from the first line of the sanitizer's, libFuzzer's or the check's own.
      awk '!on && /ERROR: |runtime error:|fuzz check failed|^==[0-9]+==/ {on = 1} on' "$log" | head -n 200
    } >"$WORK/$t.found"
  fi
  printf '%-16s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result" >"$WORK/$t.row"
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

found=0
printf '%-16s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do cat "$WORK/$t.row"; done
for t in "${targets[@]}"; do
  if [ -f "$WORK/$t.found" ]; then found=1; cat "$WORK/$t.found"; fi
done
exit "$found"
