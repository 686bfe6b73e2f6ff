// Events with flags (aclrtCreateEventWithFlag / ExWithFlag), resets, queries, timestamps and
// elapsed time, as hccl_test's device-time mode (-t) uses them: a stream waits on an
// ACL_EVENT_SYNC event before anyone records it, another stream records it later, and the
// waiting stream resets it for the next round.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"

namespace vigil::rt {
namespace {

#define EXPECT_ONE_ERROR(expr, code, needle)                                           \
  do {                                                                                 \
    const int before_ = testing::CountRuntimeErrors();                                 \
    EXPECT_EQ((expr), (code)) << #expr;                                                \
    EXPECT_EQ(testing::CountRuntimeErrors(), before_ + 1) << #expr;                    \
    std::string line_ = testing::LastRuntimeError();                                   \
    EXPECT_NE(line_.find(needle), std::string::npos) << #expr << " logged: " << line_; \
  } while (0)

class EventFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&work_), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&sync_), ACL_SUCCESS);
  }
  void TearDown() override {
    aclrtDestroyStream(work_);
    aclrtDestroyStream(sync_);
    aclrtResetDevice(0);
  }
  aclrtEventRecordedStatus Recorded(aclrtEvent e) {
    aclrtEventRecordedStatus s = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    EXPECT_EQ(aclrtQueryEventStatus(e, &s), ACL_SUCCESS);
    return s;
  }
  aclrtEventWaitStatus Waited(aclrtEvent e) {
    aclrtEventWaitStatus s = ACL_EVENT_WAIT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEventWaitStatus(e, &s), ACL_SUCCESS);
    return s;
  }
  aclrtStream work_ = nullptr;
  aclrtStream sync_ = nullptr;
};

