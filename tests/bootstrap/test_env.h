// Per-test environment for the bootstrap tests: a temp log folder, loopback, kernel-chosen
// ports and short timeouts, re-read by the env and log layers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::testing {

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vigil_bs_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    setenv("ASCEND_PROCESS_LOG_PATH", dir_.c_str(), 1);
    setenv("HCCL_IF_IP", "127.0.0.1", 1);
    setenv("HCCL_IF_BASE_PORT", "0", 1);
    setenv("HCCL_CONNECT_TIMEOUT", "10", 1);
    unsetenv("HCCL_SOCKET_IFNAME");
    unsetenv("VIGIL_DEVICE_MEMORY");
    unsetenv("VIGIL_FAULT");
    log::ResetForTesting();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void SetEnv(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    log::ResetForTesting();
  }
  // Every plog line written so far (run and debug channels).
  std::string Logs() const {
    std::string all;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
         it != std::filesystem::recursive_directory_iterator(); ++it) {
      if (!it->is_regular_file()) continue;
      std::ifstream in(it->path());
      std::stringstream ss;
      ss << in.rdbuf();
      all += ss.str();
    }
    return all;
  }
  size_t CountInLogs(const std::string& needle) const {
    std::string all = Logs();
    size_t n = 0;
    for (size_t pos = all.find(needle); pos != std::string::npos; pos = all.find(needle, pos + 1)) ++n;
    return n;
  }
  std::string dir_;
};

}  // namespace vigil::testing
