#!/usr/bin/env bash
# Installs Vigil into a fresh prefix and builds examples/hccl_sample.cc the way an HCCL program is
# built against CANN (plain g++, exact flags), then runs it on 4 devices and checks its output.
set -euo pipefail
build_dir=$1
src_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
for f in include/hccl/hccl.h include/hccl/hccl_types.h include/acl/acl.h lib64/libhccl.so \
         lib64/libascendcl.so bin/vigil set_env.sh; do
  [ -e "$work/prefix/$f" ] || { echo "missing $f in the install prefix"; exit 1; }
done
# shellcheck disable=SC1091
source "$work/prefix/set_env.sh"
[ "$ASCEND_HOME_PATH" = "$work/prefix" ] || { echo "set_env.sh did not set ASCEND_HOME_PATH"; exit 1; }
cp "$src_dir/examples/hccl_sample.cc" "$work/main.cc"
cd "$work"
g++ -std=c++17 -Werror main.cc -I"$ASCEND_HOME_PATH"/include -L"$ASCEND_HOME_PATH"/lib64 -lhccl -lascendcl -o sample
export ASCEND_PROCESS_LOG_PATH="$work/logs" HCCL_IF_BASE_PORT=0 HCCL_BUFFSIZE=1
./sample 4 > out.txt
cat out.txt
for r in 0 1 2 3; do
  grep -qx "rankId: $r, output: \[ 6 10 14 18 22 26 30 34 \]" out.txt || { echo "rank $r output wrong"; exit 1; }
done
grep -rq "Entry-HcclCommInitRootInfoInner:ranks\[4\]" "$work/logs/run/plog" || { echo "no init Entry line in run/plog"; exit 1; }
echo "install test passed"
