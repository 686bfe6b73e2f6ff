// An HCCL sample in the style of HCCL's own: one thread per device, HcclGetRootInfo in main,
// HcclCommInitRootInfo in each thread, HcclAllReduce on a stream, aclrtSynchronizeStream.
// Uses only hccl/hccl.h (which brings in acl/acl.h). Build it like any HCCL program:
//   g++ -std=c++17 -Werror hccl_sample.cc -I$ASCEND_HOME_PATH/include \
//       -L$ASCEND_HOME_PATH/lib64 -lhccl -lascendcl -pthread -o hccl_sample
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hccl/hccl.h"

#define CHECK_ACL(x)                                                         \
  do {                                                                       \
    aclError r_ = (x);                                                       \
    if (r_ != ACL_SUCCESS) {                                                 \
      std::printf("%s failed: acl error %d\n", #x, r_);                      \
      return -1;                                                             \
    }                                                                        \
  } while (0)
#define CHECK_HCCL(x)                                                        \
  do {                                                                       \
    HcclResult r_ = (x);                                                     \
    if (r_ != HCCL_SUCCESS) {                                                \
      std::printf("%s failed: %s\n", #x, HcclGetErrorString(r_));            \
      return -1;                                                             \
    }                                                                        \
  } while (0)

struct ThreadContext {
  HcclRootInfo* rootInfo;
  uint32_t devId;
  uint32_t devCount;
  int result;
};

static int Sample(ThreadContext* ctx) {
  CHECK_ACL(aclrtSetDevice(static_cast<int32_t>(ctx->devId)));
  aclrtStream stream;
  CHECK_ACL(aclrtCreateStream(&stream));
  HcclComm comm;
  CHECK_HCCL(HcclCommInitRootInfo(ctx->devCount, ctx->rootInfo, ctx->devId, &comm));

  const uint64_t count = 8;
  const size_t size = count * sizeof(float);
  void *hostBuf = nullptr, *sendBuf = nullptr, *recvBuf = nullptr;
  CHECK_ACL(aclrtMallocHost(&hostBuf, size));
  float* host = static_cast<float*>(hostBuf);
  for (uint64_t i = 0; i < count; ++i) host[i] = static_cast<float>(ctx->devId + i);
  CHECK_ACL(aclrtMalloc(&sendBuf, size, ACL_MEM_MALLOC_HUGE_ONLY));
  CHECK_ACL(aclrtMalloc(&recvBuf, size, ACL_MEM_MALLOC_HUGE_ONLY));
  CHECK_ACL(aclrtMemcpy(sendBuf, size, hostBuf, size, ACL_MEMCPY_HOST_TO_DEVICE));

  CHECK_HCCL(HcclAllReduce(sendBuf, recvBuf, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                           stream));
  CHECK_ACL(aclrtSynchronizeStream(stream));
  CHECK_ACL(aclrtMemcpy(hostBuf, size, recvBuf, size, ACL_MEMCPY_DEVICE_TO_HOST));

  std::string line = "rankId: " + std::to_string(ctx->devId) + ", output: [";
  for (uint64_t i = 0; i < count; ++i) {
    line += " " + std::to_string(static_cast<int>(host[i]));
  }
  line += " ]\n";
  std::fputs(line.c_str(), stdout);

  CHECK_ACL(aclrtFree(sendBuf));
  CHECK_ACL(aclrtFree(recvBuf));
  CHECK_ACL(aclrtFreeHost(hostBuf));
  CHECK_HCCL(HcclCommDestroy(comm));
  CHECK_ACL(aclrtDestroyStream(stream));
  CHECK_ACL(aclrtResetDevice(static_cast<int32_t>(ctx->devId)));
  return 0;
}

int main(int argc, char** argv) {
  CHECK_ACL(aclInit(nullptr));
  uint32_t devCount = 0;
  CHECK_ACL(aclrtGetDeviceCount(&devCount));
  if (argc > 1) devCount = static_cast<uint32_t>(std::atoi(argv[1]));
  if (devCount == 0) return 1;
  CHECK_ACL(aclrtSetDevice(0));
  HcclRootInfo rootInfo;
  CHECK_HCCL(HcclGetRootInfo(&rootInfo));

  std::vector<ThreadContext> ctx(devCount);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < devCount; ++i) {
    ctx[i] = ThreadContext{&rootInfo, i, devCount, 0};
    threads.emplace_back([&ctx, i] { ctx[i].result = Sample(&ctx[i]); });
  }
  int rc = 0;
  for (uint32_t i = 0; i < devCount; ++i) {
    threads[i].join();
    if (ctx[i].result != 0) rc = 1;
  }
  CHECK_ACL(aclFinalize());
  return rc;
}
