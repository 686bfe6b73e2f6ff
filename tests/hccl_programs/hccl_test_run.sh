#!/usr/bin/env bash
# Builds hccl_test programs against an installed Vigil and runs them under mpirun, 4 ranks.
#
#   hccl_test_run.sh setup BUILD_DIR SOURCE_DIR WORK_DIR
#       installs Vigil from BUILD_DIR into WORK_DIR/prefix, builds the stand-in
#       (tests/hccl_programs/hccl_test) with its Makefile into WORK_DIR/standin, and the real
#       hccl_test too when VIGIL_HCCL_TEST_SRC names its folder or
#       $ASCEND_HOME_PATH/tools/hccl_test exists (copied to WORK_DIR/real, built unchanged).
#   hccl_test_run.sh PART BUILD_DIR SOURCE_DIR WORK_DIR
#       runs the stand-in's lines of PART in hccl_test_cases.txt (next to this script);
#       PART "real" runs the "ops" lines with the real hccl_test, "real_X" the lines of part X
#       (e.g. real_zero_copy), and "vigil_run" starts all_reduce_test through `vigil run`.
# Every run must end with status 0 and print its table with the expected number of rows, each
# "success" with a time above 0. Exits 77 (skipped) with the reason when mpirun, mpicxx, the
# real hccl_test or what the prefix must provide is missing.
set -uo pipefail
part=$1
build_dir=$2
src_dir=$3
work=$4
here=$(cd "$(dirname "$0")" && pwd)
user_ascend_home=${ASCEND_HOME_PATH:-}  # before set_env.sh points it at the Vigil prefix
cases=$here/hccl_test_cases.txt
nranks=4
run_timeout=${VIGIL_HCCL_TEST_TIMEOUT:-120}

skip() {
  echo "SKIPPED: $*"
  exit 77
}

# mpirun and the compiler wrappers; MPI_HOME from the environment or the wrapper.
for tool in mpirun mpicxx make g++; do
  command -v "$tool" >/dev/null || skip "no $tool on PATH (install openmpi-bin libopenmpi-dev)"
done
if [ -z "${MPI_HOME:-}" ]; then
  inc=$(mpicxx --showme:incdirs 2>/dev/null | awk '{print $1}')
  [ -n "$inc" ] || inc=$(dirname "$(dirname "$(command -v mpicxx)")")/include
  MPI_HOME=$(dirname "$inc")
fi
[ -f "$MPI_HOME/include/mpi.h" ] && [ -e "$MPI_HOME/lib/libmpi.so" ] ||
  skip "MPI_HOME=$MPI_HOME has no include/mpi.h and lib/libmpi.so (set MPI_HOME)"
mpirun_args=(-n "$nranks" --oversubscribe --bind-to none)
# Open MPI starts in half the time without its network layers (UCX, OFI); its ranks only need
# shared memory here (and no cross-memory attach, which containers often forbid).
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_mtl=${OMPI_MCA_mtl:-^ofi} OMPI_MCA_osc=${OMPI_MCA_osc:-^ucx}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
prefix=$work/prefix

