// The profiling API (acl/acl_prof.h): CANN's call order and codes, the WARNING that device-side
// data is not collected, and the host-side trace aclprofStop writes (every stream task of the
// profiled devices between Start and Stop, with its stream and moments).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "rt_test_util.h"

namespace vigil::rt {
namespace {

namespace fs = std::filesystem;

#define EXPECT_ONE_ERROR(expr, code, needle)                                           \
  do {                                                                                 \
    const int before_ = testing::CountRuntimeErrors();                                 \
    EXPECT_EQ((expr), (code)) << #expr;                                                \
    EXPECT_EQ(testing::CountRuntimeErrors(), before_ + 1) << #expr;                    \
    std::string line_ = testing::LastRuntimeError();                                   \
    EXPECT_NE(line_.find(needle), std::string::npos) << #expr << " logged: " << line_; \
  } while (0)

// The run plog lines that contain `needle`.
std::vector<std::string> RunLogLines(const std::string& needle) {
  std::vector<std::string> lines;
  std::error_code ec;
  const fs::path dir = fs::path(vigil::log::LogRoot()) / "run" / "plog";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    std::ifstream in(it->path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(needle) != std::string::npos) lines.push_back(line);
    }
  }
  return lines;
}

// The file a "... written to FILE" line names.
std::string WrittenTo(const std::string& line) {
  const std::string marker = " written to ";
  const size_t at = line.rfind(marker);
  return at == std::string::npos ? std::string() : line.substr(at + marker.size());
}

class ProfilingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_dir_ = testing::UseTempLogDir();
    result_ = log_dir_ + "/prof_" + std::to_string(counter_++);
    ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
  }
  void TearDown() override {
    aclprofFinalize();  // whatever a failed test left
    aclrtResetDevice(2);
  }
  aclError Init() { return aclprofInit(result_.c_str(), result_.size()); }
  std::string log_dir_;
  std::string result_;
  static inline int counter_ = 0;
};

