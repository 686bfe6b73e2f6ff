// The communicator calls of hccl/hccl_comm.h beyond init and ops: the config (its fields, older
// versions), the process-wide settings, suspend/resume and the state callbacks, names, NICs,
// memory ranges and symmetric windows. Ranks are threads of this process.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <vector>

#include "acl/acl_prof.h"
#include "hccl/hccl_sym_win.h"
#include "rank_threads.h"

using vigil_test::LogContains;
using vigil_test::OneRankComm;
using vigil_test::Rank;
using vigil_test::RunRanks;

namespace {

// HcclCommConfig as CANN 8.1's hccl_types.h lays it out (version 5, 300 bytes).
struct ConfigV5 {
  size_t size;
  uint32_t magic;
  uint32_t version;
  uint64_t reserved;
  uint32_t hcclBufferSize;
  uint32_t hcclDeterministic;
  char hcclCommName[128];
  char hcclUdi[128];
  uint32_t hcclOpExpansionMode;
  uint32_t hcclRdmaTrafficClass;
  uint32_t hcclRdmaServiceLevel;
};
static_assert(sizeof(ConfigV5) == 304 && offsetof(ConfigV5, hcclRdmaServiceLevel) == 296);

// HcclCommConfig as Vigil's earlier header laid it out (version 11 but 320 bytes).
struct ConfigEarlierVigil {
  size_t size;
  uint32_t magic;
  uint32_t version;
  uint64_t reserved;
  uint32_t hcclBufferSize;
  uint32_t hcclDeterministic;
  char hcclCommName[128];
  char hcclUdi[128];
  uint32_t hcclOpExpansionMode;
  uint32_t hcclRdmaTrafficClass;
  uint32_t hcclRdmaServiceLevel;
  uint32_t hcclWorldRankID;
  uint64_t hcclJobID;
  uint32_t hcclExecTimeOut;
};
static_assert(sizeof(ConfigEarlierVigil) == 320 &&
              offsetof(ConfigEarlierVigil, hcclExecTimeOut) == 312);

std::string CommName(HcclComm comm) {
  char name[COMM_NAME_MAX_LENGTH] = {0};
  EXPECT_EQ(HcclGetCommName(comm, name), HCCL_SUCCESS);
  return name;
}

HcclCommConfig NamedConfig(const char* name) {
  HcclCommConfig config;
  HcclCommConfigInit(&config);
  strncpy(config.hcclCommName, name, COMM_NAME_MAX_LENGTH - 1);
  return config;
}

TEST(CommConfigTest, AnOlderVersionIsReadUpToItsSize) {
  ConfigV5 old;
  memset(&old, 0xee, sizeof(old));  // past its 300 bytes: garbage a library must not read
  old.size = 300;
  old.magic = HCCL_COMM_CONFIG_MAGIC_WORD;
  old.version = 5;
  old.reserved = 0;
  old.hcclBufferSize = 2;
  old.hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
  strcpy(old.hcclCommName, "vigil_v5_comm");
  old.hcclUdi[0] = '\0';
  old.hcclOpExpansionMode = 0;
  HcclComm comm = OneRankComm(reinterpret_cast<const HcclCommConfig*>(&old));
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(CommName(comm), "vigil_v5_comm");
  EXPECT_TRUE(LogContains("config version[5] size[300] differs"));
  EXPECT_TRUE(LogContains("bufferSize[2]M"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

TEST(CommConfigTest, VigilsEarlierLayoutKeepsWorking) {
  ConfigEarlierVigil old;
  memset(&old, 0xee, sizeof(old));  // its padding: garbage
  old.size = sizeof(old);
  old.magic = HCCL_COMM_CONFIG_MAGIC_WORD;
  old.version = 11;
  old.reserved = 0;
  old.hcclBufferSize = 1;
  old.hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
  strcpy(old.hcclCommName, "vigil_earlier_comm");
  old.hcclUdi[0] = '\0';
  old.hcclOpExpansionMode = 0;
  old.hcclExecTimeOut = 55;
  HcclComm comm = OneRankComm(reinterpret_cast<const HcclCommConfig*>(&old));
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(CommName(comm), "vigil_earlier_comm");
  EXPECT_TRUE(LogContains("execTimeOut[55]s"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

TEST(CommConfigTest, FieldsAreCheckedAndApplied) {
  HcclResult rc;
  HcclCommConfig config = NamedConfig("vigil_v11_comm");
  config.hcclExecTimeOut = 77;
  config.hcclBufferSize = 3;
  strcpy(config.hcclUdi, "udi-of-test");
  HcclComm comm = OneRankComm(&config);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(CommName(comm), "vigil_v11_comm");
  EXPECT_TRUE(LogContains("execTimeOut[77]s"));
  EXPECT_TRUE(LogContains("udi[udi-of-test]"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);

  HcclCommConfig bad = NamedConfig("bad");
  bad.aclGraphZeroCopyEnable = 2;
  EXPECT_EQ(OneRankComm(&bad, &rc), nullptr);
  EXPECT_EQ(rc, HCCL_E_PARA);
  EXPECT_TRUE(LogContains("config aclGraphZeroCopyEnable[2] is invalid"));
  bad = NamedConfig("bad");
  bad.hcclExecTimeOut = -5;
  EXPECT_EQ(OneRankComm(&bad, &rc), nullptr);
  EXPECT_EQ(rc, HCCL_E_PARA);
  bad = NamedConfig("bad");
  bad.hcclDeterministic = 3;
  EXPECT_EQ(OneRankComm(&bad, &rc), nullptr);
  EXPECT_EQ(rc, HCCL_E_PARA);
  bad = NamedConfig("bad");
  memset(bad.reserved + 8, 0, 4);  // the magic word
  EXPECT_EQ(OneRankComm(&bad, &rc), nullptr);
  EXPECT_EQ(rc, HCCL_E_PARA);
  EXPECT_TRUE(LogContains("call HcclCommConfigInit first"));
}

TEST(CommConfigTest, DeterministicSetting) {
  HcclConfigValue value{-1};
  ASSERT_EQ(HcclGetConfig(HCCL_DETERMINISTIC, &value), HCCL_SUCCESS);
  EXPECT_EQ(value.value, 0);
  EXPECT_EQ(HcclSetConfig(HCCL_DETERMINISTIC, HcclConfigValue{2}), HCCL_SUCCESS);
  ASSERT_EQ(HcclGetConfig(HCCL_DETERMINISTIC, &value), HCCL_SUCCESS);
  EXPECT_EQ(value.value, 2);
  // A communicator made now takes it.
  HcclCommConfig config = NamedConfig("vigil_deterministic_comm");
  HcclComm comm = OneRankComm(&config);
  EXPECT_TRUE(LogContains("deterministic[2]"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclSetConfig(HCCL_DETERMINISTIC, HcclConfigValue{3}), HCCL_E_PARA);
  EXPECT_EQ(HcclSetConfig(HCCL_CONFIG_RESERVED, HcclConfigValue{1}), HCCL_E_PARA);
  EXPECT_EQ(HcclGetConfig(HCCL_DETERMINISTIC, nullptr), HCCL_E_PTR);
  EXPECT_EQ(HcclSetConfig(HCCL_DETERMINISTIC, HcclConfigValue{0}), HCCL_SUCCESS);
}

// HCCL_DETERMINISTIC is the default of hcclDeterministic until HcclSetConfig sets one (run by
// CTest with HCCL_DETERMINISTIC=strict; skipped without it).
TEST(CommConfigTest, DeterministicFromTheEnvironment) {
  const char* env = getenv("HCCL_DETERMINISTIC");
  if (env == nullptr || strcmp(env, "strict") != 0) GTEST_SKIP() << "HCCL_DETERMINISTIC!=strict";
  HcclConfigValue value{-1};
  ASSERT_EQ(HcclGetConfig(HCCL_DETERMINISTIC, &value), HCCL_SUCCESS);
  EXPECT_EQ(value.value, 2);
  HcclCommConfig config = NamedConfig("vigil_deterministic_env_comm");
  HcclComm comm = OneRankComm(&config);
  EXPECT_TRUE(LogContains("deterministic[2]"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

// A program that sets HCCL_TUNER_PLUGIN learns that the plugin is not loaded (each test runs in
// a process of its own: the variable is read at this process's first HCCL call).
TEST(CommConfigTest, ATunerPluginIsNamedAsNotLoaded) {
  setenv("HCCL_TUNER_PLUGIN", "/opt/tuner/libhccl_tuner_example.so", 1);
  HcclComm comm = OneRankComm();
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(LogContains("[Tuner]HCCL_TUNER_PLUGIN[/opt/tuner/libhccl_tuner_example.so] is set"));
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  unsetenv("HCCL_TUNER_PLUGIN");
}

TEST(CommConfigTest, ConfigGetInfoReportsHostExpansionAndTheAlgorithm) {
  HcclCommConfig config = NamedConfig("vigil_algo_comm");
  strcpy(config.hcclAlgo, "level0:NA;level1:ring");
  HcclComm comm = OneRankComm(&config);
  ASSERT_NE(comm, nullptr);
  HcclConfigTypeOpExpansionMode mode = HCCL_OP_EXPANSION_MODE_INVALID;
  EXPECT_EQ(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, sizeof(mode), &mode),
            HCCL_SUCCESS);
  EXPECT_EQ(mode, HCCL_OP_EXPANSION_MODE_HOST);
  char algo[64] = {0};
  EXPECT_EQ(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof(algo), algo), HCCL_SUCCESS);
  EXPECT_STREQ(algo, "level0:NA;level1:ring");
  EXPECT_EQ(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, 4, algo), HCCL_E_PARA);
  EXPECT_EQ(HcclConfigGetInfo(comm, static_cast<HcclConfigType>(7), sizeof(algo), algo),
            HCCL_E_PARA);
  EXPECT_EQ(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof(algo), nullptr),
            HCCL_E_PTR);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclConfigGetInfo(comm, HCCL_CONFIG_TYPE_HCCL_ALGO, sizeof(algo), algo), HCCL_E_PARA);
}

// What the state callbacks saw, while `g_recording`.
std::mutex g_phases_mu;
std::vector<std::pair<HcclComm, HcclCommStatePhase>> g_phases;
bool g_recording = false;
bool g_fail_resume = false;

HcclResult RecordPhase(HcclComm comm, HcclCommStatePhase phase, void* args) {
  std::lock_guard<std::mutex> lock(g_phases_mu);
  if (g_recording && args == &g_phases) g_phases.emplace_back(comm, phase);
  return HCCL_SUCCESS;
}

HcclResult FailResume(HcclComm, HcclCommStatePhase phase, void*) {
  return g_fail_resume && phase == HCCL_COMM_STATE_PHASE_RESUME_PRE ? HCCL_E_INTERNAL
                                                                     : HCCL_SUCCESS;
}

TEST(CommStateTest, SuspendStopsNewOpsAndResumeTakesThemAgain) {
  ASSERT_EQ(HcclCommRegCommStateCallback("vigil_test_record", RecordPhase, &g_phases),
            HCCL_SUCCESS);
  ASSERT_EQ(HcclCommRegCommStateCallback("vigil_test_fail", FailResume, nullptr), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommRegCommStateCallback("vigil_test", nullptr, nullptr), HCCL_E_PTR);
  EXPECT_EQ(HcclCommRegCommStateCallback("", RecordPhase, nullptr), HCCL_E_PARA);
  g_recording = true;

  HcclCommConfig config = NamedConfig("vigil_suspend_comm");
  HcclComm comm = OneRankComm(&config);
  ASSERT_NE(comm, nullptr);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  float data[4] = {1, 2, 3, 4};
  float out[4] = {0, 0, 0, 0};
  HcclCommStatus status = HCCL_COMM_STATUS_INVALID;
  EXPECT_EQ(HcclCommGetStatus("vigil_suspend_comm", &status), HCCL_SUCCESS);
  EXPECT_EQ(status, HCCL_COMM_STATUS_READY);

  // Queued before the suspend: it runs to its end.
  ASSERT_EQ(HcclAllReduce(data, out, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(HcclCommSuspend(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommGetStatus("vigil_suspend_comm", &status), HCCL_SUCCESS);
  EXPECT_EQ(status, HCCL_COMM_STATUS_SUSPENDING);
  EXPECT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_E_SUSPENDING);
  EXPECT_EQ(HcclBarrier(comm, stream), HCCL_E_SUSPENDING);
  EXPECT_TRUE(LogContains("communicator is suspended (HcclCommSuspend)"));
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(out[3], 4.0f);

  // A callback failing at RESUME_PRE stops the resume.
  g_fail_resume = true;
  EXPECT_EQ(HcclCommResume(comm), HCCL_E_INTERNAL);
  EXPECT_EQ(HcclCommGetStatus("vigil_suspend_comm", &status), HCCL_SUCCESS);
  EXPECT_EQ(status, HCCL_COMM_STATUS_SUSPENDING);
  EXPECT_TRUE(LogContains("callback regName[vigil_test_fail] failed at phase[RESUME_PRE]"));
  g_fail_resume = false;

  {
    std::lock_guard<std::mutex> lock(g_phases_mu);
    g_phases.clear();
  }
  ASSERT_EQ(HcclCommResume(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommGetStatus("vigil_suspend_comm", &status), HCCL_SUCCESS);
  EXPECT_EQ(status, HCCL_COMM_STATUS_READY);
  EXPECT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  ASSERT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  {
    std::lock_guard<std::mutex> lock(g_phases_mu);
    const std::vector<std::pair<HcclComm, HcclCommStatePhase>> want = {
        {comm, HCCL_COMM_STATE_PHASE_RESUME_PRE},
        {comm, HCCL_COMM_STATE_PHASE_RESUME_POST},
        {comm, HCCL_COMM_STATE_PHASE_DESTROY_PRE},
        {comm, HCCL_COMM_STATE_PHASE_DESTROY_POST}};
    EXPECT_EQ(g_phases, want);
    g_recording = false;
  }
  EXPECT_EQ(HcclCommGetStatus("vigil_suspend_comm", &status), HCCL_E_NOT_FOUND);
  EXPECT_EQ(HcclCommGetStatus(nullptr, &status), HCCL_E_PTR);
  EXPECT_EQ(HcclCommSuspend(comm), HCCL_E_PARA);
  EXPECT_EQ(HcclCommResume(comm), HCCL_E_PARA);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(CommNameTest, HandleIsFoundByName) {
  HcclCommConfig config = NamedConfig("vigil_named_comm");
  HcclComm named = OneRankComm(&config);
  HcclComm unnamed = OneRankComm();
  HcclComm found = nullptr;
  EXPECT_EQ(HcclCommGetHandleWithName("vigil_named_comm", &found), HCCL_SUCCESS);
  EXPECT_EQ(found, named);
  // An unnamed communicator is named by its identifier.
  EXPECT_EQ(HcclCommGetHandleWithName(CommName(unnamed).c_str(), &found), HCCL_SUCCESS);
  EXPECT_EQ(found, unnamed);
  EXPECT_EQ(HcclCommGetHandleWithName("vigil_no_such_comm", &found), HCCL_E_NOT_FOUND);
  EXPECT_TRUE(LogContains("no live communicator of this process is named [vigil_no_such_comm]"));
  EXPECT_EQ(HcclCommGetHandleWithName(nullptr, &found), HCCL_E_PTR);
  EXPECT_EQ(HcclCommDestroy(named), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommGetHandleWithName("vigil_named_comm", &found), HCCL_E_NOT_FOUND);
  EXPECT_EQ(HcclCommDestroy(unnamed), HCCL_SUCCESS);
}

TEST(CommNicTest, OnlyTheMainNicExists) {
  HcclComm comm = OneRankComm();
  uint32_t ranks[1] = {0};
  bool main_nic[1] = {false};
  bool backup[1] = {true};
  EXPECT_EQ(HcclCommWorkingDevNicSet(comm, ranks, main_nic, 1), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommWorkingDevNicSet(comm, ranks, backup, 1), HCCL_E_NOT_SUPPORT);
  EXPECT_TRUE(LogContains("no backup device NIC to switch to, return HCCL_E_NOT_SUPPORT"));
  uint32_t far[1] = {5};
  EXPECT_EQ(HcclCommWorkingDevNicSet(comm, far, main_nic, 1), HCCL_E_PARA);
  EXPECT_EQ(HcclCommWorkingDevNicSet(comm, ranks, main_nic, 0), HCCL_E_PARA);
  EXPECT_EQ(HcclCommWorkingDevNicSet(comm, nullptr, main_nic, 1), HCCL_E_PTR);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

TEST(CommMemoryTest, RangesAndActivatedPiecesAreKeptConsistent) {
  HcclComm comm = OneRankComm();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int32_t device = 0;
  ASSERT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
  // Virtual memory as HCCL's zero-copy callers make it: a reservation, pieces mapped into it.
  constexpr size_t kRange = 1 << 20;
  void* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&base, kRange, 0, nullptr, 0), ACL_SUCCESS);
  char* b = static_cast<char*>(base);
  aclrtPhysicalMemProp prop{ACL_MEM_HANDLE_TYPE_NONE, ACL_MEM_ALLOCATION_TYPE_PINNED,
                            ACL_HBM_MEM_HUGE, {static_cast<uint32_t>(device),
                            ACL_MEM_LOCATION_TYPE_DEVICE}, 0};
  aclrtDrvMemHandle handle = nullptr;  // 64 KiB at b
  ASSERT_EQ(aclrtMallocPhysical(&handle, 65536, &prop, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMapMem(b, 65536, 0, handle, 0), ACL_SUCCESS);
  aclrtDrvMemHandle straddling = nullptr;  // 8 KiB across the end of the range set below
  ASSERT_EQ(aclrtMallocPhysical(&straddling, 8192, &prop, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMapMem(b + kRange / 2 - 4096, 8192, 0, straddling, 0), ACL_SUCCESS);

  EXPECT_EQ(HcclCommActivateCommMemory(comm, b, 65536, 0, handle, 0), HCCL_E_PARA);  // no range
  EXPECT_TRUE(LogContains("is not inside a range set by HcclCommSetMemoryRange"));
  EXPECT_EQ(HcclCommSetMemoryRange(comm, b, kRange / 2, 0, 0), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommSetMemoryRange(comm, b + 4096, 4096, 0, 0), HCCL_E_PARA);  // overlaps
  EXPECT_TRUE(LogContains("overlaps the range set at"));
  EXPECT_EQ(HcclCommSetMemoryRange(comm, b + kRange, 4096, 1, 0), HCCL_E_PARA);  // alignment
  EXPECT_EQ(HcclCommSetMemoryRange(comm, b + kRange, 0, 0, 0), HCCL_E_PARA);     // size 0

  // The handle must be a physical allocation mapped at exactly that address, that size.
  aclrtDrvMemHandle foreign = reinterpret_cast<aclrtDrvMemHandle>(0x1000);
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b, 65536, 0, foreign, 0), HCCL_E_PARA);
  EXPECT_TRUE(LogContains("is not a physical allocation of aclrtMallocPhysical"));
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b + 4096, 65536, 0, handle, 0), HCCL_E_PARA);
  EXPECT_TRUE(LogContains("is mapped at"));
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b, 4096, 0, handle, 0), HCCL_E_PARA);
  EXPECT_TRUE(LogContains("holds 0x10000 bytes, not 0x1000"));

  EXPECT_EQ(HcclCommActivateCommMemory(comm, b, 65536, 0, handle, 0), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b, 65536, 0, handle, 0), HCCL_E_PARA);
  EXPECT_TRUE(LogContains("overlaps memory activated before"));
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b + kRange / 2 - 4096, 8192, 0, straddling, 0),
            HCCL_E_PARA);
  EXPECT_TRUE(LogContains("ends past its range"));
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b + 65536, 4096, 1, handle, 0), HCCL_E_PARA);
  EXPECT_EQ(HcclCommActivateCommMemory(comm, b + 65536, 4096, 0, nullptr, 0), HCCL_E_PTR);

  // An op on buffers inside the activated piece.
  float* in = reinterpret_cast<float*>(b);
  float* out = reinterpret_cast<float*>(b + 32768);
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i);
  ASSERT_EQ(HcclAllReduce(in, out, 16, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(out[15], 15.0f);

  EXPECT_EQ(HcclCommUnsetMemoryRange(comm, b), HCCL_E_PARA);  // still active
  EXPECT_TRUE(LogContains("call HcclCommDeactivateCommMemory first"));
  EXPECT_EQ(HcclCommDeactivateCommMemory(comm, b + 8), HCCL_E_PARA);
  EXPECT_EQ(HcclCommDeactivateCommMemory(comm, b), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommDeactivateCommMemory(comm, b), HCCL_E_PARA);
  EXPECT_EQ(HcclCommUnsetMemoryRange(comm, b + 8), HCCL_E_PARA);
  EXPECT_EQ(HcclCommUnsetMemoryRange(comm, b), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommUnsetMemoryRange(comm, b), HCCL_E_PARA);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommSetMemoryRange(comm, b, kRange, 0, 0), HCCL_E_PARA);  // destroyed
  EXPECT_EQ(aclrtUnmapMem(b), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnmapMem(b + kRange / 2 - 4096), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(handle), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(straddling), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// hccl_test's zero-copy mode maps physical pieces into one reservation as its data grows and
// then runs ops on buffers that span several of them: they are one range, a hole is not.
TEST(CommMemoryTest, OpsMaySpanAdjacentMappingsButNotAHole) {
  HcclComm comm = OneRankComm();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int32_t device = 0;
  ASSERT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
  constexpr size_t kPiece = 64 << 10;
  void* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&base, 8 * kPiece, 0, nullptr, 1), ACL_SUCCESS);
  char* b = static_cast<char*>(base);
  aclrtPhysicalMemProp prop{ACL_MEM_HANDLE_TYPE_NONE, ACL_MEM_ALLOCATION_TYPE_PINNED,
                            ACL_HBM_MEM_HUGE, {static_cast<uint32_t>(device),
                            ACL_MEM_LOCATION_TYPE_DEVICE}, 0};
  std::vector<aclrtDrvMemHandle> pieces(4);
  for (size_t i = 0; i < pieces.size(); ++i) {  // pieces 0-3 mapped; 4-7 are a hole
    ASSERT_EQ(aclrtMallocPhysical(&pieces[i], kPiece, &prop, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMapMem(b + i * kPiece, kPiece, 0, pieces[i], 0), ACL_SUCCESS);
  }
  ASSERT_EQ(HcclCommSetMemoryRange(comm, b, 8 * kPiece, 0, 0), HCCL_SUCCESS);
  for (size_t i = 0; i < pieces.size(); ++i) {
    ASSERT_EQ(HcclCommActivateCommMemory(comm, b + i * kPiece, kPiece, 0, pieces[i], 0),
              HCCL_SUCCESS);
  }
  // Send: piece 0 and half of 1; receive: the other half of 1 and piece 2.
  constexpr uint64_t kCount = 3 * kPiece / 2 / sizeof(float);
  float* in = reinterpret_cast<float*>(b);
  float* out = reinterpret_cast<float*>(b + 3 * kPiece / 2);
  for (uint64_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(i % 1000);
  ASSERT_EQ(HcclAllReduce(in, out, kCount, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(out[kCount - 1], static_cast<float>((kCount - 1) % 1000));
  // A receive buffer running from piece 3 into the hole after it faults like unmapped memory.
  float* into_hole = reinterpret_cast<float*>(b + 3 * kPiece + kPiece / 2);
  ASSERT_EQ(HcclAllReduce(in, into_hole, kPiece / sizeof(float), HCCL_DATA_TYPE_FP32,
                          HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_SYS_DMA);
  EXPECT_TRUE(LogContains("touches unmapped virtual memory"));

  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(HcclCommDeactivateCommMemory(comm, b + i * kPiece), HCCL_SUCCESS);
  }
  EXPECT_EQ(HcclCommUnsetMemoryRange(comm, b), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(aclrtUnmapMem(b + i * kPiece), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(pieces[i]), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// The acl profiling trace names HCCL ops: type, count, data type, reduction.
TEST(CommProfilingTest, TheTraceNamesHcclOps) {
  HcclComm comm = OneRankComm();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const std::string dir = vigil_test::LogDir() + "/prof";
  ASSERT_EQ(aclprofInit(dir.c_str(), dir.size()), ACL_SUCCESS);
  uint32_t devices[] = {0};
  aclprofConfig* config =
      aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, nullptr, ACL_PROF_HCCL_TRACE);
  ASSERT_NE(config, nullptr);
  ASSERT_EQ(aclprofStart(config), ACL_SUCCESS);
  std::vector<float> in(256, 1.0f), out(256, 0.0f);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(HcclAllReduce(in.data(), out.data(), 256, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX,
                            comm, stream),
              HCCL_SUCCESS);
  }
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  ASSERT_EQ(aclprofStop(config), ACL_SUCCESS);
  EXPECT_EQ(aclprofDestroyConfig(config), ACL_SUCCESS);
  EXPECT_EQ(aclprofFinalize(), ACL_SUCCESS);
  std::string trace;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(entry.path());
    trace.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  size_t ops = 0;
  for (size_t at = trace.find("\"name\":\"AllReduce\""); at != std::string::npos;
       at = trace.find("\"name\":\"AllReduce\"", at + 1)) {
    ++ops;
  }
  EXPECT_EQ(ops, 2u) << trace;
  EXPECT_NE(trace.find("\"count\":\"256\""), std::string::npos);
  EXPECT_NE(trace.find("\"reduce_op\":\"max\""), std::string::npos);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(CommSymWinTest, ThreadRanksSeeEachOthersWindows) {
  constexpr uint32_t kRanks = 2;
  constexpr size_t kBytes = 4096;
  std::vector<char*> bases(kRanks, nullptr);
  std::barrier sync(kRanks);
  RunRanks(kRanks, [&](Rank& me) {
    void* mem = nullptr;
    ASSERT_EQ(aclrtMalloc(&mem, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    bases[me.rank] = static_cast<char*>(mem);
    HcclCommSymWindow win = nullptr;
    EXPECT_EQ(HcclCommSymWinRegister(me.comm, mem, kBytes, &win, 0), HCCL_E_PARA);  // flag
    EXPECT_EQ(HcclCommSymWinRegister(me.comm, mem, 17ull << 30, &win, 1), HCCL_E_PARA);  // > 16G
    ASSERT_EQ(HcclCommSymWinRegister(me.comm, mem, kBytes, &win, 1), HCCL_SUCCESS);
    EXPECT_EQ(HcclCommSymWinRegister(me.comm, bases[me.rank] + 8, 8, &win, 1), HCCL_E_PARA);
    sync.arrive_and_wait();
    const uint32_t peer = 1 - me.rank;
    void* ptr = nullptr;
    ASSERT_EQ(HcclSymWinGetPeerPointer(win, 128, peer, &ptr), HCCL_SUCCESS);
    EXPECT_EQ(ptr, bases[peer] + 128);
    ASSERT_EQ(HcclSymWinGetPeerPointer(win, 0, me.rank, &ptr), HCCL_SUCCESS);
    EXPECT_EQ(ptr, bases[me.rank]);
    EXPECT_EQ(HcclSymWinGetPeerPointer(win, kBytes, peer, &ptr), HCCL_E_PARA);
    EXPECT_EQ(HcclSymWinGetPeerPointer(win, 0, kRanks, &ptr), HCCL_E_PARA);
    HcclCommSymWindow found = nullptr;
    size_t offset = 0;
    ASSERT_EQ(HcclCommSymWinGet(me.comm, bases[me.rank] + 256, 16, &found, &offset),
              HCCL_SUCCESS);
    EXPECT_EQ(found, win);
    EXPECT_EQ(offset, 256u);
    EXPECT_EQ(HcclCommSymWinGet(me.comm, bases[me.rank] + kBytes - 8, 16, &found, &offset),
              HCCL_E_NOT_FOUND);
    // hccl_test's symmetric mode: send and receive buffers inside the window.
    float* send = reinterpret_cast<float*>(bases[me.rank]);
    float* recv = send + 64;
    for (int i = 0; i < 64; ++i) send[i] = static_cast<float>(me.rank + 1);
    ASSERT_EQ(HcclAllReduce(send, recv, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm,
                            me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(recv[63], 3.0f);
    sync.arrive_and_wait();
    EXPECT_EQ(HcclCommSymWinDeregister(win), HCCL_SUCCESS);
    EXPECT_EQ(HcclCommSymWinDeregister(win), HCCL_E_PARA);
    EXPECT_EQ(HcclSymWinGetPeerPointer(win, 0, peer, &ptr), HCCL_E_PARA);
    sync.arrive_and_wait();
    EXPECT_EQ(aclrtFree(mem), ACL_SUCCESS);
  });
}

}  // namespace

int main(int argc, char** argv) {
  vigil_test::SetUpProcess();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
