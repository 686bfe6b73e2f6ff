// The communicator calls of hccl_comm.h with one rank per process, under `vigil run -n N`:
// a group whose ranks all send before they receive, sub-communicators over subsets, symmetric
// windows (a peer in another process has no pointer here: HCCL_E_NOT_SUPPORT) and suspend /
// resume around collectives. Exits 0 when every check holds, else prints what failed.
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"
#include "hccl/hccl_sym_win.h"
#include "vigil/launch.h"

namespace {

int g_failures = 0;
uint32_t g_rank = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::printf("rank %u: FAILED: %s\n", g_rank, what);
    ++g_failures;
  }
}

// Every rank sends to both ring neighbours first, then receives from both, in one group.
void GroupRing(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n) {
  constexpr uint64_t kCount = 1 << 18;
  const uint32_t next = (rank + 1) % n, prev = (rank + n - 1) % n;
  std::vector<int32_t> to_next(kCount, static_cast<int32_t>(rank * 2)),
      to_prev(kCount, static_cast<int32_t>(rank * 2 + 1));
  std::vector<int32_t> from_prev(kCount, -1), from_next(kCount, -1);
  Check(HcclGroupStart() == HCCL_SUCCESS, "HcclGroupStart");
  Check(HcclSend(to_next.data(), kCount, HCCL_DATA_TYPE_INT32, next, comm, stream) == HCCL_SUCCESS,
        "group send to next");
  if (n > 2) {
    Check(HcclSend(to_prev.data(), kCount, HCCL_DATA_TYPE_INT32, prev, comm, stream) ==
              HCCL_SUCCESS,
          "group send to prev");
  }
  Check(HcclRecv(from_prev.data(), kCount, HCCL_DATA_TYPE_INT32, prev, comm, stream) ==
            HCCL_SUCCESS,
        "group recv from prev");
  if (n > 2) {
    Check(HcclRecv(from_next.data(), kCount, HCCL_DATA_TYPE_INT32, next, comm, stream) ==
              HCCL_SUCCESS,
          "group recv from next");
  }
  Check(HcclGroupEnd() == HCCL_SUCCESS, "HcclGroupEnd");
  Check(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "group synchronize");
  Check(from_prev[kCount - 1] == static_cast<int32_t>(prev * 2), "group data from prev");
  if (n > 2) Check(from_next[0] == static_cast<int32_t>(next * 2 + 1), "group data from next");
}

// Even and odd ranks, each listed highest first, run an AllReduce of their own.
void SubComms(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n) {
  std::vector<uint32_t> ids;
  for (uint32_t r = n; r-- > 0;) {
    if (r % 2 == rank % 2) ids.push_back(r);
  }
  uint32_t sub_rank = 0;
  while (ids[sub_rank] != rank) ++sub_rank;
  HcclCommConfig config;
  HcclCommConfigInit(&config);
  std::snprintf(config.hcclCommName, sizeof(config.hcclCommName), "vigil_sub_%u", rank % 2);
  HcclComm sub = nullptr;
  Check(HcclCreateSubCommConfig(&comm, static_cast<uint32_t>(ids.size()), ids.data(), rank % 2,
                                sub_rank, &config, &sub) == HCCL_SUCCESS,
        "HcclCreateSubCommConfig");
  if (sub == nullptr) return;
  uint32_t got = 99;
  Check(HcclGetRankId(sub, &got) == HCCL_SUCCESS && got == sub_rank, "sub rank id");
  HcclComm by_name = nullptr;
  Check(HcclCommGetHandleWithName(config.hcclCommName, &by_name) == HCCL_SUCCESS && by_name == sub,
        "sub found by name");
  std::vector<int64_t> in(1000, rank), out(1000, -1);
  Check(HcclAllReduce(in.data(), out.data(), 1000, HCCL_DATA_TYPE_INT64, HCCL_REDUCE_SUM, sub,
                      stream) == HCCL_SUCCESS,
        "sub AllReduce");
  Check(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "sub synchronize");
  int64_t want = 0;
  for (uint32_t r : ids) want += r;
  Check(out[999] == want, "sub AllReduce sum");
  Check(HcclCommDestroy(sub) == HCCL_SUCCESS, "sub destroy");
}

// hccl_test's symmetric-memory mode: one window per rank, the op's buffers inside it.
void SymWindows(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n) {
  constexpr size_t kBytes = 1 << 16;
  void* mem = nullptr;
  Check(aclrtMalloc(&mem, kBytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "window malloc");
  HcclCommSymWindow win = nullptr;
  Check(HcclCommSymWinRegister(comm, mem, kBytes, &win, 1) == HCCL_SUCCESS, "window register");
  void* ptr = nullptr;
  Check(HcclSymWinGetPeerPointer(win, 64, rank, &ptr) == HCCL_SUCCESS &&
            ptr == static_cast<char*>(mem) + 64,
        "own window pointer");
  Check(HcclSymWinGetPeerPointer(win, 64, (rank + 1) % n, &ptr) == HCCL_E_NOT_SUPPORT,
        "peer window pointer in another process is NOT_SUPPORT");
  float* send = static_cast<float*>(mem);
  float* recv = send + 1024;
  for (int i = 0; i < 1024; ++i) send[i] = 1.0f;
  Check(HcclAllReduce(send, recv, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream) ==
            HCCL_SUCCESS,
        "window AllReduce");
  Check(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "window synchronize");
  Check(recv[1023] == static_cast<float>(n), "window AllReduce sum");
  Check(HcclCommSymWinDeregister(win) == HCCL_SUCCESS, "window deregister");
  aclrtFree(mem);
}

void SuspendResume(HcclComm comm, aclrtStream stream, uint32_t n) {
  std::vector<float> data(64, 1.0f);
  Check(HcclCommSuspend(comm) == HCCL_SUCCESS, "suspend");
  Check(HcclAllReduce(data.data(), data.data(), 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                      stream) == HCCL_E_SUSPENDING,
        "op on a suspended communicator is HCCL_E_SUSPENDING");
  Check(HcclCommResume(comm) == HCCL_SUCCESS, "resume");
  Check(HcclAllReduce(data.data(), data.data(), 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                      stream) == HCCL_SUCCESS,
        "op after resume");
  Check(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "resume synchronize");
  Check(data[0] == static_cast<float>(n), "op after resume sum");
}

}  // namespace

int main() {
  uint32_t rank = 0, n = 0;
  if (!VigilLaunchRank(&rank, &n)) {
    std::fprintf(stderr, "comm_process_check: run under `vigil run -n N`\n");
    return 2;
  }
  g_rank = rank;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 3;
  if (aclrtSetDevice(static_cast<int32_t>(rank % 8)) != ACL_SUCCESS) return 4;
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 5;
  HcclComm comm = nullptr;
  if (HcclCommInitRootInfo(n, &root, rank, &comm) != HCCL_SUCCESS) return 6;
  GroupRing(comm, stream, rank, n);
  SubComms(comm, stream, rank, n);
  SymWindows(comm, stream, rank, n);
  SuspendResume(comm, stream, n);
  Check(HcclCommDestroy(comm) == HCCL_SUCCESS, "destroy");
  aclrtDestroyStream(stream);
  if (g_failures == 0) std::printf("rank %u: comm_process_check passed\n", rank);
  return g_failures == 0 ? 0 : 1;
}
