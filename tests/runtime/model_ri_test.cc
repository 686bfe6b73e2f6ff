// Graph capture through acl/acl_mdl.h: work enqueued on a capturing stream is recorded, not run;
// every aclmdlRIExecuteAsync replays it in order; CANN's codes for the calls a capture forbids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"
#include "runtime/stream.h"

namespace {

// Every line of the run plog files that contains `needle`.
std::vector<std::string> RunLogLines(const std::string& needle) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  const fs::path dir = fs::path(vigil::log::LogRoot()) / "run" / "plog";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> lines;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(needle) != std::string::npos) lines.push_back(line);
    }
  }
  return lines;
}

class ModelRiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vigil::rt::testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&dev_, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&host_, kBytes), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&out_, kBytes), ACL_SUCCESS);
    std::memset(dev_, 0, kBytes);
    std::memset(out_, 0, kBytes);
  }
  void TearDown() override {
    aclrtFreeHost(out_);
    aclrtFreeHost(host_);
    aclrtFree(dev_);
    aclrtDestroyStream(stream_);
  }
  void SetHost(int value) {
    int* p = static_cast<int*>(host_);
    for (size_t i = 0; i < kInts; ++i) p[i] = value + static_cast<int>(i);
  }
  bool OutIs(int value) const {
    const int* p = static_cast<const int*>(out_);
    for (size_t i = 0; i < kInts; ++i) {
      if (p[i] != value + static_cast<int>(i)) return false;
    }
    return true;
  }
  // Captures host -> device -> out.
  aclmdlRI CaptureCopies() {
    EXPECT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpyAsync(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
              ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_),
              ACL_SUCCESS);
    aclmdlRI model = nullptr;
    EXPECT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
    EXPECT_NE(model, nullptr);
    return model;
  }

  static constexpr size_t kInts = 64;
  static constexpr size_t kBytes = kInts * sizeof(int);
  aclrtStream stream_ = nullptr;
  void* dev_ = nullptr;
  void* host_ = nullptr;
  void* out_ = nullptr;
};

TEST_F(ModelRiTest, CapturedWorkRunsOnlyWhenReplayedAndEveryReplayRunsItAgain) {
  SetHost(100);
  aclmdlRI model = CaptureCopies();
  // Nothing ran at capture: the stream has nothing to do and the output is untouched.
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(static_cast<int*>(dev_)[0], 0);
  EXPECT_EQ(static_cast<int*>(out_)[0], 0);
  for (int round = 0; round < 3; ++round) {
    SetHost(round * 1000);
    ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_TRUE(OutIs(round * 1000)) << "replay " << round;
  }
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ReplaysOnAnotherStreamAndQueuedReplaysRunInOrder) {
  aclmdlRI model = CaptureCopies();
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  SetHost(7);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, other), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(7));
  // Destroying the model leaves a replay already queued intact.
  SetHost(8);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, other), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(8));
  ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
}

