// hccl/hccl_types.h and hccl/hccl_comm.h against HCCL's public headers: every offset and size of
// HcclCommConfig (version 11) and the other structs, the enum values and constants, and what
// HcclCommConfigInit writes. The numbers are worked out by hand from HCCL's declarations.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "hccl/hccl.h"
#include "hccl/hccl_sym_win.h"

extern "C" uint32_t VigilCConfigBufferSize(int32_t* exec_timeout);

namespace {

static_assert(sizeof(HcclCommConfig) == 2248);
static_assert(offsetof(HcclCommConfig, reserved) == 0);
static_assert(offsetof(HcclCommConfig, hcclBufferSize) == 24);
static_assert(offsetof(HcclCommConfig, hcclDeterministic) == 28);
static_assert(offsetof(HcclCommConfig, hcclCommName) == 32);
static_assert(offsetof(HcclCommConfig, hcclUdi) == 160);
static_assert(offsetof(HcclCommConfig, hcclOpExpansionMode) == 288);
static_assert(offsetof(HcclCommConfig, hcclRdmaTrafficClass) == 292);
static_assert(offsetof(HcclCommConfig, hcclRdmaServiceLevel) == 296);
static_assert(offsetof(HcclCommConfig, hcclWorldRankID) == 300);
static_assert(offsetof(HcclCommConfig, hcclJobID) == 304);
static_assert(offsetof(HcclCommConfig, aclGraphZeroCopyEnable) == 312);
static_assert(offsetof(HcclCommConfig, hcclExecTimeOut) == 316);
static_assert(offsetof(HcclCommConfig, hcclAlgo) == 320);
static_assert(offsetof(HcclCommConfig, hcclRetryEnable) == 1920);
static_assert(offsetof(HcclCommConfig, hcclRetryParams) == 1970);
static_assert(offsetof(HcclCommConfig, hcclBufferName) == 2098);
static_assert(offsetof(HcclCommConfig, hcclQos) == 2228);
static_assert(offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank) == 2232);
static_assert(offsetof(HcclCommConfig, hcclChannelSqDepth) == 2240);
static_assert(std::is_same_v<decltype(HcclCommConfig::hcclExecTimeOut), int32_t>);
static_assert(std::is_same_v<decltype(HcclCommConfig::aclGraphZeroCopyEnable), uint8_t>);
static_assert(std::is_same_v<decltype(HcclCommConfig::hcclSymWinMaxMemSizePerRank), uint64_t>);
static_assert(sizeof(HcclCommConfig::hcclAlgo) == 1600);
static_assert(sizeof(HcclCommConfig::hcclRetryEnable) == 50);
static_assert(sizeof(HcclCommConfig::hcclRetryParams) == 128);
static_assert(sizeof(HcclCommConfig::hcclBufferName) == 128);

static_assert(sizeof(HcclRootInfo) == 4108);
static_assert(sizeof(HcclSendRecvItem) == 32);
static_assert(offsetof(HcclSendRecvItem, buf) == 8);
static_assert(offsetof(HcclSendRecvItem, count) == 16);
static_assert(offsetof(HcclSendRecvItem, dataType) == 24);
static_assert(offsetof(HcclSendRecvItem, remoteRank) == 28);
static_assert(sizeof(HcclConfigValue) == 4);

static_assert(HCCL_E_SUSPENDING == 22 && HCCL_E_OOM == 24 && HCCL_E_IN_STATUS == 1041);
static_assert(HCCL_ROOT_INFO_BYTES == 4108 && COMM_NAME_MAX_LENGTH == 128 &&
              BUFFER_NAME_MAX_LENGTH == 128 && UDI_MAX_LENGTH == 128 &&
              HCCL_COMM_ALGO_MAX_LENGTH == 1600 && HCCL_COMM_RETRY_ENABLE_MAX_LENGTH == 50 &&
              HCCL_COMM_RETRY_PARAMS_MAX_LENGTH == 128);
static_assert(HCCL_COMM_CONFIG_INFO_BYTES == 24 && HCCL_COMM_CONFIG_MAGIC_WORD == 0xf0f0f0f0 &&
              HCCL_COMM_CONFIG_VERSION == 11);
static_assert(HCCL_COMM_DEFAULT_BUFFSIZE == 200 && HCCL_COMM_DEFAULT_DETERMINISTIC == 0 &&
              HCCL_COMM_DEFAULT_OP_EXPANSION_MODE == 0);
static_assert(HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET == -1 &&
              HCCL_COMM_QOS_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET == 0xffffffff &&
              HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE == 16);
static_assert(std::is_same_v<std::remove_cv_t<decltype(HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET)>,
                             int32_t>);
static_assert(std::is_same_v<std::remove_cv_t<decltype(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE)>,
                             uint64_t>);
