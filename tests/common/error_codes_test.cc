#include "common/error_codes.h"

#include <gtest/gtest.h>

#include <set>

namespace vigil {
namespace {

// The screen lines of the seed documents, after "[PID: n] <time> ".
constexpr const char* kSeedEI0011 =
    "Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], "
    "Affected by QP depth configuration.] bytes of NPU memory. Possible Cause: Allocation failure "
    "due to insufficient NPU memory. Solution: Stop unnecessary processes and ensure the required "
    "memory is available.";
constexpr const char* kSeedEI0012 =
    "Execution_Error_SDMA(EI0012): SDMA memory copy task exception occurred. Remote rank: [4800]. "
    "Base information: [streamID:[351], taskID[5], taskType[Memcpy], tag[], AlgType(level "
    "0-1-2):[null-null-null].]. Task information: [src:[0x12c180000000], dst:[0x12c041800000], "
    "size:[0x80], notify id:[0xffffffffffffffff], link type:[HCCS], remote rank:[0]]. "
    "Communicator information: [group:[], user define information[], rankSize[0], rankId[0]].";
constexpr const char* kSeedEI0013 =
    "Execution Error ROCE CQE(EI0013): An error CQE occurred during operator execution. Local "
    "information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer information: server "
    "127.0.0.2, device ID 1, device IP 127.10.0.2. Possible Cause: 1. The network between two "
    "devices is abnormal. For example, the network port is intermittently disconnected.2. The "
    "peer process exits abnormally in advance. As a result, the local end cannot receive the "
    "response from the peer end. Solution: 1. Check whether the network devices between the two "
    "ends are abnormal.2. Check whether the peer process exits first. If yes, check the cause of "
    "the process exit.";

TEST(ErrorCodes, SeedScreenLinesReproduced) {
  const ErrorCodeInfo* ei11 = FindErrorCode("EI0011");
  ASSERT_NE(ei11, nullptr);
  EXPECT_EQ(RenderScreenError(*ei11, {"size: [0.25MB, 3MB], Affected by QP depth configuration."}),
            kSeedEI0011);

  const ErrorCodeInfo* ei12 = FindErrorCode("EI0012");
  ASSERT_NE(ei12, nullptr);
  EXPECT_EQ(RenderScreenError(
                *ei12, {"4800",
                        "streamID:[351], taskID[5], taskType[Memcpy], tag[], AlgType(level "
                        "0-1-2):[null-null-null].",
                        "src:[0x12c180000000], dst:[0x12c041800000], size:[0x80], notify "
                        "id:[0xffffffffffffffff], link type:[HCCS], remote rank:[0]",
                        "group:[], user define information[], rankSize[0], rankId[0]"}),
            kSeedEI0012);

  const ErrorCodeInfo* ei13 = FindErrorCode("EI0013");
  ASSERT_NE(ei13, nullptr);
  EXPECT_EQ(RenderScreenError(*ei13, {"127.0.0.1", "0", "127.10.0.1", "127.0.0.2", "1",
                                      "127.10.0.2"}),
            kSeedEI0013);
}

TEST(ErrorCodes, CatalogueComplete) {
  std::set<std::string_view> codes;
  const std::set<std::string_view> stages = {"InitGroupStage", "InitChannelStage",
                                             "TaskExecStage"};
  for (const auto& info : AllErrorCodes()) {
    EXPECT_TRUE(codes.insert(info.code).second) << "duplicate " << info.code;
    EXPECT_FALSE(info.title.empty()) << info.code;
    EXPECT_TRUE(stages.count(info.stage)) << info.code << " " << info.stage;
    EXPECT_FALSE(info.message.empty()) << info.code;
    EXPECT_FALSE(info.cause.empty()) << info.code;
    EXPECT_FALSE(info.solution.empty()) << info.code;
    EXPECT_FALSE(info.advice.empty()) << info.code;
    // The documented argument names match the number of placeholders.
    size_t placeholders = 0;
    for (size_t p = info.message.find("{}"); p != std::string_view::npos;
         p = info.message.find("{}", p + 2)) {
      ++placeholders;
    }
    size_t names = info.arg_names.empty() ? 0 : 1;
    for (char c : info.arg_names) names += c == ',' ? 1 : 0;
    EXPECT_EQ(placeholders, names) << info.code;
  }
  for (int i = 1; i <= 20; ++i) {
    char code[8];
    std::snprintf(code, sizeof(code), "EI%04d", i);
    EXPECT_TRUE(codes.count(code)) << code;
  }
  EXPECT_TRUE(codes.count("EI9999"));
  EXPECT_TRUE(codes.count("EI9001"));
  EXPECT_EQ(FindErrorCode("EI0021"), nullptr);
  EXPECT_EQ(FindErrorCode(""), nullptr);
}

TEST(ErrorCodes, TitlesAsHcclPrintsThem) {
  EXPECT_EQ(FindErrorCode("EI0001")->title, "Config_Error_Invalid_Environment_Variable");
  EXPECT_EQ(FindErrorCode("EI0002")->title, "Communication_Error_Timeout");
  EXPECT_EQ(FindErrorCode("EI0005")->title, "Invalid_Argument");
  EXPECT_EQ(FindErrorCode("EI0006")->title, "Communication_Error_Get_Socket");
  EXPECT_EQ(FindErrorCode("EI0019")->title, "Communication_Error_Bind_IP_Port");
  EXPECT_EQ(FindErrorCode("EI0002")->stage, "TaskExecStage");
  EXPECT_EQ(FindErrorCode("EI0006")->stage, "InitChannelStage");
  EXPECT_EQ(FindErrorCode("EI0001")->stage, "InitGroupStage");
}

TEST(ErrorCodes, MissingArgsEmptyExtraIgnored) {
  const ErrorCodeInfo* info = FindErrorCode("EI0001");
  EXPECT_EQ(RenderErrorMessage(*info, {"abc", "HCCL_BUFFSIZE", "an integer >= 1"}),
            "Value abc for environment variable [HCCL_BUFFSIZE] is invalid. Expected value: an "
            "integer >= 1.");
  EXPECT_EQ(RenderErrorMessage(*info, {"abc"}),
            "Value abc for environment variable [] is invalid. Expected value: .");
  EXPECT_EQ(RenderErrorMessage(*info, {"a", "B", "c", "extra", "more"}),
            "Value a for environment variable [B] is invalid. Expected value: c.");
  // Braces inside arguments are copied, never re-expanded.
  EXPECT_EQ(RenderErrorMessage(*FindErrorCode("EI0006"), {"{} {0}"}),
            "Getting socket times out. Reason: {} {0}");
}

TEST(ErrorCodes, NotApplicableCauseAndSolutionOmittedOnScreen) {
  // EI0006: HCCL's cause and solution are both "N/A".
  EXPECT_EQ(RenderScreenError(*FindErrorCode("EI0006"), {"wait socket establish timeout"}),
            "Communication_Error_Get_Socket(EI0006): Getting socket times out. Reason: wait "
            "socket establish timeout");
  // EI0008: no cause, a solution.
  EXPECT_EQ(RenderScreenError(*FindErrorCode("EI0008"), {"1.0", "2.0"}),
            "Package_Error_Incorrect_HCCL_Version(EI0008): The HCCL versions are inconsistent. "
            "The local version is 1.0, while the remote version is 2.0. Solution: Install the "
            "same HCCL version.");
}

TEST(ErrorCodes, VigilBufferCodeNamesTheKnobs) {
  const ErrorCodeInfo* info = FindErrorCode("EI9001");
  ASSERT_NE(info, nullptr);
  const std::string screen =
      RenderScreenError(*info, {"400MB", "200", "device 0 budget exhausted"});
  EXPECT_EQ(screen.rfind("Resource_Error_Insufficient_CCL_Buffer(EI9001): Failed to allocate "
                         "[400MB] of device memory for the CCL buffers (2 x HCCL_BUFFSIZE "
                         "[200]MB). Reason: device 0 budget exhausted Possible Cause: ",
                         0),
            0u)
      << screen;
  EXPECT_NE(screen.find("hcclBufferSize"), std::string::npos);
}

}  // namespace
}  // namespace vigil