TEST_F(ModelRiTest, GetInfoFollowsTheCapture) {
  aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
  aclmdlRI model = reinterpret_cast<aclmdlRI>(0x1);
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, &status, &model), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  EXPECT_EQ(model, nullptr);

  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_RELAXED), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, &status, &model), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(model, nullptr);
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, &status, nullptr), ACL_SUCCESS);  // one out is enough

  aclmdlRI ended = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &ended), ACL_SUCCESS);
  EXPECT_EQ(ended, model);  // the model being recorded is the one returned
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, &status, nullptr), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  EXPECT_EQ(aclmdlRIDestroy(ended), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ACapturingStreamRefusesSynchronizeAndDestroy) {
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  const int before = vigil::rt::testing::CountRuntimeErrors();
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_ERROR_RT_STREAM_CAPTURED);
  EXPECT_NE(vigil::rt::testing::LastRuntimeError().find("is capturing"), std::string::npos);
  EXPECT_EQ(aclrtDestroyStream(stream_), ACL_ERROR_RT_STREAM_CAPTURED);
  EXPECT_EQ(vigil::rt::testing::CountRuntimeErrors(), before + 2);
  EXPECT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
            ACL_ERROR_RT_STREAM_CAPTURED);
  EXPECT_NE(vigil::rt::testing::LastRuntimeError().find("already in capture status"),
            std::string::npos);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);  // usable again once ended
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ErrorsNameTheBadCall) {
  namespace t = vigil::rt::testing;
  aclmdlRI model = nullptr;
  EXPECT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_ERROR_RT_STREAM_NOT_CAPTURED);
  EXPECT_NE(t::LastRuntimeError().find("not in capture status"), std::string::npos);
  EXPECT_EQ(model, nullptr);

  EXPECT_EQ(aclmdlRICaptureBegin(nullptr, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRICaptureBegin(stream_, static_cast<aclmdlRICaptureMode>(7)),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(t::LastRuntimeError().find("mode[7]"), std::string::npos);
  int bogus = 0;
  EXPECT_EQ(aclmdlRICaptureBegin(&bogus, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
            ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclmdlRICaptureGetInfo(stream_, nullptr, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRICaptureEnd(stream_, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRIExecuteAsync(nullptr, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRIExecuteAsync(&bogus, stream_), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(t::LastRuntimeError().find("not a valid model"), std::string::npos);
  EXPECT_EQ(aclmdlRIDestroy(&bogus), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclmdlRIDebugPrint(&bogus), ACL_ERROR_RT_PARAM_INVALID);
  aclmdlRICaptureMode bad = static_cast<aclmdlRICaptureMode>(-1);
  EXPECT_EQ(aclmdlRICaptureThreadExchangeMode(&bad), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRICaptureThreadExchangeMode(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(ModelRiTest, ADestroyedModelCannotBeExecutedOrDestroyedAgain) {
  aclmdlRI model = CaptureCopies();
  ASSERT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(vigil::rt::testing::LastRuntimeError().find("unknown or destroyed"),
            std::string::npos);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_ERROR_RT_PARAM_INVALID);
}

TEST_F(ModelRiTest, AModelStillCapturedCannotBeExecutedOrDestroyed) {
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, nullptr, &model), ACL_SUCCESS);
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIExecuteAsync(model, other), ACL_ERROR_RT_MODEL_EXECUTE);
  EXPECT_NE(vigil::rt::testing::LastRuntimeError().find("still being captured"),
            std::string::npos);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_ERROR_RT_MODEL_CAPTURED);
  aclmdlRI ended = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &ended), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIExecuteAsync(ended, other), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(ended), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
}

TEST_F(ModelRiTest, GlobalCaptureForbidsSynchronousCopiesUnlessTheThreadRelaxes) {
  SetHost(5);
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
  EXPECT_NE(vigil::rt::testing::LastRuntimeError().find("aclrtMemcpy failed"), std::string::npos);
  EXPECT_EQ(aclrtMemset(dev_, kBytes, 0, kBytes), ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
  EXPECT_EQ(static_cast<int*>(dev_)[0], 0);  // refused, not done

  // Another thread on the same device is bound by a GLOBAL capture too; one on another device
  // is not.
  aclError same_device = ACL_SUCCESS, other_device = ACL_ERROR_INTERNAL_ERROR;
  std::thread([&] {
    aclrtSetDevice(0);
    same_device = aclrtMemset(dev_, kBytes, 0, kBytes);
    aclrtSetDevice(1);
    other_device = aclrtMemset(dev_, kBytes, 0, kBytes);
  }).join();
  EXPECT_EQ(same_device, ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
  EXPECT_EQ(other_device, ACL_SUCCESS);

  aclmdlRICaptureMode mode = ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(aclmdlRICaptureThreadExchangeMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);  // the default, returned
  EXPECT_EQ(aclrtMemcpy(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(static_cast<int*>(dev_)[0], 5);  // done at once, not captured
  ASSERT_EQ(aclmdlRICaptureThreadExchangeMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_MODEL_RI_CAPTURE_MODE_RELAXED);

  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);  // the refusals spoil nothing
  EXPECT_EQ(aclrtMemcpy(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ThreadLocalCaptureBindsOnlyItsThreadAndRelaxedNobody) {
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(dev_, kBytes, 0, kBytes), ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
  aclError other = ACL_ERROR_INTERNAL_ERROR;
  std::thread([&] {
    aclrtSetDevice(0);
    other = aclrtMemset(dev_, kBytes, 0, kBytes);
  }).join();
  EXPECT_EQ(other, ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);

  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_RELAXED), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(dev_, kBytes, 0, kBytes), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ANonRelaxedCaptureMustEndOnItsThread) {
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  aclError rc = ACL_SUCCESS;
  aclmdlRI model = nullptr;
  std::thread([&] {
    aclrtSetDevice(0);
    rc = aclmdlRICaptureEnd(stream_, &model);
  }).join();
  EXPECT_EQ(rc, ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD);
  EXPECT_EQ(model, nullptr);
  aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, &status, nullptr), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_NONE);  // the capture was dropped
  EXPECT_EQ(aclrtMemset(dev_, kBytes, 0, kBytes), ACL_SUCCESS);  // and its mode with it

  // A RELAXED capture may end anywhere.
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_RELAXED), ACL_SUCCESS);
  std::thread([&] {
    aclrtSetDevice(0);
    rc = aclmdlRICaptureEnd(stream_, &model);
  }).join();
  EXPECT_EQ(rc, ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, EventsRecordedAndWaitedInsideTheModelReplay) {
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  SetHost(11);
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(stream_, event), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_),
            ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  for (int round = 0; round < 3; ++round) {
    SetHost(round);
    ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_TRUE(OutIs(round));
  }
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
}

// A replayed record is a new record of the event: a wait queued after a replay (here on a
// stream that does not capture) waits for that replay's record, not an earlier one.
TEST_F(ModelRiTest, AWaitAfterAReplayWaitsForThatReplaysRecord) {
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event, stream_), ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEvent(event), ACL_SUCCESS);  // capturing recorded nothing yet

  SetHost(1);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  // The second replay is held behind a task until the other stream's work is queued.
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  static_cast<vigil::rt::Stream*>(stream_)->Enqueue(
      vigil::rt::TaskType::kKernel, [opened](std::string*) {
        opened.wait();
        return ACL_SUCCESS;
      });
  SetHost(2);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(other, event), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, other),
            ACL_SUCCESS);
  gate.set_value();
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(2));  // copied after the second replay's copy, not the first's
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
}

