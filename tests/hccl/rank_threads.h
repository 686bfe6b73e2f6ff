// Test helpers for the communicator calls: ranks as threads of this process (one device each,
// HCCL's one-device-per-pthread layout), and a look into this process's plog files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"

namespace vigil_test {

struct Rank {
  uint32_t rank = 0;
  uint32_t size = 0;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
};

// Runs fn on `n` threads, thread r being rank r of one communicator (made with `config`, may be
// null) on device r with a stream of its own; destroys both afterwards.
inline void RunRanks(uint32_t n, const std::function<void(Rank&)>& fn,
                     const HcclCommConfig* config = nullptr) {
  HcclRootInfo root;
  ASSERT_EQ(HcclGetRootInfo(&root), HCCL_SUCCESS);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Rank me;
      me.rank = r;
      me.size = n;
      ASSERT_EQ(aclrtSetDevice(static_cast<int32_t>(r)), ACL_SUCCESS);
      ASSERT_EQ(aclrtCreateStream(&me.stream), ACL_SUCCESS);
      ASSERT_EQ(HcclCommInitRootInfoConfig(n, &root, r, config, &me.comm), HCCL_SUCCESS);
      fn(me);
      EXPECT_EQ(HcclCommDestroy(me.comm), HCCL_SUCCESS);
      EXPECT_EQ(aclrtDestroyStream(me.stream), ACL_SUCCESS);
    });
  }
  for (auto& t : threads) t.join();
}

// One rank on the calling thread (device 0).
inline HcclComm OneRankComm(const HcclCommConfig* config = nullptr, HcclResult* rc = nullptr) {
  HcclRootInfo root;
  EXPECT_EQ(HcclGetRootInfo(&root), HCCL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  HcclComm comm = nullptr;
  const HcclResult result = HcclCommInitRootInfoConfig(1, &root, 0, config, &comm);
  if (rc != nullptr) {
    *rc = result;
  } else {
    EXPECT_EQ(result, HCCL_SUCCESS);
  }
  return comm;
}

// The log folder every test of the binary writes to (set up by SetUpProcess).
inline std::string& LogDir() {
  static std::string dir;
  return dir;
}

// Points the logs at a fresh folder and keeps the communicators small, before any HCCL call.
inline void SetUpProcess() {
  char dir[] = "/tmp/vigil-hccl-test.XXXXXX";
  if (mkdtemp(dir) == nullptr) abort();
  LogDir() = dir;
  setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
  setenv("HCCL_BUFFSIZE", "1", 1);
  setenv("HCCL_IF_BASE_PORT", "0", 1);
  setenv("HCCL_EXEC_TIMEOUT", "120", 1);
  setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
  aclInit(nullptr);
}

// Whether any log file of this process holds `text`.
inline bool LogContains(const std::string& text) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(LogDir(), ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace vigil_test
