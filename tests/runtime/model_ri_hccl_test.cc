// HCCL collectives in a captured model: ranks as threads (one device each) capture a copy and an
// AllReduce once, then every replay is a fresh, correct execution of the collective on every
// rank, with the inputs the buffers hold at that replay.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "dfx/flight_recorder.h"
#include "hccl/hccl.h"

namespace {

class ModelRiHcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(mkdtemp(dir_), nullptr);
    setenv("ASCEND_PROCESS_LOG_PATH", dir_, 1);  // before the first log line of this process
    setenv("HCCL_BUFFSIZE", "1", 1);
    setenv("HCCL_IF_BASE_PORT", "0", 1);
    ASSERT_EQ(HcclGetRootInfo(&root_), HCCL_SUCCESS);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  char dir_[64] = "/tmp/vigil-model-ri-test.XXXXXX";
  HcclRootInfo root_;
};

constexpr uint32_t kRanks = 3;
constexpr uint64_t kCount = 1000;
constexpr int kReplays = 3;

// Rank r's input at replay k, element i.
float Input(uint32_t r, int k, uint64_t i) {
  return static_cast<float>((r + 1) * 10 + k * 100 + static_cast<int>(i % 7));
}

// One rank: captures host input -> device send (a copy), AllReduce(send -> recv) and recv ->
// host output, then replays it kReplays times with new input each time. The number of
// replays whose output was right, or a negative step number that failed.
int RunRank(uint32_t rank, const HcclRootInfo& root) {
  if (aclrtSetDevice(static_cast<int32_t>(rank)) != ACL_SUCCESS) return -1;
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return -2;
  HcclComm comm = nullptr;
  if (HcclCommInitRootInfo(kRanks, &root, rank, &comm) != HCCL_SUCCESS) return -3;
  const size_t bytes = kCount * sizeof(float);
  void *send = nullptr, *recv = nullptr, *host_in = nullptr, *host_out = nullptr;
  if (aclrtMalloc(&send, bytes, ACL_MEM_MALLOC_HUGE_ONLY) != ACL_SUCCESS ||
      aclrtMalloc(&recv, bytes, ACL_MEM_MALLOC_HUGE_ONLY) != ACL_SUCCESS ||
      aclrtMallocHost(&host_in, bytes) != ACL_SUCCESS ||
      aclrtMallocHost(&host_out, bytes) != ACL_SUCCESS) {
    return -4;
  }
  std::memset(host_out, 0, bytes);

  if (aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) != ACL_SUCCESS) return -5;
  if (aclrtMemcpyAsync(send, bytes, host_in, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream) !=
      ACL_SUCCESS) {
    return -6;
  }
  if (HcclAllReduce(send, recv, kCount, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream) !=
      HCCL_SUCCESS) {
    return -7;
  }
  if (aclrtMemcpyAsync(host_out, bytes, recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream) !=
      ACL_SUCCESS) {
    return -8;
  }
  aclmdlRI model = nullptr;
  if (aclmdlRICaptureEnd(stream, &model) != ACL_SUCCESS) return -9;
  // Capturing ran nothing: the output is still zero.
  if (static_cast<float*>(host_out)[0] != 0.0f) return -10;

  int right = 0;
  for (int k = 0; k < kReplays; ++k) {
    float* in = static_cast<float*>(host_in);
    for (uint64_t i = 0; i < kCount; ++i) in[i] = Input(rank, k, i);
    if (aclmdlRIExecuteAsync(model, stream) != ACL_SUCCESS) return -11;
    if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return -12;
    const float* out = static_cast<const float*>(host_out);
    bool ok = true;
    for (uint64_t i = 0; i < kCount; ++i) {
      float want = 0;
      for (uint32_t r = 0; r < kRanks; ++r) want += Input(r, k, i);
      ok = ok && out[i] == want;
    }
    if (ok) ++right;
  }
  HcclResult async = HCCL_E_INTERNAL;
  if (HcclGetCommAsyncError(comm, &async) != HCCL_SUCCESS || async != HCCL_SUCCESS) return -13;
  if (aclmdlRIDestroy(model) != ACL_SUCCESS) return -14;
  if (aclmdlRIExecuteAsync(model, stream) != ACL_ERROR_RT_PARAM_INVALID) return -15;
  if (HcclCommDestroy(comm) != HCCL_SUCCESS) return -16;
  aclrtFree(send);
  aclrtFree(recv);
  aclrtFreeHost(host_in);
  aclrtFreeHost(host_out);
  aclrtDestroyStream(stream);
  return right;
}