TEST_F(EventFlagsTest, AWaitBeforeTheRecordBlocksUntilAnotherStreamRecords) {
  aclrtEvent gate = nullptr;
  aclrtEvent done = nullptr;
  ASSERT_EQ(aclrtCreateEventWithFlag(&gate, ACL_EVENT_SYNC), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&done), ACL_SUCCESS);
  std::vector<int> src(1024, 7);
  std::vector<int> dst(1024, 0);
  // Three rounds, as hccl_test runs one per data size: wait, reset, work, record; the gate
  // opens only when the host records it on the other stream.
  for (int round = 1; round <= 3; ++round) {
    src.assign(src.size(), round);
    ASSERT_EQ(aclrtStreamWaitEvent(work_, gate), ACL_SUCCESS);
    ASSERT_EQ(aclrtResetEvent(gate, work_), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size() * sizeof(int), src.data(),
                               src.size() * sizeof(int), ACL_MEMCPY_HOST_TO_HOST, work_),
              ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(done, work_), ACL_SUCCESS);
    // Nothing has recorded the gate since the last reset: the work stream cannot be past it,
    // whenever we look.
    EXPECT_EQ(Waited(gate), ACL_EVENT_WAIT_STATUS_NOT_READY) << "round " << round;
    EXPECT_EQ(Recorded(done), ACL_EVENT_RECORDED_STATUS_NOT_READY) << "round " << round;
    EXPECT_EQ(dst[0], round - 1) << "round " << round;
    ASSERT_EQ(aclrtRecordEvent(gate, sync_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
    EXPECT_EQ(dst[1023], round);
    EXPECT_EQ(Recorded(done), ACL_EVENT_RECORDED_STATUS_COMPLETE);
    EXPECT_EQ(Waited(gate), ACL_EVENT_WAIT_STATUS_COMPLETE);
    // The work stream reset the gate after passing it.
    EXPECT_EQ(Recorded(gate), ACL_EVENT_RECORDED_STATUS_NOT_READY);
    ASSERT_EQ(aclrtSynchronizeStream(sync_), ACL_SUCCESS);
  }
  // A record that completed before the wait opens it at once.
  ASSERT_EQ(aclrtRecordEvent(gate, sync_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(sync_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(work_, gate), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(gate), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(done), ACL_SUCCESS);
}

TEST_F(EventFlagsTest, ElapsedTimeIsPositiveAndOrdered) {
  aclrtEvent a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventExWithFlag(&c, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE), ACL_SUCCESS);
  std::vector<char> big(size_t{4} << 20, 1);
  std::vector<char> to(big.size());
  ASSERT_EQ(aclrtRecordEvent(a, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(to.data(), to.size(), big.data(), big.size(), ACL_MEMCPY_HOST_TO_HOST,
                             work_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(b, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(big.data(), big.size(), to.data(), to.size(), ACL_MEMCPY_HOST_TO_HOST,
                             work_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(c, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  float ab = 0, ac = 0, bc = 0, ba = 0;
  ASSERT_EQ(aclrtEventElapsedTime(&ab, a, b), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ac, a, c), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&bc, b, c), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ba, b, a), ACL_SUCCESS);
  EXPECT_GT(ab, 0.0f);  // a 4 MiB copy lies between them
  EXPECT_GT(bc, 0.0f);
  EXPECT_GE(ac, ab);
  EXPECT_GE(ac, bc);
  EXPECT_FLOAT_EQ(ba, -ab);
  uint64_t ta = 0, tc = 0;
  ASSERT_EQ(aclrtEventGetTimestamp(a, &ta), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventGetTimestamp(c, &tc), ACL_SUCCESS);
  EXPECT_GT(tc, ta);
  for (aclrtEvent e : {a, b, c}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(EventFlagsTest, ElapsedTimeNeedsRecordedCompleteStampedEvents) {
  aclrtEvent never = nullptr, pending = nullptr, gate = nullptr, unstamped = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&never), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&pending), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventWithFlag(&gate, ACL_EVENT_SYNC), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventWithFlag(&unstamped, ACL_EVENT_SYNC), ACL_SUCCESS);
  float ms = 0;
  // Never recorded: CANN's "event recorder null", an internal error.
  EXPECT_ONE_ERROR(aclrtEventElapsedTime(&ms, never, never), ACL_ERROR_RT_INTERNAL_ERROR,
                   "never recorded");
  // Recorded behind a wait nobody has released yet: not complete, no timestamp.
  ASSERT_EQ(aclrtStreamWaitEvent(work_, gate), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(pending, work_), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtEventElapsedTime(&ms, pending, pending),
                   ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "not complete yet");
  ASSERT_EQ(aclrtRecordEvent(gate, sync_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, pending, pending), ACL_SUCCESS);
  EXPECT_EQ(ms, 0.0f);
  // Reset after its record: no timestamp any more.
  ASSERT_EQ(aclrtResetEvent(pending, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtEventElapsedTime(&ms, pending, pending),
                   ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "reset");
  // Made without ACL_EVENT_TIME_LINE: never has one.
  ASSERT_EQ(aclrtRecordEvent(unstamped, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  uint64_t ts = 0;
  EXPECT_ONE_ERROR(aclrtEventGetTimestamp(unstamped, &ts), ACL_ERROR_RT_PARAM_INVALID,
                   "without ACL_EVENT_TIME_LINE");
  EXPECT_ONE_ERROR(aclrtEventElapsedTime(nullptr, never, never), ACL_ERROR_INVALID_PARAM, "ms");
  ASSERT_EQ(aclrtSynchronizeStream(sync_), ACL_SUCCESS);
  for (aclrtEvent e : {never, pending, gate, unstamped}) {
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  }
}

TEST_F(EventFlagsTest, WhatAnEventMayDoFollowsHowItWasMade) {
  aclrtEvent stamped = nullptr, ex = nullptr, e = nullptr;
  ASSERT_EQ(aclrtCreateEventWithFlag(&stamped, ACL_EVENT_TIME_LINE), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventExWithFlag(&ex, ACL_EVENT_SYNC), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtStreamWaitEvent(work_, stamped), ACL_ERROR_RT_PARAM_INVALID,
                   "without ACL_EVENT_SYNC");
  EXPECT_ONE_ERROR(aclrtResetEvent(stamped, work_), ACL_ERROR_RT_PARAM_INVALID,
                   "without ACL_EVENT_SYNC");
  // Only the reset and the stream wait need ACL_EVENT_SYNC (CANN's event guide): no stream
  // waits on it, so the wait status is complete.
  aclrtEventWaitStatus ws = ACL_EVENT_WAIT_STATUS_RESERVED;
  EXPECT_EQ(aclrtQueryEventWaitStatus(stamped, &ws), ACL_SUCCESS);
  EXPECT_EQ(ws, ACL_EVENT_WAIT_STATUS_COMPLETE);
  EXPECT_ONE_ERROR(aclrtQueryEventWaitStatus(ex, &ws), ACL_ERROR_RT_PARAM_INVALID,
                   "aclrtCreateEventExWithFlag cannot be used here");
  EXPECT_ONE_ERROR(aclrtResetEvent(ex, work_), ACL_ERROR_RT_PARAM_INVALID,
                   "aclrtCreateEventExWithFlag cannot be used here");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
  EXPECT_ONE_ERROR(aclrtQueryEvent(ex, &status), ACL_ERROR_RT_PARAM_INVALID,
                   "aclrtCreateEventExWithFlag cannot be used here");
  EXPECT_EQ(aclrtQueryEvent(stamped, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_NOT_READY);  // never recorded
  ASSERT_EQ(aclrtRecordEvent(stamped, work_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(work_), ACL_SUCCESS);
  EXPECT_EQ(aclrtQueryEvent(stamped, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_COMPLETE);
#pragma GCC diagnostic pop
  EXPECT_ONE_ERROR(aclrtCreateEventWithFlag(&e, ACL_EVENT_CAPTURE_STREAM_PROGRESS),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_EVENT_CAPTURE_STREAM_PROGRESS");
  EXPECT_ONE_ERROR(aclrtCreateEventExWithFlag(&e, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_EVENT_EXTERNAL");
  EXPECT_ONE_ERROR(aclrtCreateEventWithFlag(&e, 0x400), ACL_ERROR_INVALID_PARAM, "unknown bits");
  EXPECT_ONE_ERROR(aclrtCreateEventWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM,
                   "event");
  EXPECT_EQ(aclrtDestroyEvent(stamped), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(ex), ACL_SUCCESS);
}

TEST_F(EventFlagsTest, FailureModeDecidesWhetherTasksAfterAFailureRun) {
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<char> host(4096, 'x');
  std::vector<char> after(16, 0);
  const std::vector<char> ones(16, 1);
  for (uint64_t mode : {ACL_CONTINUE_ON_FAILURE, ACL_STOP_ON_FAILURE}) {
    after.assign(after.size(), 0);
    ASSERT_EQ(aclrtSetStreamFailureMode(work_, mode), ACL_SUCCESS);
    // Past the end of the allocation: the copy fails; then a good copy.
    ASSERT_EQ(aclrtMemcpyAsync(dev, 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE, work_),
              ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(after.data(), 16, ones.data(), 16, ACL_MEMCPY_HOST_TO_HOST, work_),
              ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(work_), ACL_ERROR_RT_SYS_DMA) << "mode " << mode;
    EXPECT_EQ(after[0], mode == ACL_CONTINUE_ON_FAILURE ? 1 : 0) << "mode " << mode;
  }
  EXPECT_ONE_ERROR(aclrtSetStreamFailureMode(work_, 2), ACL_ERROR_INVALID_PARAM, "mode");
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

}  // namespace
}  // namespace vigil::rt
