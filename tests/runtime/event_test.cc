// Events and notifies, directly and through the acl API across streams.
#include "runtime/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "acl/acl.h"
#include "rt_test_util.h"
#include "runtime/stream.h"

namespace vigil::rt {
namespace {

class EventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override { aclrtResetDevice(0); }
};

TEST_F(EventTest, RecordNumbersAndWait) {
  Event event;
  EXPECT_EQ(event.LastRecordSeq(), 0u);
  EXPECT_TRUE(event.WaitFor(0, 0));  // never recorded: nothing to wait for
  uint64_t seq = event.NextRecordSeq();
  EXPECT_EQ(seq, 1u);
  EXPECT_FALSE(event.WaitFor(seq, 10));
  event.Complete(seq);
  EXPECT_TRUE(event.WaitFor(seq, 10));
}

TEST_F(EventTest, NotifyCountsRecordsAndTimesOut) {
  Notify notify;
  EXPECT_FALSE(notify.Wait(10));
  notify.Record();
  notify.Record();
  EXPECT_TRUE(notify.Wait(0));
  EXPECT_TRUE(notify.Wait(0));
  EXPECT_FALSE(notify.Wait(10));
}

TEST_F(EventTest, StreamWaitsForEventRecordedOnAnotherStream) {
  aclrtStream producer = nullptr;
  aclrtStream consumer = nullptr;
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateStream(&producer), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&consumer), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);

  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<char> src(4096, 'a');
  std::vector<char> dst(4096, 0);
  // Hold the producer with a blocking task so the consumer must really wait on the event.
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  StreamFromHandle(producer)->Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(aclrtMemcpyAsync(dev, 4096, src.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE, producer),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event, producer), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(consumer, event), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST, consumer),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(consumer, 30), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  release.set_value();
  EXPECT_EQ(aclrtSynchronizeStream(consumer), ACL_SUCCESS);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);

  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(producer), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(consumer), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST_F(EventTest, WaitOnNeverRecordedEventDoesNotBlock) {
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(stream, event), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(EventTest, SynchronizeEventBlocksHostUntilRecorded) {
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  StreamFromHandle(stream)->Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(aclrtRecordEvent(event, stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEventWithTimeout(event, 20), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
  release.set_value();
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
}

TEST_F(EventTest, WaitCapturesTheRecordAtEnqueueTime) {
  aclrtStream a = nullptr;
  aclrtStream b = nullptr;
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event, a), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
  // b waits for record 1 (already complete); a later record that never completes in time
  // must not hold b back.
  ASSERT_EQ(aclrtStreamWaitEvent(b, event), ACL_SUCCESS);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  StreamFromHandle(a)->Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(aclrtRecordEvent(event, a), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
  release.set_value();
  EXPECT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

TEST_F(EventTest, DestroyedEventStaysValidForQueuedTasks) {
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  StreamFromHandle(stream)->Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(aclrtRecordEvent(event, stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  release.set_value();
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

}  // namespace
}  // namespace vigil::rt
