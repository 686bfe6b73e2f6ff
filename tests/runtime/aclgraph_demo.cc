// The life cycle of HCCL's aclgraph example as a program: every rank captures one AllReduce on
// its stream (aclmdlRICaptureBegin / HcclAllReduce / aclmdlRICaptureEnd), replays the model
// four times, then prints its receive buffer. Rank k contributes k in every element, so every
// element must be 0 + 1 + ... + (n - 1). Ranks are threads (--threads N) or processes under
// `vigil run -n N`; exit code 0 only when every rank printed the right sum.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

constexpr int kReplays = 4;

#define STEP(call)                                                               \
  do {                                                                           \
    const int step_rc_ = static_cast<int>(call);                                 \
    if (step_rc_ != 0) {                                                         \
      std::printf("[rank %u] ERROR %s returned %d\n", rank, #call, step_rc_);   \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int RunRank(uint32_t rank, uint32_t n, const HcclRootInfo& root) {
  STEP(aclrtSetDevice(static_cast<int32_t>(rank)));
  HcclCommConfig config;
  HcclCommConfigInit(&config);
  config.hcclDeterministic = 1;
  HcclComm comm = nullptr;
  STEP(HcclCommInitRootInfoConfig(n, &root, rank, &config, &comm));

  // One float per rank, as the example does; all synchronous work before the capture.
  const uint64_t count = n;
  const size_t bytes = count * sizeof(float);
  void *send = nullptr, *recv = nullptr, *host = nullptr;
  STEP(aclrtMalloc(&send, bytes, ACL_MEM_MALLOC_HUGE_ONLY));
  STEP(aclrtMalloc(&recv, bytes, ACL_MEM_MALLOC_HUGE_ONLY));
  STEP(aclrtMallocHost(&host, bytes));
  for (uint64_t i = 0; i < count; ++i) static_cast<float*>(host)[i] = static_cast<float>(rank);
  STEP(aclrtMemcpy(send, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  aclrtStream stream = nullptr;
  STEP(aclrtCreateStream(&stream));

  aclmdlRI model = nullptr;
  STEP(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
  STEP(HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream));
  STEP(aclmdlRICaptureEnd(stream, &model));

  for (int i = 0; i < kReplays; ++i) {
    STEP(aclmdlRIExecuteAsync(model, stream));
    STEP(aclrtSynchronizeStream(stream));
  }

  std::vector<float> result(count);
  STEP(aclrtMemcpy(result.data(), bytes, recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  const float want = static_cast<float>(n * (n - 1) / 2);
  std::string line;
  bool right = true;
  for (float v : result) {
    line += " " + std::to_string(static_cast<long>(v));
    right = right && v == want;
  }
  std::printf("[rank %u] AllReduce(sum) replayed %d times, recvBuf = [%s ]%s\n", rank, kReplays,
              line.c_str(), right ? "" : " (wrong)");
  std::fflush(stdout);

  // The example's order: the model first, then the stream, the buffers and the communicator.
  STEP(aclmdlRIDestroy(model));
  STEP(aclrtDestroyStream(stream));
  STEP(aclrtFree(send));
  STEP(aclrtFree(recv));
  STEP(aclrtFreeHost(host));
  STEP(HcclCommDestroy(comm));
  return right ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = static_cast<uint32_t>(std::atoi(argv[++i]));
    }
  }
  if (aclInit(nullptr) != ACL_SUCCESS) return 2;
  HcclRootInfo root;
  int rc = 0;
  if (threads > 0) {
    if (HcclGetRootInfo(&root) != HCCL_SUCCESS) return 3;
    std::vector<int> results(threads, 0);
    std::vector<std::thread> ranks;
    for (uint32_t r = 0; r < threads; ++r) {
      ranks.emplace_back([&, r] { results[r] = RunRank(r, threads, root); });
    }
    for (uint32_t r = 0; r < threads; ++r) {
      ranks[r].join();
      if (results[r] != 0) rc = results[r];
    }
  } else {
    uint32_t rank = 0, n = 0;
    if (!VigilLaunchRank(&rank, &n)) {
      std::fprintf(stderr, "aclgraph_demo: run under `vigil run -n N` or pass --threads N\n");
      return 4;
    }
    if (VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 5;
    rc = RunRank(rank, n, root);
  }
  aclFinalize();
  return rc;
}