# What an hccl_test build needs from the prefix besides libhccl and the basic acl runtime.
check_prefix() {
  local missing=()
  local f
  for f in include/acl/acl_prof.h lib64/libacl_rt.so lib64/libmsprofiler.so; do
    [ -e "$prefix/$f" ] || missing+=("$f")
  done
  local sym exported
  exported=$(nm -D --defined-only "$prefix"/lib64/*.so 2>/dev/null | awk '{print $NF}')
  for sym in aclrtEventElapsedTime aclrtCreateEventWithFlag aclrtResetEvent aclrtGetSocName \
             aclrtSetDeviceSatMode aclrtSetStreamFailureMode aclrtReserveMemAddress \
             aclrtMallocPhysical aclrtMapMem aclrtMemGetAllocationGranularity aclprofStart; do
    grep -rqE "\\b$sym *\\(" "$prefix/include/acl" 2>/dev/null &&
      grep -qx "$sym" <<<"$exported" || missing+=("$sym")
  done
  [ "${#missing[@]}" -eq 0 ] || echo "the Vigil prefix lacks ${missing[*]}"
}

# An MPI_HOME the real hccl_test links with unchanged: its sources include mpi.h from C++,
# which in MPI builds with C++ bindings (Debian's OpenMPI) needs libmpi_cxx besides libmpi, and
# its Makefile links -lmpi alone. Here lib/libmpi.so is a linker script naming both.
real_mpi_home() {
  local cxx=$MPI_HOME/lib/libmpi_cxx.so
  if ! grep -q "OMPI_BUILD_CXX_BINDINGS 1" "$MPI_HOME/include/mpi.h" || [ ! -e "$cxx" ]; then
    echo "$MPI_HOME"
    return
  fi
  local home=$work/mpi-home
  mkdir -p "$home/lib"
  ln -sfn "$MPI_HOME/include" "$home/include"
  echo "INPUT($(readlink -f "$MPI_HOME/lib/libmpi.so") $(readlink -f "$cxx"))" \
    >"$home/lib/libmpi.so"
  echo "$home"
}

setup() {
  rm -rf "$work"
  mkdir -p "$work"
  cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; echo "cmake --install failed"; exit 1; }
  local lack
  lack=$(check_prefix)
  if [ -n "$lack" ]; then
    echo "$lack" >"$work/skip-reason"
    skip "$lack"
  fi
  # shellcheck disable=SC1091
  source "$prefix/set_env.sh"
  cp -r "$src_dir/tests/hccl_programs/hccl_test" "$work/standin"
  local cxx=g++
  command -v ccache >/dev/null && cxx="ccache g++"
  echo "+ make MPI_HOME=$MPI_HOME ASCEND_DIR=$ASCEND_HOME_PATH (stand-in)"
  (cd "$work/standin" && make -j"$(nproc)" MPI_HOME="$MPI_HOME" ASCEND_DIR="$ASCEND_HOME_PATH" \
     CXX="$cxx") >"$work/standin-build.log" 2>&1 ||
    { cat "$work/standin-build.log"; echo "the stand-in does not build"; exit 1; }
  local real=${VIGIL_HCCL_TEST_SRC:-}
  if [ -z "$real" ] && [ -n "$user_ascend_home" ]; then
    real=$user_ascend_home/tools/hccl_test
  fi
  if [ -n "$real" ] && [ -f "$real/Makefile" ]; then
    cp -r "$real" "$work/real"
    local home
    home=$(real_mpi_home)
    echo "+ make MPI_HOME=$home ASCEND_DIR=$ASCEND_HOME_PATH (hccl_test from $real)"
    (cd "$work/real" && make MPI_HOME="$home" ASCEND_DIR="$ASCEND_HOME_PATH") \
      >"$work/real-build.log" 2>&1 ||
      { cat "$work/real-build.log"; echo "hccl_test from $real does not build"; exit 1; }
  else
    echo "no real hccl_test (VIGIL_HCCL_TEST_SRC unset, no \$ASCEND_HOME_PATH/tools/hccl_test)"
  fi
  echo "setup done: $(ls "$work/standin/bin" | wc -l) stand-in programs$( [ -d "$work/real/bin" ] &&
    echo ", $(ls "$work/real/bin" | wc -l) hccl_test programs")"
}

# Checks one run's output file: its status, then the table the printing rank wrote.
check_output() {
  local out=$1 rows=$2 status=$3
  local problems=()
  [ "$status" -eq 0 ] || problems+=("exit status $status")
  grep -q "check result failed" "$out" && problems+=("a rank's check failed")
  grep -q "interface return err" "$out" && problems+=("an ACL/HCCL call failed")
  grep -q "no match datatype" "$out" && problems+=("no comparison for the dtype")
  local got
  got=$(awk '
    /^data_size\(Bytes\): \| aveg_time\(us\): \| alg_bandwidth\(GB\/s\): \| check_result:$/ {
      table = 1; next }
    table && /^[0-9]+ +\| / {
      split($0, f, "|"); n++
      gsub(/ /, "", f[2]); gsub(/ /, "", f[4])
      if (f[4] != "success") bad = bad " row " n ": " f[4]
      else if (!(f[2] + 0 > 0)) bad = bad " row " n ": time " f[2]
    }
    END { print n + 0 (bad == "" ? "" : ";" bad) }' "$out")
  [ "${got%%;*}" = "$rows" ] || problems+=("${got%%;*} table rows, expected $rows")
  [[ "$got" == *";"* ]] && problems+=("${got#*;}")
  if [ "${#problems[@]}" -ne 0 ]; then
    echo "FAILED: ${problems[*]}"
    tail -n 40 "$out"
    return 1
  fi
  return 0
}

# Expands the case lines of a part ({dtype} x {op}) into "rows|env...|program args..." lines.
case_lines() {
  local want=$1
  awk -v want="$want" -v work="$work" '
    /^@dtypes/ { nd = split(substr($0, 9), dt, " "); next }
    /^@ops/ { no = split(substr($0, 5), op, " "); next }
    /^@except/ { ex[$2 " " $3] = 1; next }
    /^#/ || NF == 0 { next }
    $1 == want {
      line = ""
      for (i = 3; i <= NF; i++) line = line (i > 3 ? " " : "") $i
      gsub(/\{work\}/, work, line)
      nd2 = index(line, "{dtype}") ? nd : 1
      no2 = index(line, "{op}") ? no : 1
      for (a = 1; a <= nd2; a++) for (b = 1; b <= no2; b++) {
        if ((dt[a] " " op[b]) in ex && index(line, "{dtype}") && index(line, "{op}")) continue
        l = line; gsub(/\{dtype\}/, dt[a], l); gsub(/\{op\}/, op[b], l)
        print $2 "|" l
      }
    }' "$cases"
}

# Runs the lines of a case part with the programs of BIN_DIR; LAUNCH is "mpirun" or "vigil".
run_part() {
  local lines_of=$1 bin_dir=$2 launch=$3
  [ -d "$bin_dir" ] || skip "no programs in $bin_dir: $(cat "$work/skip-reason" 2>/dev/null ||
    echo "the setup test did not build them")"
  # shellcheck disable=SC1091
  source "$prefix/set_env.sh"
  local logs=$work/logs/$part
  local outs=$work/out/$part
  rm -rf "$logs" "$outs"
  mkdir -p "$logs" "$outs"
  local failed=0 total=0 start=$SECONDS
  local spec
  while IFS= read -r spec <&3; do
    local rows=${spec%%|*}
    local -a words env=()
    read -r -a words <<<"${spec#*|}"
    while [[ "${words[0]}" == *=* ]]; do env+=("${words[0]}"); words=("${words[@]:1}"); done
    local prog=${words[0]}
    local args=("${words[@]:1}")
    if [ "$bin_dir" = "$work/real/bin" ] && [ ! -x "$bin_dir/$prog" ]; then
      echo "- $prog: not in this hccl_test version, its line is left out"
      continue
    fi
    total=$((total + 1))
    local out=$outs/$total-$prog.txt
    echo "+ ${env[*]:+${env[*]} }$prog ${args[*]}"
    local status=0
    if [ "$launch" = vigil ]; then
      env "${env[@]}" ASCEND_PROCESS_LOG_PATH="$logs" HCCL_IF_BASE_PORT=0 \
        timeout -k 5 "$run_timeout" "$prefix/bin/vigil" run -n "$nranks" --log-dir "$logs/vigil" \
        -- "$bin_dir/$prog" "${args[@]}" >"$out" 2>&1 </dev/null || status=$?
    else
      env "${env[@]}" ASCEND_PROCESS_LOG_PATH="$logs" HCCL_IF_BASE_PORT=0 \
        timeout -k 5 "$run_timeout" mpirun "${mpirun_args[@]}" "$bin_dir/$prog" "${args[@]}" \
        >"$out" 2>&1 </dev/null || status=$?
    fi
    check_output "$out" "$rows" "$status" || failed=$((failed + 1))
    if [ "$launch" = vigil ] && ! grep -q "through mpirun" "$out"; then
      echo "FAILED: vigil run did not say that the ranks start through mpirun"
      failed=$((failed + 1))
    fi
  done 3< <(case_lines "$lines_of")
  [ "$total" -gt 0 ] || { echo "no case lines for $lines_of in $cases"; exit 1; }
  echo "$part: $((total - failed)) of $total runs passed in $((SECONDS - start)) s"
  [ "$failed" -eq 0 ]
}

case "$part" in
  setup) setup ;;
  real | real_*)
    [ -d "$work/real/bin" ] || [ ! -d "$work/standin/bin" ] ||
      skip "no real hccl_test: set VIGIL_HCCL_TEST_SRC to its folder (or install CANN's)"
    lines=${part#real_}
    [ "$part" = real ] && lines=ops
    run_part "$lines" "$work/real/bin" mpirun ;;
  vigil_run)
    "$prefix/bin/vigil" run --help 2>/dev/null | grep -q -- "--mpirun" ||
      skip "vigil run cannot start MPI programs (no --mpirun option)"
    run_part vigil_run "$work/standin/bin" vigil || exit 1
    # The ranks wrote their logs into vigil run's folder, where vigil diagnose finds them all.
    plogs=$(find "$work/logs/vigil_run/vigil/run/plog" -name 'plog-*.log' 2>/dev/null | wc -l)
    if [ "$plogs" -lt "$nranks" ] ||
       ! "$prefix/bin/vigil" diagnose "$work/logs/vigil_run/vigil" | grep -q "$nranks process(es)"
    then
      echo "FAILED: $plogs plog files in vigil run's log folder, or vigil diagnose misses ranks"
      exit 1
    fi
    # mpirun's status comes back: ranks that reject their options fail the run.
    out=$work/out/vigil_run/bad-option.txt
    status=0
    timeout -k 5 "$run_timeout" "$prefix/bin/vigil" run -n "$nranks" --log-dir "$work/logs/bad" \
      -- "$work/standin/bin/all_reduce_test" -d nonsense >"$out" 2>&1 </dev/null || status=$?
    if [ "$status" -eq 0 ] || ! grep -q "Error: \[-d,--datatype\] is invalid" "$out" ||
       ! grep -q "vigil run: mpirun (pid [0-9]*) exited with code [1-9]" "$out"; then
      echo "FAILED: a run whose ranks reject -d did not fail with mpirun's status ($status)"
      cat "$out"
      exit 1
    fi
    echo "vigil_run: a failing run returns mpirun's status ($status)" ;;
  *) run_part "$part" "$work/standin/bin" mpirun ;;
esac