TEST_F(ModelRiHcclTest, CapturedAllReduceIsRightOnEveryReplayOfEveryRank) {
  std::vector<int> results(kRanks, -100);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] { results[r] = RunRank(r, root_); });
  }
  for (auto& t : ranks) t.join();
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(results[r], kReplays) << "rank " << r;
}

// One rank: the model keeps a captured collective's communicator, but replaying it after
// HcclCommDestroy is refused up front (nothing queued) and says why.
TEST_F(ModelRiHcclTest, ReplayAfterTheCommunicatorIsDestroyedIsRefused) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root_, 0, &comm), HCCL_SUCCESS);
  float data[4] = {1, 2, 3, 4};
  ASSERT_EQ(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream, &model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(data[3], 4.0f);  // one rank: the sum is the input
  ASSERT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclmdlRIExecuteAsync(model, stream), ACL_ERROR_RT_MODEL_EXECUTE);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("was destroyed"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// A captured collective in a task group takes other buffers through a task update.
TEST_F(ModelRiHcclTest, ATaskUpdateGivesACapturedCollectiveOtherBuffers) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr, updater = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&updater), ACL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root_, 0, &comm), HCCL_SUCCESS);
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, result[4] = {0, 0, 0, 0};
  ASSERT_EQ(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskGrpBegin(stream), ACL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(a, result, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  aclrtTaskGrp group = nullptr;
  ASSERT_EQ(aclmdlRICaptureTaskGrpEnd(stream, &group), ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream, &model), ACL_SUCCESS);
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(result[3], 4.0f);

  ASSERT_EQ(aclmdlRICaptureTaskUpdateBegin(updater, group), ACL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(b, result, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, updater),
            HCCL_SUCCESS);
  ASSERT_EQ(aclmdlRICaptureTaskUpdateEnd(updater), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(updater), ACL_SUCCESS);
  EXPECT_EQ(result[3], 4.0f);  // the update itself ran nothing
  ASSERT_EQ(aclmdlRIExecuteAsync(model, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(result[0], 5.0f);
  EXPECT_EQ(result[3], 8.0f);
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(updater), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// Cross-stream capture: the collective runs on a stream that joined the capture by an event,
// and replays on the model's own stream for that lane, in step with the capturing stream.
TEST_F(ModelRiHcclTest, ACollectiveOnAJoinedStreamReplaysInStep) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr, side = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&side), ACL_SUCCESS);
  aclrtEvent fork = nullptr, join = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&fork), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&join), ACL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root_, 0, &comm), HCCL_SUCCESS);
  float in[4] = {0, 0, 0, 0}, staged[4] = {0, 0, 0, 0}, out[4] = {0, 0, 0, 0};
  ASSERT_EQ(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(staged, sizeof(staged), in, sizeof(in), ACL_MEMCPY_HOST_TO_HOST,
                             stream),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(fork, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(side, fork), ACL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(staged, out, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, side),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(join, side), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(stream, join), ACL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream, &model), ACL_SUCCESS);
  for (int round = 1; round <= 3; ++round) {
    for (float& v : in) v = static_cast<float>(round);
    ASSERT_EQ(aclmdlRIExecuteAsync(model, stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_EQ(out[3], static_cast<float>(round));
  }
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(fork), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(join), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(side), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// Each replay is a new op of the communicator: the flight recorder holds one record per replay,
// with increasing op indexes and the replay stream's task ids; capturing itself made none.
TEST_F(ModelRiHcclTest, EveryReplayIsANewOpOfTheCommunicator) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr, other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root_, 0, &comm), HCCL_SUCCESS);
  char name[COMM_NAME_MAX_LENGTH] = {0};
  ASSERT_EQ(HcclGetCommName(comm, name), HCCL_SUCCESS);
  float data[4] = {1, 2, 3, 4};
  ASSERT_EQ(aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  aclmdlRI model = nullptr;
  ASSERT_EQ(aclmdlRICaptureEnd(stream, &model), ACL_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(aclmdlRIExecuteAsync(model, other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);

  const std::string path = vigil::dfx::DumpFlightRecorder("model_ri");
  ASSERT_FALSE(path.empty());
  nlohmann::json dump = nlohmann::json::parse(std::ifstream(path));
  nlohmann::json ops;
  for (const auto& c : dump["comms"]) {
    if (c["identifier"] == name) ops = c["ops"];
  }
  ASSERT_EQ(ops.size(), 3u) << dump.dump();
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i]["index"], i + 1);
    EXPECT_EQ(ops[i]["op"], "AllReduce");
    EXPECT_EQ(ops[i]["state"], "done");
    EXPECT_EQ(ops[i]["taskId"], i + 1);  // the replay stream's tasks
  }
  EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

}  // namespace
