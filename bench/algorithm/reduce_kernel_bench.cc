// Reduction kernel throughput at 1 MiB per operand: dst (op)= src. Bytes/s counts one operand
// (the message size), as busbw figures do; memory traffic is three times that.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "algorithm/reduce_kernel.h"
#include "common/dtype.h"

namespace {

void BM_ReduceInto(benchmark::State& state, HcclDataType type, HcclReduceOp op) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t es = vigil::DataTypeSize(type);
  const size_t count = bytes / es;
  std::vector<char> dst(bytes), src(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    // Small positive values in every type (bf16/fp16 1.0-ish, ints small): no inf/NaN slow paths.
    dst[i] = static_cast<char>(i % 2 == 1 ? 0x3c : 1);
    src[i] = static_cast<char>(i % 2 == 1 ? 0x3c : 2);
  }
  for (auto _ : state) {
    vigil::alg::ReduceInto(dst.data(), src.data(), count, type, op);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Reduce2(benchmark::State& state, HcclDataType type, HcclReduceOp op) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / vigil::DataTypeSize(type);
  std::vector<char> dst(bytes), a(bytes, 1), b(bytes, 2);
  for (auto _ : state) {
    vigil::alg::Reduce2(dst.data(), a.data(), b.data(), count, type, op);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

constexpr int64_t kMiB = 1 << 20;

BENCHMARK_CAPTURE(BM_ReduceInto, fp32_sum, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, bf16_sum, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, int8_max, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, int32_sum, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, fp16_sum, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, fp32_max, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_ReduceInto, fp64_sum, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM)->Arg(kMiB);
BENCHMARK_CAPTURE(BM_Reduce2, fp32_sum, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM)->Arg(kMiB);

}  // namespace

BENCHMARK_MAIN();