TEST_F(ModelRiTest, EventsAcrossTheCaptureBoundaryGetCannsCodes) {
  namespace t = vigil::rt::testing;
  aclrtEvent outside = nullptr, inside = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&outside), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&inside), ACL_SUCCESS);
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(outside, other), ACL_SUCCESS);

  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  // A captured wait on a record outside the model.
  EXPECT_EQ(aclrtStreamWaitEvent(stream_, outside), ACL_ERROR_RT_CAPTURE_DEPENDENCY);
  EXPECT_NE(t::LastRuntimeError().find("recorded outside the capture"), std::string::npos);
  EXPECT_EQ(aclrtRecordEvent(inside, stream_), ACL_SUCCESS);
  // Its record runs only when replayed.
  EXPECT_EQ(aclrtSynchronizeEvent(inside), ACL_ERROR_RT_EVENT_CAPTURED);
  EXPECT_NE(t::LastRuntimeError().find("recorded by a running capture"), std::string::npos);
  // The default stream cannot join the capture; another capture cannot merge into it.
  EXPECT_EQ(aclrtStreamWaitEvent(nullptr, inside), ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT);
  ASSERT_EQ(aclmdlRICaptureBegin(other, ACL_MODEL_RI_CAPTURE_MODE_RELAXED), ACL_SUCCESS);
  EXPECT_EQ(aclrtStreamWaitEvent(other, inside), ACL_ERROR_FEATURE_UNSUPPORTED);
  EXPECT_NE(t::LastRuntimeError().find("merging two captures"), std::string::npos);
  aclmdlRI other_model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(other, &other_model), ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);

  EXPECT_EQ(aclrtSynchronizeEvent(inside), ACL_SUCCESS);  // the capture has ended
  EXPECT_EQ(aclrtStreamWaitEvent(other, inside), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(other_model), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(inside), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(outside), ACL_SUCCESS);
}

