// Host work in stream order: aclrtStreamQuery, aclrtLaunchHostFunc, and callbacks run by the
// program's own report thread (aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport),
// as FlagCX's CANN adaptor and CANN's asynchronous-inference samples use them.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"

namespace vigil::rt {
namespace {

class HostFuncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
  }
  void TearDown() override {
    aclrtDestroyStream(stream_);
    aclrtResetDevice(0);
  }
  aclrtStream stream_ = nullptr;
};

struct Gate {
  std::atomic<bool> open{false};
  std::atomic<int> ran{0};
};

void WaitForGate(void* arg) {
  auto* g = static_cast<Gate*>(arg);
  while (!g->open.load()) std::this_thread::yield();
  g->ran.fetch_add(1);
}

TEST_F(HostFuncTest, AStreamIsCompleteOnlyWhenItsHostFunctionReturned) {
  Gate gate;
  ASSERT_EQ(aclrtLaunchHostFunc(stream_, WaitForGate, &gate), ACL_SUCCESS);
  aclrtStreamStatus status = ACL_STREAM_STATUS_RESERVED;
  ASSERT_EQ(aclrtStreamQuery(stream_, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_STREAM_STATUS_NOT_READY);
  // A copy queued behind the host function waits for it.
  std::vector<int> src(64, 5), dst(64, 0);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size() * sizeof(int), src.data(),
                             src.size() * sizeof(int), ACL_MEMCPY_HOST_TO_HOST, stream_),
            ACL_SUCCESS);
  gate.open = true;
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(gate.ran.load(), 1);
  EXPECT_EQ(dst, src);
  ASSERT_EQ(aclrtStreamQuery(stream_, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_STREAM_STATUS_COMPLETE);
  EXPECT_EQ(aclrtStreamQuery(stream_, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtLaunchHostFunc(stream_, nullptr, nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(HostFuncTest, APolledStreamRunsItsTasksWithoutASynchronize) {
  std::vector<int> src(64, 9), dst(64, 0);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size() * sizeof(int), src.data(),
                             src.size() * sizeof(int), ACL_MEMCPY_HOST_TO_HOST, stream_),
            ACL_SUCCESS);
  aclrtStreamStatus status = ACL_STREAM_STATUS_NOT_READY;
  for (int i = 0; i < 1000000 && status != ACL_STREAM_STATUS_COMPLETE; ++i) {
    ASSERT_EQ(aclrtStreamQuery(stream_, &status), ACL_SUCCESS);
    if (status != ACL_STREAM_STATUS_COMPLETE) std::this_thread::yield();
  }
  EXPECT_EQ(status, ACL_STREAM_STATUS_COMPLETE);
  EXPECT_EQ(dst, src);
}

struct Seen {
  std::atomic<int> calls{0};
  std::atomic<uint64_t> thread{0};
};

void Record(void* arg) {
  auto* s = static_cast<Seen*>(arg);
  s->thread = static_cast<uint64_t>(pthread_self());
  s->calls.fetch_add(1);
}

TEST_F(HostFuncTest, ACallbackRunsOnItsSubscribedThread) {
  // Not subscribed yet: CANN's "callback not register to stream".
  Seen seen;
  EXPECT_EQ(aclrtLaunchCallback(Record, &seen, ACL_CALLBACK_BLOCK, stream_),
            ACL_ERROR_RT_STREAM_NO_CB_REG);
  // A thread that serves no stream cannot process reports.
  EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_THREAD_SUBSCRIBE);

  std::atomic<bool> stop{false};
  std::atomic<int> timeouts{0};
  std::atomic<uint64_t> reporter_id{0};
  std::thread reporter([&] {
    reporter_id = static_cast<uint64_t>(pthread_self());
    while (!stop.load()) {
      const aclError rc = aclrtProcessReport(10);
      if (rc == ACL_ERROR_RT_REPORT_TIMEOUT) timeouts.fetch_add(1);
      if (rc == ACL_ERROR_RT_THREAD_SUBSCRIBE) std::this_thread::yield();
    }
  });
  while (reporter_id.load() == 0) std::this_thread::yield();
  const uint64_t tid = reporter_id.load();
  ASSERT_EQ(aclrtSubscribeReport(tid, stream_), ACL_SUCCESS);
  // One thread per stream.
  EXPECT_EQ(aclrtSubscribeReport(tid + 1, stream_), ACL_ERROR_RT_STREAM_SUBSCRIBE);

  // A blocking callback holds the stream: the copy behind it runs after it.
  std::vector<int> src(64, 3), dst(64, 0);
  ASSERT_EQ(aclrtLaunchCallback(Record, &seen, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size() * sizeof(int), src.data(),
                             src.size() * sizeof(int), ACL_MEMCPY_HOST_TO_HOST, stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtLaunchCallback(Record, &seen, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(seen.thread.load(), tid);  // the reporter ran them, not a runtime thread
  // The non-blocking one may still be on its way: the reporter takes it within its loop.
  for (int i = 0; i < 100000 && seen.calls.load() < 2; ++i) std::this_thread::yield();
  EXPECT_EQ(seen.calls.load(), 2);

  ASSERT_EQ(aclrtUnSubscribeReport(tid, stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnSubscribeReport(tid, stream_), ACL_ERROR_RT_STREAM_SUBSCRIBE);
  EXPECT_EQ(aclrtLaunchCallback(Record, &seen, ACL_CALLBACK_NO_BLOCK, stream_),
            ACL_ERROR_RT_STREAM_NO_CB_REG);
  stop = true;
  reporter.join();
  EXPECT_GT(timeouts.load() + seen.calls.load(), 0);
}

TEST_F(HostFuncTest, ADestroyedStreamLeavesItsThread) {
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  ASSERT_EQ(aclrtSubscribeReport(me, other), ACL_SUCCESS);
  EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_REPORT_TIMEOUT);
  ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_THREAD_SUBSCRIBE);
}

}  // namespace
}  // namespace vigil::rt
