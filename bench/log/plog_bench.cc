// Log statement cost. Lines go to a temporary ASCEND_PROCESS_LOG_PATH removed at exit.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "common/time_util.h"
#include "log/plog.h"

namespace {

// Debug channel at the default level 3: HCCL_INFO is off, only the cached level is read.
void BM_LevelOff(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    HCCL_INFO("Entry-HcclAllReduce: tag[{}], count[{}], dataType[{}]", "AllReduce_bench", i++,
              "float32");
  }
}
BENCHMARK(BM_LevelOff);
BENCHMARK(BM_LevelOff)->Threads(2);

// The same statement with its level on: format + one write(2) under the mutex.
void BM_LevelOnDebugChannel(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    HCCL_ERROR("Entry-HcclAllReduce: tag[{}], count[{}], dataType[{}]", "AllReduce_bench", i++,
               "float32");
  }
}
BENCHMARK(BM_LevelOnDebugChannel);
BENCHMARK(BM_LevelOnDebugChannel)->Threads(2);

void BM_RunChannel(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    HCCL_RUN_INFO("Entry-HcclAllReduce: tag[{}], count[{}], dataType[{}]", "AllReduce_bench", i++,
                  "float32");
  }
}
BENCHMARK(BM_RunChannel);

void BM_FormatPlogTime(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(vigil::FormatPlogTime(vigil::WallClock::now()));
}
BENCHMARK(BM_FormatPlogTime);

}  // namespace

int main(int argc, char** argv) {
  // $TMPDIR picks the file system the lines go to (e.g. /dev/shm to leave the disk out).
  const char* tmpdir = getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir != nullptr && tmpdir[0] != '\0' ? tmpdir : "/tmp") +
                     "/vigil_plog_bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return 1;
  setenv("ASCEND_PROCESS_LOG_PATH", tmpl.c_str(), 1);
  unsetenv("ASCEND_GLOBAL_LOG_LEVEL");
  unsetenv("ASCEND_SLOG_PRINT_TO_STDOUT");
  vigil::log::ResetForTesting();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return 0;
}
