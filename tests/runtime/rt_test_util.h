// Test helpers: a private log directory per test process, env overrides, and counting the
// RUNTIME ERROR lines written to the debug plog.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::rt::testing {

// Points the logs at a fresh temp dir with ERROR lines on, then applies `env` (name=value
// pairs already set by the caller via setenv) by reloading the configuration.
inline std::string UseTempLogDir() {
  static std::string dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/vigil_rt_test_XXXXXX";
    char* made = mkdtemp(tmpl);
    dir = made != nullptr ? made : "/tmp";
    // ctest runs every test in a process of its own: each would leave its folder behind. Only
    // the process that made it removes it (a forked child, e.g. a death test's, exits too).
    static pid_t owner = getpid();
    if (made != nullptr) {
      std::atexit([] {
        if (getpid() != owner) return;
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      });
    }
  }
  setenv("ASCEND_PROCESS_LOG_PATH", dir.c_str(), 1);
  setenv("ASCEND_GLOBAL_LOG_LEVEL", "3", 1);
  vigil::log::ResetForTesting();
  return dir;
}

// Every "[ERROR] RUNTIME(" line of the debug plog files, oldest file first (file names carry
// a strictly increasing timestamp).
inline std::vector<std::string> RuntimeErrorLines() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  const fs::path dir = fs::path(vigil::log::LogRoot()) / "debug" / "plog";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> lines;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("[ERROR] RUNTIME(", 0) == 0) lines.push_back(line);
    }
  }
  return lines;
}

inline int CountRuntimeErrors() {
  return static_cast<int>(RuntimeErrorLines().size());
}

// The last RUNTIME ERROR line, "" when none.
inline std::string LastRuntimeError() {
  std::vector<std::string> lines = RuntimeErrorLines();
  return lines.empty() ? std::string() : lines.back();
}

}  // namespace vigil::rt::testing
