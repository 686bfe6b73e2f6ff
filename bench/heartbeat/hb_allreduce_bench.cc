// AllReduce bus bandwidth of one message size, one line from rank 0 (run under `vigil run`):
//   hb_allreduce_bench [--bytes B] [--iters N] [--warmup W]
// busbw = bytes / time x 2(n-1)/n, as nccl-tests define it. VIGIL_HEARTBEAT=0 turns the
// heartbeat off, so two runs compare its cost.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"
#include "vigil/launch.h"

// CPU time (ms) used so far by this process's thread named `name`, -1 if none.
double ThreadCpuMs(const char* name) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  double ms = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(base + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c != name) continue;
    // schedstat: nanoseconds on CPU (finer than stat's clock ticks).
    std::ifstream sched(base + "/schedstat");
    unsigned long long ns = 0;
    if (sched >> ns) ms = ns / 1e6;
  }
  closedir(d);
  return ms;
}

int main(int argc, char** argv) {
  uint64_t bytes = 1 << 20;
  int iters = 200, warmup = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--bytes")) bytes = std::strtoull(argv[i + 1], nullptr, 10);
    if (!strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
  }
  uint32_t rank = 0, n = 0;
  HcclRootInfo root;
  if (!VigilLaunchRank(&rank, &n) || VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) {
    std::fprintf(stderr, "hb_allreduce_bench: run under `vigil run -n N`\n");
    return 2;
  }
  aclrtSetDevice(static_cast<int32_t>(rank % 8));
  aclrtStream stream;
  aclrtCreateStream(&stream);
  HcclComm comm;
  if (HcclCommInitRootInfo(n, &root, rank, &comm) != HCCL_SUCCESS) return 3;
  const uint64_t count = bytes / sizeof(float);
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  auto run = [&](int k) {
    for (int i = 0; i < k; ++i) {
      if (HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                        stream) != HCCL_SUCCESS) {
        return false;
      }
    }
    return aclrtSynchronizeStream(stream) == ACL_SUCCESS;
  };
  if (!run(warmup)) return 4;
  const double hb0 = ThreadCpuMs("Hccl_HeartBeat");
  const auto t0 = std::chrono::steady_clock::now();
  if (!run(iters)) return 5;
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      iters;
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double hb_ms = hb0 < 0 ? 0 : ThreadCpuMs("Hccl_HeartBeat") - hb0;
  const double algbw = static_cast<double>(bytes) / us / 1e3;  // GB/s
  const double busbw = algbw * 2.0 * (n - 1) / n;
  if (rank == 0) {
    const char* hb = std::getenv("VIGIL_HEARTBEAT");
    std::printf(
        "allreduce ranks=%u bytes=%llu time_us=%.2f algbw_GBps=%.3f busbw_GBps=%.3f "
        "heartbeat=%s hb_thread_cpu_ms=%.1f wall_ms=%.1f\n",
        n, static_cast<unsigned long long>(bytes), us, algbw, busbw,
        hb != nullptr && std::string(hb) == "0" ? "off" : "on", hb_ms, wall_ms);
  }
  HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  return 0;
}
