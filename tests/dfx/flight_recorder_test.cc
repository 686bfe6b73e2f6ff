// The flight recorder, through the C API in one process (communicators of one rank): a dump after
// more ops than it keeps holds the last kFlightOpsPerComm of them, oldest first, each with its
// enqueue record (index, type, count, stream and task ids) and its end state.
#include "dfx/flight_recorder.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "acl/acl.h"
#include "hccl/hccl.h"

namespace {

constexpr uint64_t kKept = vigil::dfx::kFlightOpsPerComm;

class FlightRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(mkdtemp(dir_), nullptr);
    setenv("ASCEND_PROCESS_LOG_PATH", dir_, 1);  // before the first log line of this process
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    ASSERT_EQ(HcclGetRootInfo(&root_), HCCL_SUCCESS);
  }
  void TearDown() override {
    if (stream_ != nullptr) aclrtDestroyStream(stream_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  HcclComm Init() {
    HcclComm comm = nullptr;
    EXPECT_EQ(HcclCommInitRootInfo(1, &root_, 0, &comm), HCCL_SUCCESS);
    return comm;
  }
  void Run(HcclComm comm, uint64_t ops) {
    for (uint64_t i = 0; i < ops; ++i) {
      ASSERT_EQ(HcclAllReduce(data_, data_, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream_),
                HCCL_SUCCESS);
    }
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  }
  // The ops of the dump's communicator named `name`.
  nlohmann::json DumpedOps(const std::string& name) {
    const std::string path = vigil::dfx::DumpFlightRecorder("test");
    EXPECT_FALSE(path.empty());
    nlohmann::json dump = nlohmann::json::parse(std::ifstream(path));
    EXPECT_EQ(dump["schema"], "vigil.flight/1");
    for (const auto& c : dump["comms"]) {
      if (c["identifier"] == name) {
        EXPECT_EQ(c["rank"], 0);
        EXPECT_EQ(c["nranks"], 1);
        return c["ops"];
      }
    }
    ADD_FAILURE() << "no communicator " << name << " in " << dump.dump();
    return nlohmann::json::array();
  }
  static std::string Name(HcclComm comm) {
    char name[COMM_NAME_MAX_LENGTH] = {0};
    EXPECT_EQ(HcclGetCommName(comm, name), HCCL_SUCCESS);
    return name;
  }

  char dir_[64] = "/tmp/vigil-flight-test.XXXXXX";
  aclrtStream stream_ = nullptr;
  HcclRootInfo root_;
  float data_[4] = {1, 2, 3, 4};
};

TEST_F(FlightRecorderTest, DumpHoldsTheLastOpsOldestFirst) {
  HcclComm comm = Init();
  const std::string name = Name(comm);
  const uint64_t total = kKept + 44;
  Run(comm, total);
  const nlohmann::json ops = DumpedOps(name);
  ASSERT_EQ(ops.size(), kKept);
  uint64_t task_id = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    EXPECT_EQ(op["index"], total - kKept + 1 + i);
    EXPECT_EQ(op["op"], "AllReduce");
    EXPECT_EQ(op["tag"], "AllReduce_" + name);
    EXPECT_EQ(op["count"], 4);
    EXPECT_EQ(op["dataType"], "float32");
    EXPECT_EQ(op["reduceType"], "sum");
    EXPECT_TRUE(op["root"].is_null());
    EXPECT_EQ(op["state"], "done");
    EXPECT_EQ(op["result"], 0);
    EXPECT_TRUE(op["enter"].is_string());
    EXPECT_TRUE(op["start"].is_string());
    EXPECT_TRUE(op["leave"].is_string());
    EXPECT_GT(op["taskId"].get<uint64_t>(), task_id);  // one task per op, in order
    task_id = op["taskId"].get<uint64_t>();
  }
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

}  // namespace