// Cross-stream capture: a stream that waits on a record of the capture joins it; its work
// replays on a stream of the model's own, ordered by the same events.
TEST_F(ModelRiTest, AStreamJoinsTheCaptureByAnEventAndReplaysInStep) {
  namespace t = vigil::rt::testing;
  aclrtEvent fork = nullptr, join = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&fork), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&join), ACL_SUCCESS);
  aclrtStream side = nullptr;
  ASSERT_EQ(aclrtCreateStream(&side), ACL_SUCCESS);
  std::vector<int> twice(kInts, 0);

  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(fork, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(side, fork), ACL_SUCCESS);  // joins
  aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
  aclmdlRI main_model = nullptr, side_model = nullptr;
  ASSERT_EQ(aclmdlRICaptureGetInfo(stream_, nullptr, &main_model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureGetInfo(side, &status, &side_model), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(side_model, main_model);
  EXPECT_EQ(aclrtSynchronizeStream(side), ACL_ERROR_RT_STREAM_CAPTURED);
  aclmdlRI model = nullptr;
  EXPECT_EQ(aclmdlRICaptureEnd(side, &model), ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, side),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(join, side), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(stream_, join), ACL_SUCCESS);  // joins back
  ASSERT_EQ(aclrtMemcpyAsync(twice.data(), kBytes, out_, kBytes, ACL_MEMCPY_HOST_TO_HOST,
                             stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureGetInfo(side, &status, nullptr), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_NONE);  // it left with the capture
  EXPECT_EQ(aclrtSynchronizeStream(side), ACL_SUCCESS);
  EXPECT_EQ(static_cast<int*>(out_)[0], 0);  // nothing ran at capture

  for (int round = 1; round <= 3; ++round) {
    SetHost(round * 10);
    ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_TRUE(OutIs(round * 10)) << "round " << round;  // the side lane ran in between
    EXPECT_EQ(twice[0], round * 10);
  }
  const size_t before = RunLogLines("[ModelRI]").size();
  ASSERT_EQ(aclmdlRIDebugPrint(model), ACL_SUCCESS);
  std::vector<std::string> lines = RunLogLines("[ModelRI]");
  ASSERT_GT(lines.size(), before);
  EXPECT_NE(lines[before].find("streams=2"), std::string::npos) << lines[before];
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);

  // A joined stream that does not join back spoils the capture.
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(fork, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(side, fork), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, side),
            ACL_SUCCESS);
  EXPECT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_ERROR_RT_STREAM_UNJOINED);
  EXPECT_NE(t::LastRuntimeError().find("not an event record"), std::string::npos);
  ASSERT_EQ(aclmdlRICaptureGetInfo(side, &status, nullptr), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  EXPECT_EQ(aclrtSynchronizeStream(side), ACL_SUCCESS);

  EXPECT_EQ(aclrtDestroyStream(side), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(fork), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(join), ACL_SUCCESS);
}

TEST_F(ModelRiTest, AModelExecutedWhileCapturingBecomesPartOfTheOuterModel) {
  aclmdlRI inner = CaptureCopies();
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(inner, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(inner, stream_), ACL_SUCCESS);
  aclmdlRI outer = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &outer), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIDestroy(inner), ACL_SUCCESS);  // the outer model holds the tasks itself
  SetHost(42);
  ASSERT_EQ(aclmdlRIExecuteAsync(outer, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(42));
  const size_t before = RunLogLines("[ModelRI]").size();
  ASSERT_EQ(aclmdlRIDebugPrint(outer), ACL_SUCCESS);
  std::vector<std::string> lines = RunLogLines("[ModelRI]");
  ASSERT_EQ(lines.size(), before + 5);  // the header and four copies
  EXPECT_NE(lines[before].find("task count=4"), std::string::npos) << lines[before];
  EXPECT_EQ(aclmdlRIDestroy(outer), ACL_SUCCESS);
}

TEST_F(ModelRiTest, DebugPrintListsTheTasks) {
  aclmdlRI model = CaptureCopies();
  const size_t before = RunLogLines("[ModelRI]").size();  // earlier tests of this process
  ASSERT_EQ(aclmdlRIDebugPrint(model), ACL_SUCCESS);
  std::vector<std::string> lines = RunLogLines("[ModelRI]");
  ASSERT_EQ(lines.size(), before + 3);
  EXPECT_NE(lines[before].find("task count=2"), std::string::npos) << lines[before];
  EXPECT_NE(lines[before + 1].find("task[0]: type=Memcpy"), std::string::npos);
  EXPECT_NE(lines[before + 2].find("task[1]: type=Memcpy"), std::string::npos);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
}