static_assert(HCCL_DETERMINISTIC == 0 && HCCL_CONFIG_RESERVED == 1);
static_assert(HCCL_COMM_CONFIG_BUFFER_NAME == 11 && HCCL_COMM_CONFIG_RESERVED == 12);
static_assert(HCCL_CMD_BATCH_WRITE == 18 && HCCL_CMD_HALF_ALLTOALLV == 20 && HCCL_CMD_ALL == 21 &&
              HCCL_CMD_FINALIZE == 100 && HCCL_CMD_BARRIER == 103 && HCCL_CMD_MAX == 104);
static_assert(HCCL_COMM_STATUS_READY == 0 && HCCL_COMM_STATUS_SUSPENDING == 1 &&
              HCCL_COMM_STATUS_INVALID == 254 && HCCL_COMM_STATUS_RESERVED == 255);
static_assert(HCCL_COMM_STATE_PHASE_INVALID == -1 && HCCL_COMM_STATE_PHASE_DESTROY_PRE == 0 &&
              HCCL_COMM_STATE_PHASE_DESTROY_POST == 1 && HCCL_COMM_STATE_PHASE_RESUME_PRE == 2 &&
              HCCL_COMM_STATE_PHASE_RESUME_POST == 3);
static_assert(HCCL_OP_EXPANSION_MODE_INVALID == -1 && HCCL_OP_EXPANSION_MODE_HOST == 2 &&
              HCCL_OP_EXPANSION_AIV_ONLY == 6);
static_assert(HCCL_CONFIG_TYPE_INVALID == -1 && HCCL_CONFIG_TYPE_OP_EXPANSION_MODE == 0 &&
              HCCL_CONFIG_TYPE_HCCL_ALGO == 1);
static_assert(std::is_same_v<HcclCommSymWindow, void*> && std::is_same_v<HcclConn, void*>);

TEST(HcclTypesTest, ConfigInitWritesHeaderAndNotSetValues) {
  HcclCommConfig config;
  memset(&config, 0x5a, sizeof(config));
  HcclCommConfigInit(&config);
  size_t size;
  uint32_t magic, version;
  uint64_t reserved;
  memcpy(&size, config.reserved, 8);
  memcpy(&magic, config.reserved + 8, 4);
  memcpy(&version, config.reserved + 12, 4);
  memcpy(&reserved, config.reserved + 16, 8);
  EXPECT_EQ(size, sizeof(HcclCommConfig));
  EXPECT_EQ(magic, 0xf0f0f0f0u);
  EXPECT_EQ(version, 11u);
  EXPECT_EQ(reserved, 0u);
  EXPECT_EQ(config.hcclBufferSize, 0xffffffffu);
  EXPECT_EQ(config.hcclDeterministic, 0xffffffffu);
  EXPECT_EQ(config.hcclCommName[0], '\0');
  EXPECT_EQ(config.hcclUdi[0], '\0');
  EXPECT_EQ(config.hcclOpExpansionMode, 0u);
  EXPECT_EQ(config.hcclRdmaTrafficClass, 0xffffffffu);
  EXPECT_EQ(config.hcclRdmaServiceLevel, 0xffffffffu);
  EXPECT_EQ(config.hcclWorldRankID, 0u);
  EXPECT_EQ(config.hcclJobID, 0u);
  EXPECT_EQ(config.aclGraphZeroCopyEnable, 0);
  EXPECT_EQ(config.hcclExecTimeOut, -1);
  EXPECT_EQ(config.hcclAlgo[0], '\0');
  EXPECT_EQ(config.hcclRetryEnable[0], '\0');
  EXPECT_EQ(config.hcclRetryParams[0], '\0');
  EXPECT_EQ(config.hcclBufferName[0], '\0');
  EXPECT_EQ(config.hcclQos, 0xffffffffu);
  EXPECT_EQ(config.hcclSymWinMaxMemSizePerRank, 16u);
  EXPECT_EQ(config.hcclChannelSqDepth, 0xffffffffu);
  HcclCommConfigInit(nullptr);  // ignored, as HCCL's
}

TEST(HcclTypesTest, HeadersWorkFromC) {
  int32_t exec_timeout = 0;
  EXPECT_EQ(VigilCConfigBufferSize(&exec_timeout), 0xffffffffu);
  EXPECT_EQ(exec_timeout, -1);
}

TEST(HcclTypesTest, CapabilityCoversEveryConfigItem) {
  EXPECT_EQ(HcclGetCommConfigCapability(), static_cast<uint32_t>(HCCL_COMM_CONFIG_RESERVED));
}

TEST(HcclTypesTest, ErrorStringOfInStatus) {
  EXPECT_STRNE(HcclGetErrorString(HCCL_E_IN_STATUS), "unknown error");
}

}  // namespace
