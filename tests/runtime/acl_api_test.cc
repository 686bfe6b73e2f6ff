// The acl C API: happy paths and every bad-input path (code + exactly one RUNTIME ERROR line
// naming the argument), devices per thread, init/finalize, default stream, contexts.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"
#include "runtime/stream.h"

namespace vigil::rt {
namespace {

class AclApiTest : public ::testing::Test {
 protected:
  void SetUp() override { log_dir_ = testing::UseTempLogDir(); }
  void TearDown() override {
    unsetenv("VIGIL_DEVICE_COUNT");
    ReloadEnvForTesting();
  }
  std::string log_dir_;
};

// Runs `expr`, expects `code` and exactly one new RUNTIME ERROR line containing `needle`.
#define EXPECT_ONE_ERROR(expr, code, needle)                                           \
  do {                                                                                 \
    const int before_ = testing::CountRuntimeErrors();                                 \
    EXPECT_EQ((expr), (code)) << #expr;                                                \
    EXPECT_EQ(testing::CountRuntimeErrors(), before_ + 1) << #expr;                    \
    std::string line_ = testing::LastRuntimeError();                                   \
    EXPECT_NE(line_.find(needle), std::string::npos) << #expr << " logged: " << line_; \
  } while (0)

// Runs fn on a fresh thread (one with no current device) and returns its result.
template <typename Fn>
aclError OnFreshThread(Fn fn) {
  aclError rc = -1;
  std::thread t([&] { rc = fn(); });
  t.join();
  return rc;
}

TEST_F(AclApiTest, ThreadsDriveDifferentDevices) {
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 8u);
  constexpr int kThreads = 4;
  std::vector<int32_t> seen(kThreads, -1);
  std::vector<int32_t> stream_device(kThreads, -1);
  std::vector<aclError> rcs(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      aclError rc = aclrtSetDevice(t);
      aclrtStream stream = nullptr;
      void* dev = nullptr;
      std::vector<int> in(256, t + 1);
      std::vector<int> out(256, 0);
      if (rc == ACL_SUCCESS) rc = aclrtCreateStream(&stream);
      if (rc == ACL_SUCCESS) rc = aclrtMalloc(&dev, 1024, ACL_MEM_MALLOC_HUGE_FIRST);
      if (rc == ACL_SUCCESS)
        rc = aclrtMemcpyAsync(dev, 1024, in.data(), 1024, ACL_MEMCPY_HOST_TO_DEVICE, stream);
      if (rc == ACL_SUCCESS) rc = aclrtSynchronizeStream(stream);
      if (rc == ACL_SUCCESS) rc = aclrtMemcpy(out.data(), 1024, dev, 1024, ACL_MEMCPY_DEVICE_TO_HOST);
      if (rc == ACL_SUCCESS && out != in) rc = -2;
      aclrtGetDevice(&seen[t]);
      if (rc == ACL_SUCCESS) stream_device[t] = StreamFromHandle(stream)->device();
      if (rc == ACL_SUCCESS) rc = aclrtDestroyStream(stream);
      if (rc == ACL_SUCCESS) rc = aclrtFree(dev);
      if (rc == ACL_SUCCESS) rc = aclrtResetDevice(t);
      rcs[t] = rc;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(rcs[t], ACL_SUCCESS) << "thread " << t;
    EXPECT_EQ(seen[t], t);
    EXPECT_EQ(stream_device[t], t);
  }
}

TEST_F(AclApiTest, DeviceCountComesFromEnv) {
  setenv("VIGIL_DEVICE_COUNT", "2", 1);
  ReloadEnvForTesting();
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtSetDevice(2), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId=2");
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
}

TEST_F(AclApiTest, InitAndFinalize) {
  EXPECT_ONE_ERROR(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE, "configPath");
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "repeated");
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "repeated");

  const std::string good = log_dir_ + "/acl.json";
  std::ofstream(good) << "{\"dump\": {}}";
  EXPECT_EQ(aclInit(good.c_str()), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  const std::string empty = log_dir_ + "/empty.json";
  std::ofstream(empty) << "";
  EXPECT_EQ(aclInit(empty.c_str()), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  const std::string bad = log_dir_ + "/bad.json";
  std::ofstream(bad) << "{not json";
  EXPECT_ONE_ERROR(aclInit(bad.c_str()), ACL_ERROR_PARSE_FILE, "configPath");
}

TEST_F(AclApiTest, SocNameSaturationModeAndMallocRounding) {
  // A CPU device says so; programs then take their generic path (hccl_test compares prefixes).
  ASSERT_NE(aclrtGetSocName(), nullptr);
  EXPECT_STREQ(aclrtGetSocName(), "Vigil-CPU");
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtFloatOverflowMode mode = ACL_RT_OVERFLOW_MODE_UNDEF;
  ASSERT_EQ(aclrtGetDeviceSatMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_RT_OVERFLOW_MODE_INFNAN);
  EXPECT_EQ(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "SATURATION");
  EXPECT_ONE_ERROR(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF), ACL_ERROR_INVALID_PARAM,
                   "mode");

  // 100 bytes: CANN allocates 128 (aligned to 32) + 32 = 160; one byte more faults.
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 100, ACL_MEM_MALLOC_HUGE1G_ONLY), ACL_SUCCESS);
  std::vector<char> host(256, 'r');
  EXPECT_EQ(aclrtMemcpy(dev, 160, host.data(), 160, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE),
            ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 161, host.data(), 161, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_RT_SYS_DMA, "past the end");
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&dev, 64,
                        static_cast<aclrtMemMallocPolicy>(ACL_MEM_MALLOC_HUGE_FIRST |
                                                          ACL_MEM_TYPE_HIGH_BAND_WIDTH)),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtMalloc(&dev, 64, ACL_MEM_ACCESS_USER_SPACE_READONLY),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "READONLY");
  EXPECT_ONE_ERROR(aclrtMalloc(&dev, 64, static_cast<aclrtMemMallocPolicy>(8)),
                   ACL_ERROR_INVALID_PARAM, "policy");
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(AclApiTest, WorksWithoutAclInit) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_NORMAL_ONLY_P2P), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(AclApiTest, MemcpyAndMemsetAreChecked) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<char> host(512, 'h');
  std::vector<char> back(256, 0);
  EXPECT_EQ(aclrtMemcpy(dev, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(back.data(), 256, dev, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, std::vector<char>(256, 'h'));
  EXPECT_EQ(aclrtMemset(dev, 256, 7, 256), ACL_SUCCESS);
  EXPECT_EQ(static_cast<char*>(dev)[255], 7);

  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 128, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_INVALID_PARAM, "destMax");
  EXPECT_ONE_ERROR(aclrtMemcpy(nullptr, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_INVALID_PARAM, "dst");
  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 256, nullptr, 256, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_INVALID_PARAM, "src");
  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 256, host.data(), 256, static_cast<aclrtMemcpyKind>(8)),
                   ACL_ERROR_INVALID_PARAM, "kind");
  // Past the end of the 256-byte allocation: an SDMA-style fault, nothing copied.
  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 512, host.data(), 512, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_RT_SYS_DMA, "past the end");
  EXPECT_ONE_ERROR(aclrtMemset(nullptr, 16, 0, 16), ACL_ERROR_INVALID_PARAM, "devPtr");
  EXPECT_ONE_ERROR(aclrtMemset(dev, 16, 0, 32), ACL_ERROR_INVALID_PARAM, "maxCount");
  EXPECT_ONE_ERROR(aclrtMemset(dev, 512, 0, 512), ACL_ERROR_RT_SYS_DMA, "past the end");
  EXPECT_EQ(static_cast<char*>(dev)[0], 7);

  ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtMemcpy(dev, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_RT_SYS_DMA, "freed");
  EXPECT_ONE_ERROR(aclrtMemcpy(back.data(), 256, dev, 256, ACL_MEMCPY_DEVICE_TO_HOST),
                   ACL_ERROR_RT_SYS_DMA, "freed");
  EXPECT_ONE_ERROR(aclrtMemset(dev, 256, 0, 256), ACL_ERROR_RT_SYS_DMA, "freed");
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(AclApiTest, AsyncCopyIntoFreedMemoryFailsTheStreamOnce) {
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  std::atomic<int> calls{0};
  TaskFailInfo seen;
  int cb = RegisterTaskFailCallback([&](const TaskFailInfo& info) {
    seen = info;
    ++calls;
  });
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);  // "comm destroyed before sync"
  std::vector<char> host(4096, 1);
  const int before = testing::CountRuntimeErrors();
  ASSERT_EQ(aclrtMemcpyAsync(dev, 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 1);
  EXPECT_NE(testing::LastRuntimeError().find("task_type=Memcpy"), std::string::npos);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(seen.device, 1);
  EXPECT_EQ(seen.task_id, 1u);
  EXPECT_EQ(seen.retcode, ACL_ERROR_RT_SYS_DMA);
  EXPECT_NE(seen.detail.find("freed"), std::string::npos);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  UnregisterTaskFailCallback(cb);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
}

