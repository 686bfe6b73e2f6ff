// The main demo: one rank per process, started by `vigil run -n 4 -- allreduce_demo`.
// Each rank contributes (rank + 1) * i for i in [0, 8); every rank prints the sum it got and
// checks it, then times a 16 MiB AllReduce.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hccl/hccl.h"
#include "vigil/launch.h"

static int Fail(const char* what, int code) {
  std::fprintf(stderr, "allreduce_demo: %s failed (%d)\n", what, code);
  return 1;
}

int main() {
  uint32_t rank = 0, nranks = 1;
  if (!VigilLaunchRank(&rank, &nranks)) {
    std::fprintf(stderr, "allreduce_demo: start me with `vigil run -n N -- allreduce_demo`\n");
    return 2;
  }
  if (aclError e = aclrtSetDevice(static_cast<int32_t>(rank % 8)); e != ACL_SUCCESS) return Fail("aclrtSetDevice", e);
  HcclRootInfo root;
  if (HcclResult r = VigilLaunchRootInfo(rank, &root); r != HCCL_SUCCESS) return Fail("root info", r);
  HcclComm comm;
  if (HcclResult r = HcclCommInitRootInfo(nranks, &root, rank, &comm); r != HCCL_SUCCESS) {
    return Fail("HcclCommInitRootInfo", r);
  }
  aclrtStream stream;
  aclrtCreateStream(&stream);

  const uint64_t count = 8;
  std::vector<float> in(count), out(count);
  for (uint64_t i = 0; i < count; ++i) in[i] = static_cast<float>((rank + 1) * i);
  if (HcclResult r = HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32,
                                   HCCL_REDUCE_SUM, comm, stream);
      r != HCCL_SUCCESS) {
    return Fail("HcclAllReduce", r);
  }
  if (aclError e = aclrtSynchronizeStream(stream); e != ACL_SUCCESS) return Fail("sync", e);
  std::string line = "rankId: " + std::to_string(rank) + ", output: [";
  bool ok = true;
  const float ranks_sum = static_cast<float>(nranks * (nranks + 1) / 2);
  for (uint64_t i = 0; i < count; ++i) {
    line += " " + std::to_string(static_cast<int>(out[i]));
    ok = ok && out[i] == ranks_sum * static_cast<float>(i);
  }
  line += ok ? " ] ok\n" : " ] WRONG\n";
  std::fputs(line.c_str(), stdout);

  // A bigger one, timed.
  const uint64_t big = 4u << 20;  // 4 Mi floats = 16 MiB
  std::vector<float> a(big, 1.0f), b(big);
  const int iters = 5;
  HcclAllReduce(a.data(), b.data(), big, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream);
  aclrtSynchronizeStream(stream);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    HcclAllReduce(a.data(), b.data(), big, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream);
  }
  aclError sync = aclrtSynchronizeStream(stream);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  ok = ok && sync == ACL_SUCCESS && b[0] == static_cast<float>(nranks) && b[big - 1] == static_cast<float>(nranks);
  if (rank == 0) {
    const double bytes = static_cast<double>(big * sizeof(float));
    std::printf("AllReduce 16 MiB fp32 sum on %u ranks: %.0f us, algbw %.2f GB/s, busbw %.2f GB/s\n",
                nranks, us, bytes / us / 1e3, bytes / us / 1e3 * 2.0 * (nranks - 1) / nranks);
  }
  HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  return ok ? 0 : 1;
}
