// Runtime costs: a stream task enqueued and executed (N tasks, then one synchronize), a single
// task round trip (enqueue + synchronize, worker wakes each time), and aclrtMemcpy D2D.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstring>

#include "acl/acl.h"
#include "runtime/stream.h"

namespace {

void SetUpDevice() {
  // Logs under /tmp so the benchmark never writes to $HOME.
  setenv("ASCEND_PROCESS_LOG_PATH", "/tmp/vigil_runtime_bench_log", 0);
  aclrtSetDevice(0);
}

// Cost per task of enqueue + execute when tasks stream in: N no-op tasks, then synchronize.
void BM_StreamEnqueueExecute(benchmark::State& state) {
  SetUpDevice();
  aclrtStream handle = nullptr;
  aclrtCreateStream(&handle);
  vigil::rt::Stream* stream = vigil::rt::StreamFromHandle(handle);
  const int64_t n = state.range(0);
  uint64_t sink = 0;
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) {
      stream->Enqueue(vigil::rt::TaskType::kKernel, [&sink](std::string*) {
        ++sink;
        return ACL_SUCCESS;
      });
    }
    stream->Synchronize();
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * n);
  // Seconds per task (printed with an SI prefix, e.g. "390n").
  state.counters["per_task"] = benchmark::Counter(
      static_cast<double>(n),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  aclrtDestroyStream(handle);
}
BENCHMARK(BM_StreamEnqueueExecute)->Arg(1000)->Arg(10000)->UseRealTime();

// One task then synchronize: the latency of waking an idle worker and being woken back.
void BM_StreamRoundTrip(benchmark::State& state) {
  SetUpDevice();
  aclrtStream handle = nullptr;
  aclrtCreateStream(&handle);
  vigil::rt::Stream* stream = vigil::rt::StreamFromHandle(handle);
  for (auto _ : state) {
    stream->Enqueue(vigil::rt::TaskType::kKernel, [](std::string*) { return ACL_SUCCESS; });
    stream->Synchronize();
  }
  aclrtDestroyStream(handle);
}
BENCHMARK(BM_StreamRoundTrip)->UseRealTime();

// aclrtMemcpy device to device (checked against the address map), and the same async.
void BM_MemcpyD2D(benchmark::State& state) {
  SetUpDevice();
  const size_t bytes = static_cast<size_t>(state.range(0));
  void* src = nullptr;
  void* dst = nullptr;
  aclrtMalloc(&src, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  aclrtMalloc(&dst, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  std::memset(src, 1, bytes);
  std::memset(dst, 0, bytes);
  for (auto _ : state) {
    aclrtMemcpy(dst, bytes, src, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  aclrtFree(src);
  aclrtFree(dst);
}
BENCHMARK(BM_MemcpyD2D)->Arg(1 << 20);

void BM_MemcpyAsyncD2D(benchmark::State& state) {
  SetUpDevice();
  const size_t bytes = static_cast<size_t>(state.range(0));
  void* src = nullptr;
  void* dst = nullptr;
  aclrtMalloc(&src, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  aclrtMalloc(&dst, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  std::memset(src, 1, bytes);
  std::memset(dst, 0, bytes);
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  for (auto _ : state) {
    for (int i = 0; i < 16; ++i) {
      aclrtMemcpyAsync(dst, bytes, src, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
    }
    aclrtSynchronizeStream(stream);
  }
  state.SetBytesProcessed(state.iterations() * 16 * static_cast<int64_t>(bytes));
  aclrtDestroyStream(stream);
  aclrtFree(src);
  aclrtFree(dst);
}
BENCHMARK(BM_MemcpyAsyncD2D)->Arg(1 << 20)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