TEST_F(AclApiTest, DefaultStreamAndDeviceSynchronize) {
  ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<char> host(64, 5);
  EXPECT_EQ(aclrtMemcpyAsync(dev, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE, nullptr),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(static_cast<char*>(dev)[63], 5);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpyAsync(host.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(2), ACL_SUCCESS);
}

TEST_F(AclApiTest, ResetDeviceIsReferenceCountedAndReleasesStreams) {
  ASSERT_EQ(aclrtSetDevice(6), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(6), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(6), ACL_SUCCESS);
  EXPECT_NE(StreamFromHandle(stream), nullptr);  // one aclrtSetDevice still open
  EXPECT_EQ(aclrtResetDevice(6), ACL_SUCCESS);
  EXPECT_EQ(StreamFromHandle(stream), nullptr);
  EXPECT_ONE_ERROR(aclrtDestroyStream(stream), ACL_ERROR_RT_PARAM_INVALID, "stream");
}

TEST_F(AclApiTest, DestroyStreamDrainsQueuedWork) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    StreamFromHandle(stream)->Enqueue(TaskType::kKernel, [&](std::string*) {
      ++ran;
      return ACL_SUCCESS;
    });
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(AclApiTest, SynchronizeWithTimeout) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  StreamFromHandle(stream)->Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  EXPECT_ONE_ERROR(aclrtSynchronizeStreamWithTimeout(stream, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                   "timeout=20ms");
  release.set_value();
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, -1), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, 1000), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(AclApiTest, ContextsSelectTheDevice) {
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtCreateContext(&ctx, 3), ACL_SUCCESS);
  int32_t dev = -1;
  ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 3);
  aclrtContext current = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(current, ctx);
  int32_t other_dev = -1;
  EXPECT_EQ(OnFreshThread([&] {
              aclError rc = aclrtSetCurrentContext(ctx);
              if (rc == ACL_SUCCESS) rc = aclrtGetDevice(&other_dev);
              return rc;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(other_dev, 3);
  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtSetCurrentContext(ctx), ACL_ERROR_RT_PARAM_INVALID, "context");
  EXPECT_ONE_ERROR(aclrtDestroyContext(ctx), ACL_ERROR_RT_PARAM_INVALID, "context");
  EXPECT_EQ(aclrtResetDevice(3), ACL_SUCCESS);
}

TEST_F(AclApiTest, RecentErrorMessage) {
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("devPtr"), std::string::npos);
}

