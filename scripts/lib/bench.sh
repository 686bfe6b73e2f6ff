# The steps the comparison benchmarks share (bench/compare/compare.sh on one machine,
# bench/cluster/run.sh across network-namespace hosts). Source it; it only defines functions.
# The caller defines `log MESSAGE...` (its own prefix) and, for bench_run, sets OUT (the results
# folder, with OUT/logs) and RUN_TIMEOUT (seconds per run).

# bench_apt_install PKG...: installs Debian packages, through sudo when not root; exits the
# script when apt-get fails. Nothing to do without arguments.
bench_apt_install() {
  [ $# -gt 0 ] || return 0
  log "installing $*"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null || true
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "$@" >/dev/null; then
    log "apt-get install $* failed"; exit 1
  fi
}

# bench_build_peers SRC BIN: the OpenMPI and Gloo harnesses (SRC/mpi_bench.cc, SRC/gloo_bench.cc)
# as BIN/mpi_bench and BIN/gloo_bench; exits the script when one does not build.
bench_build_peers() {
  local src=$1 bin=$2
  mpicxx -std=c++17 -O3 -march=native -o "$bin/mpi_bench" "$src/mpi_bench.cc" || exit 1
  g++ -std=c++17 -O3 -march=native -o "$bin/gloo_bench" "$src/gloo_bench.cc" -lgloo -lpthread ||
    exit 1
}

# bench_build_vigil REPO BUILD LOG JOBS: unless VIGIL names a binary already, builds `vigil`
# (RelWithDebInfo, no tests, no benchmarks) in BUILD/vigil with JOBS jobs, its output in LOG,
# and sets VIGIL to it; exits the script when the build fails.
bench_build_vigil() {
  local repo=$1 build=$2 out=$3 jobs=$4
  [ -z "${VIGIL:-}" ] || return 0
  log "building vigil (RelWithDebInfo) in $build/vigil"
  cmake -S "$repo" -B "$build/vigil" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_BUILD_TESTS=OFF \
        -DVIGIL_BUILD_BENCH=OFF >"$out" 2>&1 || { log "cmake failed: $out"; exit 1; }
  cmake --build "$build/vigil" -j"$jobs" --target vigil >>"$out" 2>&1 ||
    { log "build failed: $out"; exit 1; }
  VIGIL="$build/vigil/src/cli/vigil"
}

# bench_run NAME -- COMMAND...: COMMAND's stdout to OUT/NAME.json, its stderr to
# OUT/logs/NAME.err, killed after RUN_TIMEOUT seconds. A run that fails is logged and counted in
# FAILED.
bench_run() {
  local name="$1"; shift; [ "$1" = "--" ] && shift
  local t0=$SECONDS
  timeout -k 10 "$RUN_TIMEOUT" "$@" >"$OUT/$name.json" 2>"$OUT/logs/$name.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    FAILED=$((${FAILED:-0} + 1))
    log "$name: exit $rc after $((SECONDS - t0))s (see $OUT/logs/$name.err)"
    [ $rc -eq 124 ] && echo "timed out after ${RUN_TIMEOUT}s" >>"$OUT/logs/$name.err"
  else
    log "$name: $((SECONDS - t0))s"
  fi
}

# bench_load: the machine's load averages (1, 5, 15 min).
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }
