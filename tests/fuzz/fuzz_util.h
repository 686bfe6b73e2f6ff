// Shared by the fuzz targets (tests/fuzz/fuzz_*.cc) and their corpus replay (replay_main.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace vigil::fuzz {

// Log lines the parsers write about a bad input go nowhere: the log root is a path that cannot
// be created, so the writer drops them (log/plog.h) after formatting them as usual.
inline void QuietLogs() {
  static const bool done = [] {
    setenv("ASCEND_PROCESS_LOG_PATH", "/dev/null/vigil-fuzz", 1);
    return true;
  }();
  (void)done;
}

// Splits the input: the first byte picks a mode, the rest is the payload.
struct Input {
  uint8_t mode = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
};
inline Input Split(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  return {data[0], data + 1, size - 1};
}

}  // namespace vigil::fuzz

// A failed property check in a target: abort, so libFuzzer keeps the input as a crash.
#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