TEST_F(ModelRiTest, ATaskUpdateReplacesTheGroupsTasksForLaterReplays) {
  std::vector<int> elsewhere(kInts, 0);
  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
            ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskGrpBegin(stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_),
            ACL_SUCCESS);
  aclrtTaskGrp group = nullptr;
  ASSERT_EQ(aclmdlRICaptureTaskGrpEnd(stream_, &group), ACL_SUCCESS);
  ASSERT_NE(group, nullptr);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);
  SetHost(1);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(1));

  // The update's copy goes elsewhere; it is collected, not run.
  aclrtStream updater = nullptr;
  ASSERT_EQ(aclrtCreateStream(&updater), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskUpdateBegin(updater, group), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(elsewhere.data(), kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST,
                             updater),
            ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskUpdateEnd(updater), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(updater), ACL_SUCCESS);
  EXPECT_EQ(elsewhere[0], 0);

  SetHost(2);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(1));  // no longer written
  EXPECT_EQ(elsewhere[0], 2);
  EXPECT_EQ(elsewhere[kInts - 1], 2 + static_cast<int>(kInts) - 1);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  // The group went with its model.
  EXPECT_EQ(aclmdlRICaptureTaskUpdateBegin(updater, group), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtDestroyStream(updater), ACL_SUCCESS);
}

TEST_F(ModelRiTest, TaskGroupMisuseGetsCannsCodes) {
  namespace t = vigil::rt::testing;
  aclrtTaskGrp group = nullptr;
  EXPECT_EQ(aclmdlRICaptureTaskGrpBegin(stream_), ACL_ERROR_RT_STREAM_NOT_CAPTURED);
  EXPECT_EQ(aclmdlRICaptureTaskGrpEnd(stream_, &group), ACL_ERROR_RT_STREAM_NOT_CAPTURED);
  EXPECT_EQ(aclmdlRICaptureTaskGrpEnd(stream_, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRICaptureTaskUpdateBegin(stream_, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclmdlRICaptureTaskUpdateEnd(stream_), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  EXPECT_NE(t::LastRuntimeError().find("not updating a task group"), std::string::npos);

  ASSERT_EQ(aclmdlRICaptureBegin(stream_, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRICaptureTaskGrpEnd(stream_, &group), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  ASSERT_EQ(aclmdlRICaptureTaskGrpBegin(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRICaptureTaskGrpBegin(stream_), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  ASSERT_EQ(aclrtMemcpyAsync(out_, kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_),
            ACL_SUCCESS);
  aclmdlRI model = nullptr;
  EXPECT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  EXPECT_NE(t::LastRuntimeError().find("task group is still open"), std::string::npos);
  ASSERT_EQ(aclmdlRICaptureTaskGrpEnd(stream_, &group), ACL_SUCCESS);
  // A capturing stream cannot update.
  EXPECT_EQ(aclmdlRICaptureTaskUpdateBegin(stream_, group), ACL_ERROR_RT_STREAM_CAPTURED);
  ASSERT_EQ(aclmdlRICaptureEnd(stream_, &model), ACL_SUCCESS);  // still capturing until now

  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskUpdateBegin(a, group), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRICaptureTaskUpdateBegin(b, group), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  EXPECT_EQ(aclmdlRICaptureTaskUpdateBegin(a, group), ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  // Two tasks for a group of one: refused, the model unchanged.
  std::vector<int> elsewhere(kInts, 0);
  ASSERT_EQ(aclrtMemcpyAsync(elsewhere.data(), kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, a),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(elsewhere.data(), kBytes, dev_, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, a),
            ACL_SUCCESS);
  EXPECT_EQ(aclmdlRICaptureTaskUpdateEnd(a), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_NE(t::LastRuntimeError().find("must match in number and type"), std::string::npos);
  SetHost(3);
  ASSERT_EQ(aclrtMemcpy(dev_, kBytes, host_, kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, a), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
  EXPECT_TRUE(OutIs(3));
  EXPECT_EQ(elsewhere[0], 0);
  // The refused update let go of the group: another stream may update it now.
  ASSERT_EQ(aclmdlRICaptureTaskUpdateBegin(b, group), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskUpdateEnd(b), ACL_ERROR_RT_INTERNAL_ERROR);  // none for one
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

}  // namespace
