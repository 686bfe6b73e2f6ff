#!/usr/bin/env bash
# Installs Vigil into a fresh prefix and builds examples/hccl_sample.cc the way an HCCL program is
# built against CANN (plain g++, exact flags), then runs it on 4 devices and checks its output.
set -euo pipefail
build_dir=$1
src_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
for f in include/hccl/hccl.h include/hccl/hccl_types.h include/acl/acl.h include/acl/acl_prof.h \
         lib64/libhccl.so lib64/libascendcl.so lib64/libacl_rt.so lib64/libmsprofiler.so \
         bin/vigil set_env.sh include/securec.h include/securectype.h lib64/libc_sec.so \
         "$(uname -m)-linux/include/securec.h" "$(uname -m)-linux/lib64/libc_sec.so"; do
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
# HCCL's newer Makefiles link -lacl_rt -lmsprofiler (with --copy-dt-needed-entries) instead of
# -lascendcl: the same program must build and run that way.
cat > prof.cc <<'PROG'
#include <cstdio>
#include <string>
#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "hccl/hccl.h"
int main(int, char** argv) {
  const std::string dir = argv[1];
  if (aclrtSetDevice(0) != ACL_SUCCESS || aclprofInit(dir.c_str(), dir.size()) != ACL_SUCCESS) return 1;
  uint32_t dev = 0;
  aclprofConfig* cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, nullptr, ACL_PROF_TASK_TIME);
  void* va = nullptr;
  if (cfg == nullptr || aclprofStart(cfg) != ACL_SUCCESS ||
      aclrtReserveMemAddress(&va, 1 << 20, 0, nullptr, 0) != ACL_SUCCESS ||
      aclrtReleaseMemAddress(va) != ACL_SUCCESS || aclprofStop(cfg) != ACL_SUCCESS ||
      aclprofDestroyConfig(cfg) != ACL_SUCCESS || aclprofFinalize() != ACL_SUCCESS) return 2;
  std::printf("prof ok on %s\n", aclrtGetSocName());
  return 0;
}
PROG
g++ -std=c++11 -Werror -Wl,--copy-dt-needed-entries prof.cc -I"$ASCEND_HOME_PATH"/include \
  -L"$ASCEND_HOME_PATH"/lib64 -lhccl -lacl_rt -lmsprofiler -o prof
./prof "$work/prof_out" | grep -qx "prof ok on Vigil-CPU" || { echo "the -lacl_rt -lmsprofiler program failed"; exit 1; }
ls "$work"/prof_out/vigil_trace_*.json >/dev/null || { echo "aclprofStop wrote no trace"; exit 1; }
# HCCL's examples build with securec the way their Makefiles say: -I.../<arch>-linux/include,
# -lc_sec.
cat > sec.cc <<'PROG'
#include <cstring>
#include "securec.h"
int main() {
  char b[8];
  if (memset_s(b, sizeof(b), 0, sizeof(b)) != EOK) return 1;
  const int rc = snprintf_s(b, sizeof(b), sizeof(b) - 1, "%s", "rank-12345");
  return rc == -1 && strcmp(b, "rank-12") == 0 ? 0 : 2;
}
PROG
g++ -std=c++14 -Wall -Wextra -Werror sec.cc -I"$ASCEND_HOME_PATH"/include \
  -I"$ASCEND_HOME_PATH/$(uname -m)-linux/include" -L"$ASCEND_HOME_PATH/$(uname -m)-linux/lib64" \
  -lc_sec -o sec
./sec || { echo "the securec program failed"; exit 1; }
# CANN 8.5's programs that only use hccl_comm.h link -lhcomm; CANN's samples source
# bin/setenv.bash, a link to set_env.sh that must still find the prefix.
cat > comm.cc <<'PROG'
#include "hccl/hccl_comm.h"
int main() {
  HcclRootInfo root;
  return HcclGetRootInfo(&root) == HCCL_SUCCESS ? 0 : 1;
}
PROG
g++ -std=c++17 -Werror comm.cc -I"$ASCEND_HOME_PATH"/include -L"$ASCEND_HOME_PATH"/lib64 \
  -lhcomm -lascendcl -o comm
./comm || { echo "the -lhcomm program failed"; exit 1; }
home=$(env -i bash -c "source '$work/prefix/bin/setenv.bash' && echo \$ASCEND_HOME_PATH")
[ "$home" = "$work/prefix" ] || { echo "bin/setenv.bash set ASCEND_HOME_PATH to $home"; exit 1; }
echo "install test passed"