TEST_F(ProfilingTest, StartStopWritesTheStreamTasksAsATrace) {
  ASSERT_EQ(Init(), ACL_SUCCESS);
  uint32_t devices[] = {2};
  aclprofConfig* config = aclprofCreateConfig(devices, 1, ACL_AICORE_PIPE_UTILIZATION, nullptr,
                                              ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS);
  ASSERT_NE(config, nullptr);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::vector<char> a(1 << 20, 1), b(1 << 20, 0);
  // Before Start: not in the trace.
  ASSERT_EQ(
      aclrtMemcpyAsync(b.data(), b.size(), a.data(), a.size(), ACL_MEMCPY_HOST_TO_HOST, stream),
      ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  const size_t warned = RunLogLines("[WARNING] PROFILING").size();
  ASSERT_EQ(aclprofStart(config), ACL_SUCCESS);
  const auto warnings = RunLogLines("[WARNING] PROFILING");
  ASSERT_EQ(warnings.size(), warned + 1);
  EXPECT_NE(warnings.back().find("device-side profiling data is not collected"), std::string::npos);
  EXPECT_NE(warnings.back().find("ACL_PROF_AICORE_METRICS"), std::string::npos);
  aclrtEvent event = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&event), ACL_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(
        aclrtMemcpyAsync(b.data(), b.size(), a.data(), a.size(), ACL_MEMCPY_HOST_TO_HOST, stream),
        ACL_SUCCESS);
  }
  ASSERT_EQ(aclrtRecordEvent(event, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  ASSERT_EQ(aclprofStop(config), ACL_SUCCESS);
  // After Stop: not in the trace either.
  ASSERT_EQ(
      aclrtMemcpyAsync(b.data(), b.size(), a.data(), a.size(), ACL_MEMCPY_HOST_TO_HOST, stream),
      ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  const auto written = RunLogLines("aclprofStop: host-side stream task trace of 4 task(s)");
  ASSERT_FALSE(written.empty());
  const std::string file = WrittenTo(written.back());
  EXPECT_EQ(file.rfind(result_ + "/vigil_trace_" + std::to_string(getpid()) + "_", 0), 0u)
      << written.back();
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << file;
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<nlohmann::json> tasks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") tasks.push_back(e);
  }
  ASSERT_EQ(tasks.size(), 4u);
  int64_t last_end = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i]["pid"], 2);
    EXPECT_EQ(tasks[i]["name"], i < 3 ? "Memcpy" : "EventRecord");
    const int64_t ts = tasks[i]["ts"];
    EXPECT_GE(ts, last_end);  // one stream: each task after the one before
    last_end = ts + tasks[i]["dur"].get<int64_t>();
  }
  EXPECT_EQ(trace["otherData"]["device_side_data"], "not collected (CPU devices)");

  EXPECT_EQ(aclprofDestroyConfig(config), ACL_SUCCESS);
  EXPECT_EQ(aclprofFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(event), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(ProfilingTest, CallOrderAndArgumentsGiveCannCodes) {
  uint32_t devices[] = {2};
  aclprofConfig* config =
      aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, nullptr, ACL_PROF_TASK_TIME);
  ASSERT_NE(config, nullptr);
  EXPECT_ONE_ERROR(aclprofStart(config), ACL_ERROR_PROF_NOT_RUN, "aclprofInit first");
  EXPECT_ONE_ERROR(aclprofStop(config), ACL_ERROR_PROF_NOT_RUN, "aclprofInit first");
  EXPECT_ONE_ERROR(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN, "aclprofInit first");
  EXPECT_ONE_ERROR(aclprofInit(nullptr, 4), ACL_ERROR_INVALID_PARAM, "profilerResultPath");
  EXPECT_ONE_ERROR(aclprofInit(result_.c_str(), result_.size() + 3), ACL_ERROR_INVALID_PARAM,
                   "length");
  const std::string under_file = log_dir_ + "/a_file";
  std::ofstream(under_file) << "x";
  const std::string bad = under_file + "/prof";
  EXPECT_ONE_ERROR(aclprofInit(bad.c_str(), bad.size()), ACL_ERROR_INVALID_FILE,
                   "profilerResultPath");
  ASSERT_EQ(Init(), ACL_SUCCESS);
  EXPECT_ONE_ERROR(Init(), ACL_ERROR_REPEAT_INITIALIZE, "initialized already");
  EXPECT_ONE_ERROR(aclprofStart(nullptr), ACL_ERROR_INVALID_PARAM, "profilerConfig");
  EXPECT_ONE_ERROR(aclprofStop(config), ACL_ERROR_PROF_NOT_RUN, "not being profiled");
  ASSERT_EQ(aclprofStart(config), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclprofStart(config), ACL_ERROR_PROF_ALREADY_RUN, "profiled already");
  ASSERT_EQ(aclprofStop(config), ACL_SUCCESS);

  // Bad configs: null, with an ERROR line each.
  uint32_t twice[] = {2, 2};
  uint32_t far[] = {99};
  int before = testing::CountRuntimeErrors();
  EXPECT_EQ(aclprofCreateConfig(twice, 2, ACL_AICORE_NONE, nullptr, 0), nullptr);
  EXPECT_EQ(aclprofCreateConfig(far, 1, ACL_AICORE_NONE, nullptr, 0), nullptr);
  EXPECT_EQ(aclprofCreateConfig(nullptr, 1, ACL_AICORE_NONE, nullptr, 0), nullptr);
  EXPECT_EQ(aclprofCreateConfig(devices, 1, static_cast<aclprofAicoreMetrics>(42), nullptr, 0),
            nullptr);
  EXPECT_EQ(aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, nullptr, 0x2000), nullptr);
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 5);
  EXPECT_EQ(aclprofDestroyConfig(config), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclprofDestroyConfig(config), ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig");
  EXPECT_EQ(aclprofFinalize(), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN, "aclprofInit first");
}

TEST_F(ProfilingTest, FinalizeWritesTheTraceOfDevicesNeverStopped) {
  ASSERT_EQ(Init(), ACL_SUCCESS);
  uint32_t devices[] = {2};
  aclprofConfig* config =
      aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, nullptr, ACL_PROF_HCCL_TRACE);
  ASSERT_NE(config, nullptr);
  ASSERT_EQ(aclprofStart(config), ACL_SUCCESS);
  EXPECT_EQ(aclprofFinalize(), ACL_SUCCESS);
  const auto written = RunLogLines("aclprofFinalize: host-side stream task trace of 0 task(s)");
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(fs::exists(WrittenTo(written.back()))) << written.back();
  EXPECT_EQ(aclprofDestroyConfig(config), ACL_SUCCESS);
}

}  // namespace
}  // namespace vigil::rt