TEST_F(AclApiTest, EveryBadInputReturnsTheCodeAndLogsOneLine) {
  // Without a current device.
  EXPECT_ONE_ERROR(OnFreshThread([] {
                     aclrtStream s = nullptr;
                     return aclrtCreateStream(&s);
                   }),
                   ACL_ERROR_RT_CONTEXT_NULL, "aclrtCreateStream");
  EXPECT_ONE_ERROR(OnFreshThread([] {
                     int32_t d = 0;
                     return aclrtGetDevice(&d);
                   }),
                   ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice");
  EXPECT_ONE_ERROR(OnFreshThread([] {
                     void* p = nullptr;
                     return aclrtMalloc(&p, 16, ACL_MEM_MALLOC_HUGE_FIRST);
                   }),
                   ACL_ERROR_RT_CONTEXT_NULL, "aclrtMalloc");
  EXPECT_ONE_ERROR(OnFreshThread([] {
                     aclrtEvent e = nullptr;
                     return aclrtCreateEvent(&e);
                   }),
                   ACL_ERROR_RT_CONTEXT_NULL, "aclrtCreateEvent");
  EXPECT_ONE_ERROR(OnFreshThread([] { return aclrtSynchronizeStream(nullptr); }),
                   ACL_ERROR_RT_CONTEXT_NULL, "stream");

  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  // Devices.
  EXPECT_ONE_ERROR(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM, "count");
  EXPECT_ONE_ERROR(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId");
  EXPECT_ONE_ERROR(aclrtSetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId");
  EXPECT_ONE_ERROR(aclrtResetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId");
  EXPECT_ONE_ERROR(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM, "deviceId");
  EXPECT_ONE_ERROR(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM, "runMode");

  // Device memory.
  void* p = nullptr;
  EXPECT_ONE_ERROR(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM,
                   "devPtr");
  EXPECT_ONE_ERROR(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "size");
  EXPECT_ONE_ERROR(aclrtMalloc(&p, 16, static_cast<aclrtMemMallocPolicy>(9)),
                   ACL_ERROR_INVALID_PARAM, "policy");
  EXPECT_ONE_ERROR(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM, "devPtr");
  int local = 0;
  EXPECT_ONE_ERROR(aclrtFree(&local), ACL_ERROR_RT_MEMORY_FREE, "devPtr");
  ASSERT_EQ(aclrtMalloc(&p, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtFree(static_cast<char*>(p) + 4), ACL_ERROR_RT_MEMORY_FREE, "interior");
  ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtFree(p), ACL_ERROR_RT_MEMORY_FREE, "double free");
  EXPECT_ONE_ERROR(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, nullptr), ACL_ERROR_INVALID_PARAM, "free");
  size_t f = 0;
  size_t t = 0;
  EXPECT_ONE_ERROR(aclrtGetMemInfo(static_cast<aclrtMemAttr>(99), &f, &t),
                   ACL_ERROR_RT_INVALID_MEMORY_TYPE, "attr");

  // Host memory.
  void* h = nullptr;
  EXPECT_ONE_ERROR(aclrtMallocHost(nullptr, 16), ACL_ERROR_INVALID_PARAM, "hostPtr");
  EXPECT_ONE_ERROR(aclrtMallocHost(&h, 0), ACL_ERROR_INVALID_PARAM, "size");
  EXPECT_ONE_ERROR(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM, "hostPtr");
  EXPECT_ONE_ERROR(aclrtFreeHost(&local), ACL_ERROR_RT_MEMORY_FREE, "hostPtr");
  ASSERT_EQ(aclrtMallocHost(&h, 16), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtFreeHost(h), ACL_ERROR_RT_MEMORY_FREE, "hostPtr");

  // Streams.
  aclrtStream dead = nullptr;
  ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
  aclrtStream live = nullptr;
  ASSERT_EQ(aclrtCreateStream(&live), ACL_SUCCESS);
  char buf[16] = {};
  EXPECT_ONE_ERROR(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM, "stream");
  EXPECT_ONE_ERROR(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM, "stream");
  EXPECT_ONE_ERROR(aclrtDestroyStream(dead), ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtDestroyStream(&local), ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtSynchronizeStream(dead), ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtSynchronizeStreamWithTimeout(live, 0), ACL_ERROR_INVALID_PARAM, "timeout");
  EXPECT_ONE_ERROR(aclrtSynchronizeStreamWithTimeout(live, -2), ACL_ERROR_INVALID_PARAM, "timeout");
  EXPECT_ONE_ERROR(aclrtMemcpyAsync(buf, 16, buf + 8, 8, ACL_MEMCPY_HOST_TO_HOST, dead),
                   ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtMemcpyAsync(buf, 4, buf + 8, 8, ACL_MEMCPY_HOST_TO_HOST, live),
                   ACL_ERROR_INVALID_PARAM, "destMax");
  EXPECT_ONE_ERROR(aclrtMemcpyAsync(nullptr, 16, buf, 8, ACL_MEMCPY_HOST_TO_HOST, live),
                   ACL_ERROR_INVALID_PARAM, "dst");
  EXPECT_ONE_ERROR(aclrtSynchronizeDeviceWithTimeout(0), ACL_ERROR_INVALID_PARAM, "timeout");

  // Events.
  aclrtEvent dead_event = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&dead_event), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyEvent(dead_event), ACL_SUCCESS);
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtCreateEvent(nullptr), ACL_ERROR_INVALID_PARAM, "event");
  EXPECT_ONE_ERROR(aclrtDestroyEvent(nullptr), ACL_ERROR_INVALID_PARAM, "event");
  EXPECT_ONE_ERROR(aclrtDestroyEvent(dead_event), ACL_ERROR_RT_PARAM_INVALID, "event");
  EXPECT_ONE_ERROR(aclrtRecordEvent(nullptr, live), ACL_ERROR_INVALID_PARAM, "event");
  EXPECT_ONE_ERROR(aclrtRecordEvent(dead_event, live), ACL_ERROR_RT_PARAM_INVALID, "event");
  EXPECT_ONE_ERROR(aclrtRecordEvent(event, dead), ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtStreamWaitEvent(live, dead_event), ACL_ERROR_RT_PARAM_INVALID, "event");
  EXPECT_ONE_ERROR(aclrtStreamWaitEvent(dead, event), ACL_ERROR_RT_PARAM_INVALID, "stream");
  EXPECT_ONE_ERROR(aclrtSynchronizeEvent(nullptr), ACL_ERROR_INVALID_PARAM, "event");
  EXPECT_ONE_ERROR(aclrtSynchronizeEvent(dead_event), ACL_ERROR_RT_PARAM_INVALID, "event");
  EXPECT_ONE_ERROR(aclrtSynchronizeEventWithTimeout(event, 0), ACL_ERROR_INVALID_PARAM, "timeout");

  // Contexts.
  EXPECT_ONE_ERROR(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM, "context");
  aclrtContext ctx = nullptr;
  EXPECT_ONE_ERROR(aclrtCreateContext(&ctx, 77), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId");
  EXPECT_ONE_ERROR(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM, "context");

  // The live handles still work after all that.
  EXPECT_EQ(aclrtRecordEvent(event, live), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(live), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(live), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

}  // namespace
}  // namespace vigil::rt
